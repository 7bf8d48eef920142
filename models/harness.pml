/*
 * SPDX-License-Identifier: GPL-2.0
 *
 * What every design's model shares: the tasks, their scheduler states, the
 * wait list as a FIFO of task numbers, the ghost state the properties are
 * judged on, and the property hooks. A design's model includes this file,
 * defines its lock word(s), mutex_lock(), mutex_unlock() and INVARIANT, and
 * then includes tasks.pml.
 *
 * Settings (spin -D...): NTASKS tasks, each taking the mutex ROUNDS times;
 * SIGNALS signals (0 or 1) that the environment may send to a task at any
 * moment, waking it if it sleeps; one of PROP_EXCLUSION, PROP_FREE,
 * PROP_INVARIANT, PROP_DEADLOCK, PROP_PROGRESS selects the property the run
 * judges, so that a failure is attributed to exactly one property.
 *
 * Granularity: each atomic { } is one atomic operation of the C (a cmpxchg,
 * an xchg, an atomic_or, a plain load or store of a shared word), or a
 * sequence that the C runs with a guard held and that no other task can
 * observe part-way. MEM marks a step that reads or writes the mutex's
 * memory; the printf in each step names the C function it stands for, so a
 * trail replays as a readable interleaving (analysis/model_trail.py).
 */

#ifndef NTASKS
#define NTASKS 2
#endif
#ifndef ROUNDS
#define ROUNDS 1
#endif
#ifndef SIGNALS
#define SIGNALS 1
#endif

/* Task scheduler states: set_current_state() and wake_up_process(). */
#define RUNNING 0
#define BLOCKED 1

byte tstate[NTASKS];
bit sigpending[NTASKS];

/* lock->wait_list: task numbers in FIFO order (all designs queue FIFO). */
byte wl[NTASKS];
byte wlen;

/* Ghost state: never read by the designs, only by the properties. */
byte cs;		/* tasks inside their critical section */
byte acquisitions;	/* mutex_lock() returns so far */
bit freeable;		/* the final owner holds the lock: it may free it */
byte freer;		/* that owner's task number */
byte finished;		/* tasks that finished all their rounds */

/*
 * An access to the mutex's memory. Once the task that takes the mutex for
 * the last time has it, it may free the object that embeds the mutex (the
 * article's refcount pattern: it dropped the last reference); any access by
 * another task from then on is a use-after-free.
 */
#ifdef PROP_FREE
#define MEM	assert(!freeable || freer == _pid)
#else
#define MEM	skip
#endif

/* A step's label for trail replay: task number, then the C it stands for. */
#define STEP(what)	printf("MLAB %d ", _pid); printf(what); printf("\n")

inline wait_list_add(t)
{
	wl[wlen] = t;
	wlen++
}

/* i_ is a local of the task (tasks.pml): inlines cannot own one. */
inline wait_list_del(t)
{
	i_ = 0;
	do
	:: i_ < wlen && wl[i_] != t -> i_++
	:: else -> break
	od;
	assert(i_ < wlen);
	do
	:: i_ + 1 < wlen -> wl[i_] = wl[i_ + 1]; i_++
	:: else -> break
	od;
	wlen--;
	wl[wlen] = 0;
	i_ = 0
}

/* The first waiter's task number + 1, or 0 when the list is empty. */
#define FIRST_WAITER	(wlen > 0 -> wl[0] + 1 : 0)

/*
 * schedule() in an interruptible sleep: returns once woken, or at once when
 * a signal is pending (the scheduler does not put such a task to sleep).
 */
inline schedule()
{
	atomic {
		tstate[_pid] == RUNNING || sigpending[_pid] ->
		tstate[_pid] = RUNNING;
		STEP("schedule_preempt_disabled: running again")
	}
}

/*
 * The wake-up after unlock (wake_up_q(), or legacy's wake_up_process()):
 * touches the task, not the mutex. WAKE_UP names the C function.
 */
#ifndef WAKE_UP
#define WAKE_UP "wake_up_q: task woken"
#endif
inline wake_task(t)
{
	atomic {
		tstate[t] = RUNNING;
		STEP(WAKE_UP)
	}
}

/* mutex_lock() returned: the critical section starts. */
inline lock_returned()
{
	atomic {
#ifdef PROP_EXCLUSION
		assert(cs == 0);
#endif
		cs++;
		acquisitions++;
		if
		:: acquisitions == NTASKS * ROUNDS ->
			freeable = 1;
			freer = _pid
		:: else -> skip
		fi;
		STEP("mutex_lock: returned, critical section")
	}
}

inline unlock_called()
{
	atomic {
		cs--;
		STEP("mutex_unlock: called")
	}
}
