/*
 * SPDX-License-Identifier: GPL-2.0
 *
 * legacy: the 3.10 count + wait_lock mutex (variants/legacy/, kernel/
 * locking/mutex.c after its series). lock->count: 1 unlocked, 0 locked,
 * negative locked with possible waiters; lock->wait_lock guards
 * lock->wait_list; lock->owner is only a hint for spinning; lock->osq
 * queues the spinners. No handoff.
 */

/*
 * The encoding of the count (kernel/locking/mutex.c, include/linux/mutex.h);
 * tests/test_models.py checks it against the C.
 */
#define MUTEX_COUNT_UNLOCKED	1
#define MUTEX_COUNT_LOCKED	0

#define WAKE_UP "wake_up_process: task woken"
#include "harness.pml"

short count = MUTEX_COUNT_UNLOCKED;	/* lock->count */
bit wait_lock;		/* lock->wait_lock */
bit osq;		/* lock->osq */
byte owner_hint;	/* lock->owner: task + 1, or 0 */
byte holder;		/* ghost: the task that holds the lock + 1, or 0 */

/*
 * README: the count is 1 exactly when nobody holds the lock, never above 1,
 * and at least -NTASKS (each failed fast-path decrement goes once below 0
 * before the waiter sets -1).
 */
#define INVARIANT							\
	(count <= MUTEX_COUNT_UNLOCKED && count >= -NTASKS &&		\
	 (count == MUTEX_COUNT_UNLOCKED) == (holder == 0))

inline raw_spin_lock_wait_lock()
{
	atomic {
		MEM;
		STEP("raw_spin_lock(&lock->wait_lock): tries")
	}
	atomic {
		wait_lock == 0 -> wait_lock = 1;
		MEM;
		STEP("raw_spin_lock(&lock->wait_lock): taken")
	}
}

inline raw_spin_unlock_wait_lock()
{
	atomic {
		wait_lock = 0;
		MEM;
		STEP("raw_spin_unlock(&lock->wait_lock)")
	}
}

/* __mutex_trylock(): atomic_read() == 1 && cmpxchg_acquire(1, 0) */
inline trylock()
{
	atomic {
		MEM;
		if
		:: count == MUTEX_COUNT_UNLOCKED ->
			count = MUTEX_COUNT_LOCKED;
			holder = _pid + 1;
			r = 1
		:: else -> r = 0
		fi;
		STEP("__mutex_trylock: cmpxchg_acquire(&lock->count, 1, 0)")
	}
	if
	:: r -> set_owner_hint()
	:: else -> skip
	fi
}

#include "count-word.pml"

inline mutex_lock()
{
	r = 0;
retry:
	/* __mutex_trylock_fast(): atomic_dec_return_acquire() == 0 */
	atomic {
		MEM;
		count--;
		r = (count == MUTEX_COUNT_LOCKED);
		if
		:: r -> holder = _pid + 1
		:: else -> skip
		fi;
		STEP("__mutex_trylock_fast: atomic_dec_return_acquire(&lock->count)")
	}
	if
	:: r -> set_owner_hint(); goto locked
	:: else -> skip
	fi;
	/* __mutex_lock_common() */
	trylock();
	if
	:: r -> goto locked
	:: else -> skip
	fi;
	spin_on_owner();
	if
	:: r -> goto locked
	:: else -> skip
	fi;
	raw_spin_lock_wait_lock();
	atomic {
		MEM;
		wait_list_add(_pid);
		STEP("__mutex_add_waiter: list_add_tail(&waiter->list)")
	}
	do
	:: /* __mutex_trylock_waiter(): read >= 0, then xchg(-1) == 1 */
		atomic {
			MEM;
			r = (count >= 0);
			STEP("__mutex_trylock_waiter: atomic_read(&lock->count)")
		}
		if
		:: r ->
			atomic {
				MEM;
				v = count;
				count = -1;
				r = (v == MUTEX_COUNT_UNLOCKED);
				if
				:: r -> holder = _pid + 1
				:: else -> skip
				fi;
				STEP("__mutex_trylock_waiter: atomic_xchg_acquire(&lock->count, -1)")
			}
		:: else -> skip
		fi;
		if
		:: r -> set_owner_hint(); break
		:: else -> skip
		fi;
		if
		:: sigpending[_pid] -> goto interrupted
		:: else -> skip
		fi;
		tstate[_pid] = BLOCKED;		/* __set_current_state(state) */
		raw_spin_unlock_wait_lock();
		schedule();
		raw_spin_lock_wait_lock()
	od;
	/* __mutex_remove_waiter(); the last waiter sets the count to 0 */
	atomic {
		MEM;
		wait_list_del(_pid);
		first = (wlen == 0);
		STEP("__mutex_remove_waiter: list_del(&waiter->list)")
	}
	if
	:: first ->
		atomic {
			MEM;
			count = MUTEX_COUNT_LOCKED;
			STEP("__mutex_lock_common: atomic_set(&lock->count, 0)")
		}
	:: else -> skip
	fi;
	raw_spin_unlock_wait_lock();
	goto locked;
interrupted:
	/* err: -EINTR; the caller handles the signal and tries again */
	atomic {
		tstate[_pid] = RUNNING;
		STEP("__mutex_lock_common: signal_pending_state(), -EINTR")
	}
	atomic {
		MEM;
		wait_list_del(_pid);
		STEP("__mutex_lock_common: -EINTR, list_del(&waiter->list)")
	}
	raw_spin_unlock_wait_lock();
	sigpending[_pid] = 0;
	goto retry;
locked:
	first = 0
}

inline mutex_unlock()
{
	atomic {
		owner_hint = 0;
		MEM;
		STEP("mutex_clear_owner: lock->owner = NULL")
	}
	/* __mutex_unlock_fast(): atomic_inc_return_release() > 0 */
	atomic {
		MEM;
		count++;
		r = (count > 0);
		if
		:: r -> holder = 0
		:: else -> skip
		fi;
		STEP("__mutex_unlock_fast: atomic_inc_return_release(&lock->count)")
	}
	if
	:: r -> skip
	:: else ->
		/* __mutex_unlock_slowpath() */
		raw_spin_lock_wait_lock();
		atomic {
			MEM;
			count = MUTEX_COUNT_UNLOCKED;
			holder = 0;
			STEP("__mutex_unlock_slowpath: atomic_set_release(&lock->count, 1) (release point)")
		}
		atomic {
			MEM;
			next = FIRST_WAITER;
			STEP("__mutex_unlock_slowpath: list_empty(&lock->wait_list), first entry")
		}
		if
		:: next > 0 -> wake_task(next - 1)
		:: else -> skip
		fi;
		raw_spin_unlock_wait_lock()
	fi;
	next = 0;
	r = 0;
	v = 0
}

#include "tasks.pml"
