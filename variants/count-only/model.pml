/*
 * SPDX-License-Identifier: GPL-2.0
 *
 * count-only: legacy with the count guarding everything (variants/
 * count-only/, kernel/locking/mutex.c after its series). lock->count: bit 0
 * MUTEX_LOCKED, bit 1 MUTEX_WAIT_LOCK (the wait list guard, a bit
 * spinlock), above them the number of waiters in MUTEX_ONE_WAITER units;
 * lock->owner is a hint for spinning; lock->osq queues the spinners. No
 * handoff. Unlock with waiters takes the guard while it owns the lock and
 * releases lock and guard with one atomic operation.
 */

/*
 * The encoding of kernel/locking/mutex.c, in decimal (Promela has no hex);
 * tests/test_models.py checks it against the C.
 */
#define MUTEX_LOCKED		1
#define MUTEX_WAIT_LOCK		2
#define MUTEX_ONE_WAITER	4

#include "harness.pml"

short count;		/* lock->count */
bit osq;		/* lock->osq */
byte owner_hint;	/* lock->owner: task + 1, or 0 */
byte holder;		/* ghost: the task that holds the lock + 1, or 0 */
byte guard_holder;	/* ghost: the task holding the guard + 1, or 0 */

/*
 * README: LOCKED exactly while a task holds the lock; WAIT_LOCK exactly
 * while a task holds the guard; with the guard free, the waiter count is
 * the length of the wait list.
 */
#define INVARIANT							\
	(count >= 0 &&							\
	 ((count & MUTEX_LOCKED) != 0) == (holder != 0) &&		\
	 ((count & MUTEX_WAIT_LOCK) != 0) == (guard_holder != 0) &&	\
	 ((count & MUTEX_WAIT_LOCK) ||					\
	  count / MUTEX_ONE_WAITER == wlen))

/* mutex_lock_wait_list(): read, then cmpxchg in the guard when it is free */
inline mutex_lock_wait_list()
{
	atomic {
		MEM;
		STEP("mutex_lock_wait_list: atomic_read(&lock->count)")
	}
	atomic {
		!(count & MUTEX_WAIT_LOCK) ->
		count = count | MUTEX_WAIT_LOCK;
		guard_holder = _pid + 1;
		MEM;
		STEP("mutex_lock_wait_list: cmpxchg_acquire(&lock->count, | WAIT_LOCK)")
	}
}

inline mutex_unlock_wait_list()
{
	atomic {
		count = count & ~MUTEX_WAIT_LOCK;
		guard_holder = 0;
		MEM;
		STEP("mutex_unlock_wait_list: fetch_andnot_release(WAIT_LOCK)")
	}
}

/* __mutex_trylock(): cmpxchg_acquire(count, count | LOCKED) while unlocked */
inline trylock()
{
	atomic {
		MEM;
		if
		:: !(count & MUTEX_LOCKED) ->
			count = count | MUTEX_LOCKED;
			holder = _pid + 1;
			r = 1
		:: else -> r = 0
		fi;
		STEP("__mutex_trylock: cmpxchg_acquire(&lock->count, | LOCKED)")
	}
	if
	:: r -> set_owner_hint()
	:: else -> skip
	fi
}

#include "count-word.pml"

inline remove_waiter()
{
	atomic {
		MEM;
		wait_list_del(_pid);
		STEP("__mutex_remove_waiter: list_del(&waiter->list)")
	}
	atomic {
		MEM;
		count = count - MUTEX_ONE_WAITER;
		STEP("__mutex_remove_waiter: atomic_sub(MUTEX_ONE_WAITER, &lock->count)")
	}
}

inline mutex_lock()
{
	r = 0;
retry:
	/* __mutex_trylock_fast(): cmpxchg_acquire(count, 0, LOCKED) */
	atomic {
		MEM;
		if
		:: count == 0 ->
			count = MUTEX_LOCKED;
			holder = _pid + 1;
			r = 1
		:: else -> r = 0
		fi;
		STEP("__mutex_trylock_fast: cmpxchg_acquire(&lock->count, 0, LOCKED)")
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
	mutex_lock_wait_list();
	/* __mutex_add_waiter(): list_add_tail(), then count the waiter */
	atomic {
		MEM;
		wait_list_add(_pid);
		STEP("__mutex_add_waiter: list_add_tail(&waiter->list)")
	}
	atomic {
		MEM;
		count = count + MUTEX_ONE_WAITER;
		STEP("__mutex_add_waiter: atomic_add(MUTEX_ONE_WAITER, &lock->count)")
	}
	do
	:: trylock();
		if
		:: r -> break
		:: else -> skip
		fi;
		if
		:: sigpending[_pid] -> goto interrupted
		:: else -> skip
		fi;
		tstate[_pid] = BLOCKED;		/* __set_current_state(state) */
		mutex_unlock_wait_list();
		schedule();
		mutex_lock_wait_list()
	od;
	remove_waiter();
	mutex_unlock_wait_list();
	goto locked;
interrupted:
	/* err: -EINTR; the caller handles the signal and tries again */
	atomic {
		tstate[_pid] = RUNNING;
		STEP("__mutex_lock_common: signal_pending_state(), -EINTR")
	}
	remove_waiter();
	mutex_unlock_wait_list();
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
	/* __mutex_unlock_fast(): cmpxchg_release(count, LOCKED, 0) */
	atomic {
		MEM;
		if
		:: count == MUTEX_LOCKED -> count = 0; holder = 0; r = 1
		:: else -> r = 0
		fi;
		STEP("__mutex_unlock_fast: cmpxchg_release(&lock->count, LOCKED, 0)")
	}
	if
	:: r -> skip
	:: else ->
		/* __mutex_unlock_slowpath(); mutex_clear_owner() again */
		atomic {
			owner_hint = 0;
			MEM;
			STEP("__mutex_unlock_slowpath: mutex_clear_owner()")
		}
		/* no waiters counted: one cmpxchg that clears LOCKED */
		atomic {
			MEM;
			v = count;
			if
			:: v < MUTEX_ONE_WAITER ->
				count = v & ~MUTEX_LOCKED;
				holder = 0;
				r = 1
			:: else -> r = 0
			fi;
			STEP("__mutex_unlock_slowpath: cmpxchg_release(&lock->count, & ~LOCKED) if no waiters (release point)")
		}
		if
		:: r -> skip
		:: else ->
			mutex_lock_wait_list();
			atomic {
				MEM;
				next = FIRST_WAITER;
				STEP("__mutex_unlock_slowpath: first waiter into wake_q")
			}
			atomic {
				MEM;
				count = count & ~(MUTEX_LOCKED | MUTEX_WAIT_LOCK);
				holder = 0;
				guard_holder = 0;
				STEP("__mutex_unlock_slowpath: fetch_andnot_release(LOCKED | WAIT_LOCK) (release point)")
			}
			if
			:: next > 0 -> wake_task(next - 1)
			:: else -> skip
			fi
		fi
	fi;
	next = 0;
	r = 0;
	v = 0
}

#include "tasks.pml"
