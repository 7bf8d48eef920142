/*
 * SPDX-License-Identifier: GPL-2.0
 *
 * The processes, included by a design's model after its mutex_lock(),
 * mutex_unlock() and INVARIANT: NTASKS tasks that each take and release the
 * mutex ROUNDS times (the article's pattern: lock, drop a reference, unlock;
 * the last one to hold it frees it), the environment that may send a
 * signal, the invariant monitor and the progress claim.
 */

active [NTASKS] proctype task()
{
	/* Locals of the designs' inlines: r result, v a word read, next a
	 * task to wake + 1, first "is the first waiter", i_ list index. */
	byte r, next, first, i_;
	short v;
	byte round;

	for (round : 1 .. ROUNDS) {
		mutex_lock();
		lock_returned();
		unlock_called();
		mutex_unlock()
	}
	atomic {
		finished++;
		STEP("finished")
	}
}

/*
 * A signal to any task at any moment (mutex_lock_interruptible()): it wakes
 * the task if it sleeps; a waiter that sees it gives up with -EINTR and its
 * caller tries again.
 */
active proctype environment()
{
	byte t;

end_env:
	if
	:: SIGNALS > 0 ->
		select(t : 0 .. NTASKS - 1);
		atomic {
			sigpending[t] = 1;
			if
			:: tstate[t] == BLOCKED -> tstate[t] = RUNNING
			:: else -> skip
			fi;
			printf("MLAB %d signal sent to task %d\n", _pid, t)
		}
	:: skip
	fi
}

#ifdef PROP_INVARIANT
/* The lock word is never in a state the design's README rules out. */
active proctype monitor()
{
end_monitor:
	atomic {
		!(INVARIANT) -> assert(INVARIANT)
	}
}
#endif

#ifdef PROP_PROGRESS
/* Under weak fairness every task finishes its rounds: no waiter is left
 * sleeping or spinning for ever. */
ltl progress { <> (finished == NTASKS) }
#endif
