// SPDX-License-Identifier: GPL-2.0
/*
 * The unlock probe: mutex_unlock() timed with a waiter asleep in
 * mutex_lock(), the slow path that the lab's release window delays.
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "mutexlab.h"
#include "bench.h"

struct probe_waiter {
	struct mutex *lock;
	struct completion started;
};

static int probe_waiter_fn(void *arg)
{
	struct probe_waiter *pw = arg;

	complete(&pw->started);
	mutex_lock(pw->lock);
	mutex_unlock(pw->lock);
	return 0;
}

/* Whether @task went to sleep (in mutex_lock(), its only blocking call). */
static bool wait_until_sleeping(struct task_struct *task)
{
	int i;

	/* The owner sleeping here makes the waiter stop spinning and sleep. */
	for (i = 0; i < 100; i++) {
		usleep_range(1000, 2000);
		if (READ_ONCE(task->__state) & TASK_UNINTERRUPTIBLE)
			return true;
	}
	return false;
}

/* One round: the time of an unlock that must wake a sleeping waiter. */
static int probe_unlock_once(struct mutex *lock, u64 *unlock_ns, bool *slept)
{
	struct probe_waiter pw = { .lock = lock };
	struct task_struct *task;
	u64 t0;
	int err;

	init_completion(&pw.started);
	mutex_lock(lock);
	err = mutexlab_thread_start(&task, probe_waiter_fn, &pw, -1, "probe");
	if (err) {
		mutex_unlock(lock);
		return err;
	}
	wait_for_completion(&pw.started);
	*slept = wait_until_sleeping(task);
	t0 = ktime_get_ns();
	mutex_unlock(lock);
	*unlock_ns = ktime_get_ns() - t0;
	mutexlab_thread_stop(task);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Passes (returns 1) when every round had a sleeping waiter to wake. */
int run_unlock_probe(int test_nr, unsigned int rounds)
{
	u64 events_before[NR_MUTEX_EVENTS], events_after[NR_MUTEX_EVENTS];
	unsigned int round, slept_rounds = 0;
	bool have_events, slept;
	struct mutex lock;
	u64 *unlock_ns;
	int err = 0;

	unlock_ns = kcalloc(rounds, sizeof(*unlock_ns), GFP_KERNEL);
	if (!unlock_ns) {
		results_printf("not ok %d - unlock_probe # error %d\n", test_nr,
			       -ENOMEM);
		return 0;
	}
	mutex_init(&lock);
	have_events = snapshot_events(events_before);
	for (round = 0; round < rounds && !err; round++) {
		err = probe_unlock_once(&lock, &unlock_ns[round], &slept);
		slept_rounds += slept;
	}
	if (have_events)
		have_events = snapshot_events(events_after);
	sort(unlock_ns, round, sizeof(*unlock_ns), cmp_u64, NULL);
	results_record("unlock_probe");
	results_printf("\"rounds\":%u,\"waiter_slept\":%u,\"unlock_ns_min\":%llu,\"unlock_ns_median\":%llu,\"unlock_ns_max\":%llu,",
		       round, slept_rounds, round ? unlock_ns[0] : 0,
		       round ? unlock_ns[round / 2] : 0,
		       round ? unlock_ns[round - 1] : 0);
	report_event_deltas(have_events, events_before, events_after);
	results_printf("}\n");
	kfree(unlock_ns);
	if (err) {
		results_printf("not ok %d - unlock_probe # error %d\n", test_nr, err);
		return 0;
	}
	results_printf("%sok %d - unlock_probe\n",
		       slept_rounds == round ? "" : "not ", test_nr);
	return slept_rounds == round;
}
