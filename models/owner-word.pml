/*
 * SPDX-License-Identifier: GPL-2.0
 *
 * The lock path of the owner-word designs: owner-field, and tri-state,
 * which extends it (variants/tri-state/extends) and changes only the wait
 * list's guard and the flags cleared when the list empties. Included by
 * their models after they define MUTEX_FLAGS, owner, osq, the inlines
 * wait_list_lock() and wait_list_unlock(), MUTEX_FLAGS_CLEARED_WHEN_EMPTY
 * and CLEAR_WHEN_EMPTY (its step's label). A task is encoded as TASK(t), a
 * multiple of MUTEX_FLAGS + 1, as a task_struct pointer is.
 */

#define TASK(t)		(((t) + 1) * (MUTEX_FLAGS + 1))
#define OWNER_TASK(o)	((o) / (MUTEX_FLAGS + 1) * (MUTEX_FLAGS + 1))
#define OWNER_FLAGS(o)	((o) % (MUTEX_FLAGS + 1))

/*
 * __mutex_trylock_common(lock, handoff): its cmpxchg loop retries only when
 * the word changed under it, so the loop is one atomic step at the read
 * that decides. r = 1 when the caller now owns the lock.
 */
inline trylock_common(handoff)
{
	atomic {
		MEM;
		r = 0;
		v = owner;
		if
		:: OWNER_TASK(v) != 0 && (v & MUTEX_FLAG_PICKUP) ->
			if
			:: OWNER_TASK(v) == TASK(_pid) ->
				owner = v & ~MUTEX_FLAG_PICKUP;
				r = 1
			:: else -> skip
			fi
		:: OWNER_TASK(v) != 0 && !(v & MUTEX_FLAG_PICKUP) && handoff ->
			owner = v | MUTEX_FLAG_HANDOFF
		:: OWNER_TASK(v) != 0 && !(v & MUTEX_FLAG_PICKUP) && !handoff ->
			skip
		:: OWNER_TASK(v) == 0 ->
			owner = TASK(_pid) | OWNER_FLAGS(v);
			r = 1
		fi;
		STEP("__mutex_trylock_common: cmpxchg_acquire(&lock->owner)")
	}
}

/*
 * mutex_optimistic_spin(lock, NULL, NULL): on the OSQ, "spin while the
 * owner runs, then try"; whether the owner runs (or need_resched()) is the
 * scheduler's choice, so giving up is possible at each turn.
 */
inline spin_on_owner()
{
	if
	:: atomic {
		osq == 0 -> osq = 1;
		MEM;
		STEP("mutex_optimistic_spin: osq_lock(&lock->osq)")
	   }
		do
		:: trylock_common(0);
			if
			:: r -> break
			:: else -> skip
			fi;
			if
			:: skip		/* mutex_spin_on_owner(): owner runs */
			:: break	/* owner not on a CPU, or need_resched() */
			fi
		od;
		atomic {
			osq = 0;
			MEM;
			STEP("mutex_optimistic_spin: osq_unlock(&lock->osq)")
		}
	:: STEP("mutex_optimistic_spin: no spinning (mutex_can_spin_on_owner)")
	fi
}

/*
 * mutex_optimistic_spin(lock, NULL, &waiter) of a woken first waiter: no
 * OSQ; it stops when it is no longer the first waiter.
 */
inline waiter_spin()
{
	do
	:: trylock_common(0);
		if
		:: r -> break
		:: else -> skip
		fi;
		atomic {
			MEM;
			first = (wlen > 0 && wl[0] == _pid);
			STEP("mutex_spin_on_owner: __mutex_waiter_is_first")
		}
		if
		:: first -> skip
		:: first -> break
		:: !first -> break
		fi
	od
}

/*
 * __mutex_remove_waiter(): list_del(), then, if the list is empty, clear
 * the flags the design names in MUTEX_FLAGS_CLEARED_WHEN_EMPTY.
 */
inline remove_waiter()
{
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
			owner = owner & ~MUTEX_FLAGS_CLEARED_WHEN_EMPTY;
			STEP(CLEAR_WHEN_EMPTY)
		}
	:: else -> skip
	fi
}

inline mutex_lock()
{
	r = 0;
retry:
	atomic {
		MEM;
		if
		:: owner == 0 -> owner = TASK(_pid); r = 1
		:: else -> r = 0
		fi;
		STEP("__mutex_trylock_fast: cmpxchg_acquire(&lock->owner, 0, curr)")
	}
	if
	:: r -> goto locked
	:: else -> skip
	fi;
	/* __mutex_lock_common() */
	trylock_common(0);
	if
	:: r -> goto locked
	:: else -> skip
	fi;
	spin_on_owner();
	if
	:: r -> goto locked
	:: else -> skip
	fi;
	wait_list_lock();
	trylock_common(0);
	if
	:: r -> goto skip_wait
	:: else -> skip
	fi;
	/* __mutex_add_waiter(): list_add_tail(), then WAITERS if first */
	atomic {
		MEM;
		wait_list_add(_pid);
		first = (wl[0] == _pid);
		STEP("__mutex_add_waiter: list_add_tail(&waiter->list)")
	}
	if
	:: first ->
		atomic {
			MEM;
			owner = owner | MUTEX_FLAG_WAITERS;
			STEP("__mutex_add_waiter: __mutex_set_flag(WAITERS)")
		}
	:: else -> skip
	fi;
	tstate[_pid] = BLOCKED;		/* set_current_state(state) */
	do
	:: trylock_common(0);
		if
		:: r -> goto acquired
		:: else -> skip
		fi;
		if
		:: sigpending[_pid] -> goto interrupted
		:: else -> skip
		fi;
		wait_list_unlock();
		schedule();
		atomic {
			MEM;
			first = (wlen > 0 && wl[0] == _pid);
			STEP("__mutex_lock_common: __mutex_waiter_is_first")
		}
		tstate[_pid] = BLOCKED;
		trylock_common(first);	/* __mutex_trylock_or_handoff() */
		if
		:: r -> break
		:: else -> skip
		fi;
		if
		:: first ->
			waiter_spin();
			if
			:: r -> break
			:: else -> skip
			fi
		:: else -> skip
		fi;
		wait_list_lock()
	od;
	wait_list_lock();
acquired:
	tstate[_pid] = RUNNING;
	remove_waiter();
skip_wait:
	wait_list_unlock();
	goto locked;
interrupted:
	/* err: -EINTR; the caller handles the signal and tries again */
	atomic {
		tstate[_pid] = RUNNING;
		STEP("__mutex_lock_common: signal_pending_state(), -EINTR")
	}
	remove_waiter();
	wait_list_unlock();
	sigpending[_pid] = 0;
	goto retry;
locked:
	first = 0
}

