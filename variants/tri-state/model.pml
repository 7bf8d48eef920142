/*
 * SPDX-License-Identifier: GPL-2.0
 *
 * tri-state: owner-field with wait_lock folded into the owner word as the
 * bit spinlock MUTEX_FLAG_WAIT_LOCK (variants/tri-state/, kernel/locking/
 * mutex.c after its series). Lock word: lock->owner = task | flags | guard;
 * the guard protects the wait list; lock->osq queues the spinners. Unlock
 * with waiters takes the guard while it owns the lock and releases lock and
 * guard with one cmpxchg. A task is encoded as TASK(t), a multiple of
 * MUTEX_FLAGS + 1, as a task_struct pointer is.
 */

/*
 * The encoding of kernel/locking/mutex.c, in decimal (Promela has no hex);
 * tests/test_models.py checks it against the C.
 */
#define MUTEX_FLAG_WAITERS	1
#define MUTEX_FLAG_HANDOFF	2
#define MUTEX_FLAG_PICKUP	4
#define MUTEX_FLAG_WAIT_LOCK	8
#define MUTEX_FLAGS		15

#include "harness.pml"

byte owner;		/* lock->owner, the guard included */
bit osq;		/* lock->osq */
byte guard_holder;	/* ghost: the task holding the guard + 1, or 0 */

/*
 * README: PICKUP only with a task in the word and no HANDOFF; HANDOFF only
 * while a task owns the lock; the guard bit is set exactly while a task
 * holds the guard; with the guard free, WAITERS is set exactly when the
 * wait list is not empty.
 */
#define INVARIANT							\
	((!(owner & MUTEX_FLAG_PICKUP) ||				\
	  (OWNER_TASK(owner) != 0 && !(owner & MUTEX_FLAG_HANDOFF))) &&	\
	 (!(owner & MUTEX_FLAG_HANDOFF) || OWNER_TASK(owner) != 0) &&	\
	 (((owner & MUTEX_FLAG_WAIT_LOCK) != 0) == (guard_holder != 0)) &&	\
	 ((owner & MUTEX_FLAG_WAIT_LOCK) ||				\
	  ((owner & MUTEX_FLAG_WAITERS) != 0) == (wlen > 0)))

/* mutex_lock_wait_list(): read, then cmpxchg in the guard when it is free */
inline wait_list_lock()
{
	atomic {
		MEM;
		STEP("mutex_lock_wait_list: atomic_long_read(&lock->owner)")
	}
	atomic {
		!(owner & MUTEX_FLAG_WAIT_LOCK) ->
		owner = owner | MUTEX_FLAG_WAIT_LOCK;
		guard_holder = _pid + 1;
		MEM;
		STEP("mutex_lock_wait_list: cmpxchg_acquire(&lock->owner, | WAIT_LOCK)")
	}
}

/* mutex_unlock_wait_list() */
inline wait_list_unlock()
{
	atomic {
		owner = owner & ~MUTEX_FLAG_WAIT_LOCK;
		guard_holder = 0;
		MEM;
		STEP("mutex_unlock_wait_list: fetch_andnot_release(WAIT_LOCK)")
	}
}

#define MUTEX_FLAGS_CLEARED_WHEN_EMPTY	(MUTEX_FLAGS & ~MUTEX_FLAG_WAIT_LOCK)
#define CLEAR_WHEN_EMPTY	"__mutex_remove_waiter: __mutex_clear_flag(MUTEX_FLAGS & ~WAIT_LOCK)"
#include "owner-word.pml"

inline mutex_unlock()
{
	atomic {
		MEM;
		if
		:: owner == TASK(_pid) -> owner = 0; r = 1
		:: else -> r = 0
		fi;
		STEP("__mutex_unlock_fast: cmpxchg_release(&lock->owner, curr, 0)")
	}
	if
	:: r -> skip
	:: else ->
		/*
		 * __mutex_unlock_slowpath(): no WAITERS, no HANDOFF: one
		 * cmpxchg that keeps the flags (a queuing waiter's guard).
		 */
		atomic {
			MEM;
			v = owner;
			if
			:: v & (MUTEX_FLAG_WAITERS | MUTEX_FLAG_HANDOFF) -> r = 0
			:: else -> owner = OWNER_FLAGS(v); r = 1
			fi;
			STEP("__mutex_unlock_slowpath: cmpxchg_release(&lock->owner, flags) if no waiters (release point)")
		}
		if
		:: r -> skip
		:: else ->
			wait_list_lock();
			atomic {
				MEM;
				next = FIRST_WAITER;
				STEP("__mutex_unlock_slowpath: first waiter into wake_q")
			}
			/* one cmpxchg: task 0 (or next | PICKUP), guard and
			 * HANDOFF cleared, WAITERS kept */
			atomic {
				MEM;
				v = owner;
				owner = (v & MUTEX_FLAG_WAITERS) |
					((v & MUTEX_FLAG_HANDOFF) && next > 0 ->
					 TASK(next - 1) | MUTEX_FLAG_PICKUP : 0);
				guard_holder = 0;
				STEP("__mutex_unlock_slowpath: cmpxchg_release(&lock->owner, new) (release point)")
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
