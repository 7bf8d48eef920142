// SPDX-License-Identifier: GPL-2.0
/*
 * The free-safety checks:
 *
 * free_article: the pattern of the LWN article. Objects embed a mutex and a
 *	reference count; every thread takes the mutex once per object, drops
 *	its reference and, if it was the last, frees the object right after
 *	unlocking.
 *
 * free_amdgpu: the pattern of amdgpu commit e28402216371. A holds the mutex
 *	and kicks B; B locks, unlocks and frees; A unlocks.
 *
 * free_control: free_article with a spinlock in place of the mutex (and the
 *	first owner spinning rather than sleeping). A spinlock's unlock is one
 *	store, its last access, so any report here is the harness's own fault:
 *	the negative control of the free-safety checks.
 *
 * A free-safety check cannot see its own failure: the detector is KASAN,
 * whose report the host reads on the console (panic_on_warn makes it end the
 * run). What the module reports is that the pattern ran, and how often
 * waiters slept, without which no design takes the unlock slow path.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/mutex.h>
#include <linux/prandom.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

#include "mutexlab.h"
#include "checks.h"

/* What a free-safety round must hand out without touching the object. */
#define ROUND_TIMEOUT	(10 * HZ)

/* The object the article's threads free: a mutex and what it guards. */
struct shared_obj {
	struct mutex lock;
	spinlock_t spin;	/* free_control's lock */
	int refs;
	bool held_once;
};

/*
 * One round at a time: the coordinator publishes an object and bumps round;
 * the threads take it from here and never touch it after they are done.
 */
struct free_run {
	struct shared_obj *obj;
	unsigned int round;
	bool stop;
	wait_queue_head_t round_wait;
	struct completion freed;
	struct completion kick;		/* free_amdgpu: A has the mutex */
	struct completion a_done;	/* free_amdgpu: A has unlocked */
	bool control;			/* free_control: the spinlock */
	const struct check_args *a;
};

struct free_worker {
	struct free_run *run;
	struct task_struct *task;
	unsigned int id;
};

/* Waits for the next round; returns its object, or NULL to stop. */
static struct shared_obj *next_round(struct free_run *run, unsigned int *seen)
{
	wait_event(run->round_wait, READ_ONCE(run->round) != *seen ||
		   READ_ONCE(run->stop));
	if (READ_ONCE(run->stop))
		return NULL;
	/* Pairs with the release in start_round(): the object, then round. */
	*seen = smp_load_acquire(&run->round);
	return READ_ONCE(run->obj);
}

static void start_round(struct free_run *run, struct shared_obj *obj)
{
	WRITE_ONCE(run->obj, obj);
	/* Pairs with the acquire in next_round(): the object, then round. */
	smp_store_release(&run->round, run->round + 1);
	wake_up_all(&run->round_wait);
}

/*
 * The hazard needs three tasks: the first owner, sleeping; a waiter that
 * went to sleep behind it; and a task that takes the lock inside the first
 * owner's release window. That task unlocks with the waiter still queued,
 * so its own unlock takes the slow path and opens a window in which the
 * woken waiter takes the lock, drops the last reference and frees the
 * object. Worker 0 arrives first, worker 1 during the first hold, the
 * others around the first release, some of them inside its window.
 */
static unsigned int arrival_delay_us(const struct check_args *a,
				     unsigned int id)
{
	if (id == 0)
		return 0;
	if (id == 1)
		return get_random_u32() % a->hold_us;
	return a->hold_us + get_random_u32() % (2 * a->window_us + 1);
}

static int article_worker_fn(void *arg)
{
	struct free_worker *w = arg;
	struct free_run *run = w->run;
	const unsigned int hold_us = run->a->hold_us;
	struct shared_obj *obj;
	unsigned int seen = 0;
	bool last;

	while ((obj = next_round(run, &seen))) {
		udelay(arrival_delay_us(run->a, w->id));
		if (run->control)
			spin_lock(&obj->spin);
		else
			mutex_lock(&obj->lock);
		if (!obj->held_once) {
			obj->held_once = true;
			/*
			 * The others queue up behind the first owner; a mutex
			 * owner sleeps, so that they stop spinning and sleep.
			 */
			if (run->control)
				udelay(hold_us);
			else
				usleep_range(hold_us, hold_us + hold_us / 4);
		}
		last = --obj->refs == 0;
		if (run->control)
			spin_unlock(&obj->spin);
		else
			mutex_unlock(&obj->lock);
		if (last) {
			kfree(obj);
			complete(&run->freed);
		}
	}
	return 0;
}

/* free_amdgpu's A: worker 0. B: worker 1. */
static int amdgpu_worker_fn(void *arg)
{
	struct free_worker *w = arg;
	struct free_run *run = w->run;
	const unsigned int hold_us = run->a->hold_us;
	struct shared_obj *obj;
	unsigned int seen = 0;

	while ((obj = next_round(run, &seen))) {
		if (w->id == 0) {
			mutex_lock(&obj->lock);
			complete(&run->kick);
			/* Odd rounds B spins on a running owner, even ones sleeps. */
			if (seen & 1)
				udelay(hold_us / 4);
			else
				usleep_range(hold_us, hold_us + hold_us / 4);
			mutex_unlock(&obj->lock);
			complete(&run->a_done);
		} else {
			wait_for_completion(&run->kick);
			mutex_lock(&obj->lock);
			mutex_unlock(&obj->lock);
			kfree(obj);
			complete(&run->freed);
		}
	}
	return 0;
}

static int start_free_workers(struct free_run *run, struct free_worker *workers,
			      int nr, int (*fn)(void *))
{
	int i, err;

	for (i = 0; i < nr; i++) {
		workers[i].run = run;
		workers[i].id = i;
		err = mutexlab_thread_start(&workers[i].task, fn, &workers[i], -1,
					    "f%d", i);
		if (err)
			return err;
	}
	return 0;
}

static void stop_free_workers(struct free_run *run, struct free_worker *workers,
			      int nr)
{
	int i;

	WRITE_ONCE(run->stop, true);
	wake_up_all(&run->round_wait);
	for (i = 0; i < nr && workers[i].task; i++)
		mutexlab_thread_stop(workers[i].task);
}

/* Returns 0, or -ETIMEDOUT when a round's object was never freed. */
static int run_free_rounds(struct free_run *run, int nr, bool amdgpu,
			   unsigned int *rounds)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(run->a->duration_ms);
	struct shared_obj *obj;

	for (*rounds = 0; *rounds < run->a->rounds; (*rounds)++) {
		if (time_after(jiffies, deadline))
			break;
		obj = kzalloc(sizeof(*obj), GFP_KERNEL);
		if (!obj)
			return -ENOMEM;
		mutex_init(&obj->lock);
		spin_lock_init(&obj->spin);
		obj->refs = nr;
		reinit_completion(&run->freed);
		reinit_completion(&run->kick);
		reinit_completion(&run->a_done);
		start_round(run, obj);
		/* From here on the object belongs to the threads. */
		if (!wait_for_completion_timeout(&run->freed, ROUND_TIMEOUT))
			return -ETIMEDOUT;
		if (amdgpu &&
		    !wait_for_completion_timeout(&run->a_done, ROUND_TIMEOUT))
			return -ETIMEDOUT;
	}
	return 0;
}

static int run_free_check(const struct check_args *a, bool amdgpu,
			  bool control)
{
	int nr = amdgpu ? 2 : a->nr_threads;
	u64 events_before[NR_MUTEX_EVENTS], events_after[NR_MUTEX_EVENTS];
	struct free_worker *workers;
	struct free_run *run;
	unsigned int rounds = 0;
	bool have_events;
	int err;

	run = kzalloc(sizeof(*run), GFP_KERNEL);
	workers = kcalloc(nr, sizeof(*workers), GFP_KERNEL);
	if (!run || !workers) {
		err = -ENOMEM;
		goto out;
	}
	run->control = control;
	run->a = a;
	init_waitqueue_head(&run->round_wait);
	init_completion(&run->freed);
	init_completion(&run->kick);
	init_completion(&run->a_done);
	have_events = snapshot_events(events_before);
	err = start_free_workers(run, workers, nr,
				 amdgpu ? amdgpu_worker_fn : article_worker_fn);
	if (!err)
		err = run_free_rounds(run, nr, amdgpu, &rounds);
	/* Threads stuck on a mutex would hang here: hung_task reports them. */
	if (err != -ETIMEDOUT)
		stop_free_workers(run, workers, nr);
	if (have_events)
		have_events = snapshot_events(events_after);
	results_record("check");
	results_printf("\"check\":\"%s\",\"threads\":%d,\"rounds\":%u,\"hold_us\":%u,",
		       a->name, nr, rounds, a->hold_us);
	report_event_deltas(have_events, events_before, events_after);
	results_printf("}\n");
	pr_info("%s: %u objects freed\n", a->name, rounds);
out:
	if (err != -ETIMEDOUT) {
		kfree(workers);
		kfree(run);
	}
	results_ktap(1, !err && rounds, a->name, "rounds",
		     err ? "error" : "no round ran");
	if (err)
		results_printf("# error %d\n", err);
	return !err && rounds;
}

int run_free_article(const struct check_args *a)
{
	return run_free_check(a, false, false);
}

int run_free_amdgpu(const struct check_args *a)
{
	return run_free_check(a, true, false);
}

int run_free_control(const struct check_args *a)
{
	return run_free_check(a, false, true);
}
