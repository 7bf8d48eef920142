/*
 * SPDX-License-Identifier: GPL-2.0
 *
 * owner-field: the mutex of linux-source-6.1, kernel/locking/mutex.c
 * (variants/owner-field/README.md). Lock word: lock->owner = task | flags;
 * lock->wait_lock guards lock->wait_list; lock->osq queues the spinners.
 * A task is encoded as TASK(t), a multiple of MUTEX_FLAGS + 1, as a
 * task_struct pointer is.
 */

/*
 * The encoding of kernel/locking/mutex.c, in decimal (Promela has no hex);
 * tests/test_models.py checks it against the C.
 */
#define MUTEX_FLAG_WAITERS	1
#define MUTEX_FLAG_HANDOFF	2
#define MUTEX_FLAG_PICKUP	4
#define MUTEX_FLAGS		7

#include "harness.pml"

byte owner;		/* lock->owner */
bit wait_lock;		/* lock->wait_lock */
bit osq;		/* lock->osq */

/*
 * README: PICKUP only with a task in the word and no HANDOFF; HANDOFF only
 * while a task owns the lock; with wait_lock free, WAITERS is set exactly
 * when the wait list is not empty.
 */
#define INVARIANT							\
	((!(owner & MUTEX_FLAG_PICKUP) ||				\
	  (OWNER_TASK(owner) != 0 && !(owner & MUTEX_FLAG_HANDOFF))) &&	\
	 (!(owner & MUTEX_FLAG_HANDOFF) || OWNER_TASK(owner) != 0) &&	\
	 (wait_lock || ((owner & MUTEX_FLAG_WAITERS) != 0) == (wlen > 0)))

/* raw_spin_lock(&lock->wait_lock): one access to try, then the wait */
inline wait_list_lock()
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

/* raw_spin_unlock(&lock->wait_lock) */
inline wait_list_unlock()
{
	atomic {
		wait_lock = 0;
		MEM;
		STEP("raw_spin_unlock(&lock->wait_lock)")
	}
}

#define MUTEX_FLAGS_CLEARED_WHEN_EMPTY	MUTEX_FLAGS
#define CLEAR_WHEN_EMPTY	"__mutex_remove_waiter: __mutex_clear_flag(MUTEX_FLAGS)"
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
		/* __mutex_unlock_slowpath(): release first, unless HANDOFF */
		atomic {
			MEM;
			v = owner;
			if
			:: v & MUTEX_FLAG_HANDOFF -> r = 2
			:: else ->
				owner = OWNER_FLAGS(v);
				r = (v & MUTEX_FLAG_WAITERS -> 3 : 1)
			fi;
			STEP("__mutex_unlock_slowpath: cmpxchg_release(&lock->owner, flags) (release point)")
		}
		if
		:: r >= 2 ->
			wait_list_lock();
			atomic {
				MEM;
				next = FIRST_WAITER;
				STEP("__mutex_unlock_slowpath: list_first_entry(&lock->wait_list)")
			}
			if
			:: r == 2 ->
				/* __mutex_handoff(lock, next) */
				atomic {
					MEM;
					owner = (owner & MUTEX_FLAG_WAITERS) |
						(next > 0 -> TASK(next - 1) | MUTEX_FLAG_PICKUP : 0);
					STEP("__mutex_handoff: cmpxchg_release(&lock->owner, next | PICKUP) (release point)")
				}
			:: else -> skip
			fi;
			wait_list_unlock();
			if
			:: next > 0 -> wake_task(next - 1)
			:: else -> skip
			fi
		:: else -> skip
		fi
	fi;
	next = 0;
	r = 0;
	v = 0
}

#include "tasks.pml"
