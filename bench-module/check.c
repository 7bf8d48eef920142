// SPDX-License-Identifier: GPL-2.0
/*
 * Correctness checks, one per boot, chosen with check=NAME:
 *
 * exclusion: threads update shared state under one mutex with invariants
 *	that break if two tasks hold it at once (an owner word checked on entry
 *	and exit, a plain counter that loses increments), taking it every way
 *	the API offers: mutex_lock(), _nested(), _io(), _interruptible() and
 *	_killable() (a signaller thread interrupts their waits), mutex_trylock()
 *	and atomic_dec_and_mutex_lock().
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
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/prandom.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/wait.h>

#include "mutexlab.h"

static unsigned int check_ms = 3000;
module_param(check_ms, uint, 0444);
MODULE_PARM_DESC(check_ms, "Longest run of a check, ms");

static unsigned int check_threads;
module_param(check_threads, uint, 0444);
MODULE_PARM_DESC(check_threads, "Threads of a check (default: 2*online CPUs + 2)");

static unsigned int check_rounds = 10000;
module_param(check_rounds, uint, 0444);
MODULE_PARM_DESC(check_rounds, "Objects freed by a free-safety check");

static unsigned int hold_us = 250;
module_param(hold_us, uint, 0444);
MODULE_PARM_DESC(hold_us, "Time the first owner of an object sleeps holding it, us");

static const char *check_name;
static unsigned int nr_threads;

/* What a free-safety round must hand out without touching the object. */
#define ROUND_TIMEOUT	(10 * HZ)

/* ---- exclusion ---- */

enum lock_way {
	WAY_LOCK, WAY_NESTED, WAY_IO, WAY_INTERRUPTIBLE, WAY_KILLABLE,
	WAY_TRYLOCK, WAY_DEC_AND_LOCK, NR_WAYS,
};

static const char * const way_names[NR_WAYS] = {
	"lock", "nested", "io", "interruptible", "killable", "trylock",
	"dec_and_lock",
};

/* atomic_dec_and_mutex_lock() takes the mutex on the last of these. */
#define DEC_REFS	4
/* One critical section in this many sleeps, so that waiters sleep too. */
#define SLEEP_EVERY	16

struct excl_state {
	struct mutex lock;
	struct task_struct *owner;
	unsigned long entries;
	atomic_t dec_refs;
	/* Another owner seen on entry, on exit, or a count not yet at zero. */
	atomic_t seen_on_entry, seen_on_exit, dec_not_zero;
	bool stop;
};

/* Per way of locking: took the mutex, was interrupted, declined. */
struct way_counts {
	u64 taken[NR_WAYS];
	u64 interrupted[NR_WAYS];
	u64 not_taken[NR_WAYS];
};

struct excl_worker {
	struct excl_state *s;
	struct task_struct *task;
	struct way_counts n;
} ____cacheline_aligned_in_smp;

/* 0 with the mutex held, -EINTR, or -EBUSY when the way declined. */
static int excl_take(struct excl_state *s, enum lock_way way)
{
	switch (way) {
	case WAY_LOCK:
		mutex_lock(&s->lock);
		return 0;
	case WAY_NESTED:
		mutex_lock_nested(&s->lock, SINGLE_DEPTH_NESTING);
		return 0;
	case WAY_IO:
		mutex_lock_io(&s->lock);
		return 0;
	case WAY_INTERRUPTIBLE:
		return mutex_lock_interruptible(&s->lock);
	case WAY_KILLABLE:
		return mutex_lock_killable(&s->lock);
	case WAY_TRYLOCK:
		return mutex_trylock(&s->lock) ? 0 : -EBUSY;
	case WAY_DEC_AND_LOCK:
		return atomic_dec_and_mutex_lock(&s->dec_refs, &s->lock) ?
			0 : -EBUSY;
	default:
		return -EINVAL;
	}
}

static void excl_critical_section(struct excl_state *s, enum lock_way way,
				  bool sleep)
{
	unsigned long entries;

	if (READ_ONCE(s->owner))
		atomic_inc(&s->seen_on_entry);
	WRITE_ONCE(s->owner, current);
	/*
	 * Taken on the count's last decrement. Others keep decrementing it
	 * (to below zero: they never take the mutex then) until the owner
	 * resets it, so zero or less is the invariant, not zero.
	 */
	if (way == WAY_DEC_AND_LOCK && atomic_read(&s->dec_refs) > 0)
		atomic_inc(&s->dec_not_zero);
	/* A plain read-modify-write across a delay: overlaps lose counts. */
	entries = READ_ONCE(s->entries);
	if (sleep)
		usleep_range(20, 50);
	else
		udelay(1);
	WRITE_ONCE(s->entries, entries + 1);
	if (READ_ONCE(s->owner) != current)
		atomic_inc(&s->seen_on_exit);
	WRITE_ONCE(s->owner, NULL);
	if (way == WAY_DEC_AND_LOCK)
		atomic_set(&s->dec_refs, DEC_REFS);
}

static int excl_worker_fn(void *arg)
{
	struct excl_worker *w = arg;
	struct excl_state *s = w->s;
	unsigned int n = 0;
	enum lock_way way;
	int ret;

	/* Without these a kthread ignores the signaller. */
	allow_signal(SIGUSR1);
	allow_signal(SIGKILL);
	while (!READ_ONCE(s->stop)) {
		way = n % NR_WAYS;
		ret = excl_take(s, way);
		if (!ret) {
			excl_critical_section(s, way, n % SLEEP_EVERY == 0);
			mutex_unlock(&s->lock);
			w->n.taken[way]++;
		} else if (ret == -EINTR) {
			w->n.interrupted[way]++;
		} else {
			w->n.not_taken[way]++;
		}
		if (signal_pending(current))
			flush_signals(current);
		n++;
		cond_resched();
	}
	return 0;
}

/* SIGUSR1 interrupts _interruptible waits, SIGKILL _killable ones too. */
static int excl_signaller_fn(void *arg)
{
	struct excl_worker *workers = arg;
	unsigned int n = 0;

	while (!kthread_should_stop()) {
		send_sig(n & 1 ? SIGKILL : SIGUSR1,
			 workers[(n / 2) % nr_threads].task, 1);
		n++;
		usleep_range(100, 200);
	}
	return 0;
}

static void sum_ways(const struct excl_worker *workers, struct way_counts *sum)
{
	int i, way;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < nr_threads; i++) {
		for (way = 0; way < NR_WAYS; way++) {
			sum->taken[way] += workers[i].n.taken[way];
			sum->interrupted[way] += workers[i].n.interrupted[way];
			sum->not_taken[way] += workers[i].n.not_taken[way];
		}
	}
}

static void report_ways(const char *key, const u64 *per_way)
{
	int way;

	results_printf("\"%s\":{", key);
	for (way = 0; way < NR_WAYS; way++)
		results_printf("%s\"%s\":%llu", way ? "," : "", way_names[way],
			       per_way[way]);
	results_printf("}");
}

void check_ktap_result(int nr, bool ok, const char *name, const char *why)
{
	results_printf("%sok %d - %s/%s%s%s\n", ok ? "" : "not ", nr,
		       check_name, name, ok ? "" : " # ", ok ? "" : why);
}

static int run_exclusion(void)
{
	u64 events_before[NR_MUTEX_EVENTS], events_after[NR_MUTEX_EVENTS];
	struct excl_worker *workers;
	struct task_struct *signaller;
	struct way_counts sum;
	struct excl_state *s;
	u64 total = 0, ways_taken = 0;
	bool exclusive, interrupted, have_events;
	int i, violations, passed = 0, err = 0;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	workers = kcalloc(nr_threads, sizeof(*workers), GFP_KERNEL);
	if (!s || !workers) {
		err = -ENOMEM;
		goto out;
	}
	mutex_init(&s->lock);
	atomic_set(&s->dec_refs, DEC_REFS);
	have_events = snapshot_events(events_before);
	for (i = 0; i < nr_threads; i++) {
		workers[i].s = s;
		workers[i].task = mutexlab_thread_create(excl_worker_fn,
							 &workers[i], -1,
							 "x%d", i);
		if (IS_ERR(workers[i].task)) {
			err = PTR_ERR(workers[i].task);
			workers[i].task = NULL;
			break;
		}
		wake_up_process(workers[i].task);
	}
	signaller = err ? NULL : mutexlab_thread_create(excl_signaller_fn,
							workers, -1, "sig");
	if (IS_ERR(signaller)) {
		err = PTR_ERR(signaller);
		signaller = NULL;
	}
	if (signaller)
		wake_up_process(signaller);
	if (!err)
		msleep(check_ms);
	if (signaller)
		mutexlab_thread_stop(signaller);
	WRITE_ONCE(s->stop, true);
	for (i = 0; i < nr_threads && workers[i].task; i++)
		mutexlab_thread_stop(workers[i].task);
	if (err)
		goto out;
	if (have_events)
		have_events = snapshot_events(events_after);

	sum_ways(workers, &sum);
	for (i = 0; i < NR_WAYS; i++) {
		total += sum.taken[i];
		ways_taken += sum.taken[i] > 0;
	}
	violations = atomic_read(&s->seen_on_entry) +
		     atomic_read(&s->seen_on_exit) + atomic_read(&s->dec_not_zero);
	interrupted = sum.interrupted[WAY_INTERRUPTIBLE] &&
		      sum.interrupted[WAY_KILLABLE];
	results_printf("{\"type\":\"check\",\"check\":\"exclusion\",\"threads\":%u,\"duration_ms\":%u,\"violations\":%d,\"seen_on_entry\":%d,\"seen_on_exit\":%d,\"dec_not_zero\":%d,\"entries\":%lu,\"acquisitions\":%llu,",
		       nr_threads, check_ms, violations,
		       atomic_read(&s->seen_on_entry),
		       atomic_read(&s->seen_on_exit),
		       atomic_read(&s->dec_not_zero), s->entries, total);
	report_ways("taken", sum.taken);
	results_printf(",");
	report_ways("interrupted", sum.interrupted);
	results_printf(",");
	report_ways("not_taken", sum.not_taken);
	results_printf(",");
	report_event_deltas(have_events, events_before, events_after);
	results_printf("}\n");

	/* Lost increments are overlaps that the owner word did not catch. */
	exclusive = !violations && s->entries == total;
	passed += exclusive;
	check_ktap_result(1, exclusive, "mutual_exclusion", "two owners at once");
	passed += ways_taken == NR_WAYS;
	check_ktap_result(2, ways_taken == NR_WAYS, "every_way_taken",
		    "some way of locking never took the mutex");
	passed += interrupted;
	check_ktap_result(3, interrupted, "interrupted_waits",
		    "no _interruptible or no _killable wait was interrupted");
	pr_info("exclusion: %llu acquisitions, %d violations\n", total,
		violations);
out:
	kfree(workers);
	kfree(s);
	if (err) {
		results_printf("not ok 1 - exclusion # error %d\n", err);
		return 0;
	}
	return passed;
}

/* ---- free-safety ---- */

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

/* The release window as /init read it, us. */
static unsigned int window_us;

/*
 * The hazard needs three tasks: the first owner, sleeping; a waiter that
 * went to sleep behind it; and a task that takes the lock inside the first
 * owner's release window. That task unlocks with the waiter still queued,
 * so its own unlock takes the slow path and opens a window in which the
 * woken waiter takes the lock, drops the last reference and frees the
 * object. Worker 0 arrives first, worker 1 during the first hold, the
 * others around the first release, some of them inside its window.
 */
static unsigned int arrival_delay_us(unsigned int id)
{
	if (id == 0)
		return 0;
	if (id == 1)
		return get_random_u32() % hold_us;
	return hold_us + get_random_u32() % (2 * window_us + 1);
}

static int article_worker_fn(void *arg)
{
	struct free_worker *w = arg;
	struct free_run *run = w->run;
	struct shared_obj *obj;
	unsigned int seen = 0;
	bool last;

	while ((obj = next_round(run, &seen))) {
		udelay(arrival_delay_us(w->id));
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
	int i;

	for (i = 0; i < nr; i++) {
		workers[i].run = run;
		workers[i].id = i;
		workers[i].task = mutexlab_thread_create(fn, &workers[i], -1,
							 "f%d", i);
		if (IS_ERR(workers[i].task)) {
			int err = PTR_ERR(workers[i].task);

			workers[i].task = NULL;
			return err;
		}
		wake_up_process(workers[i].task);
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
	unsigned long deadline = jiffies + msecs_to_jiffies(check_ms);
	struct shared_obj *obj;

	for (*rounds = 0; *rounds < check_rounds; (*rounds)++) {
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

static int run_free_check(bool amdgpu, bool control)
{
	int nr = amdgpu ? 2 : nr_threads;
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
	results_printf("{\"type\":\"check\",\"check\":\"%s\",\"threads\":%d,\"rounds\":%u,\"hold_us\":%u,",
		       check_name, nr, rounds, hold_us);
	report_event_deltas(have_events, events_before, events_after);
	results_printf("}\n");
	pr_info("%s: %u objects freed\n", check_name, rounds);
out:
	if (err != -ETIMEDOUT) {
		kfree(workers);
		kfree(run);
	}
	check_ktap_result(1, !err && rounds, "rounds",
		    err ? "error" : "no round ran");
	if (err)
		results_printf("# error %d\n", err);
	return !err && rounds;
}

struct mutex_check {
	const char *name;
	int nr_tests;
	int (*run)(void);
};

static int run_free_article(void)
{
	return run_free_check(false, false);
}

static int run_free_amdgpu(void)
{
	return run_free_check(true, false);
}

static int run_free_control(void)
{
	return run_free_check(false, true);
}

static int run_watch(void)
{
	return watch_run(check_ms, nr_threads);
}

/*
 * Chosen by name, like locktorture's ops. The host's lab/catalog.toml lists
 * the same checks in the same order (tests/test_catalog.py).
 */
static const struct mutex_check checks[] = {
	{ "exclusion", 3, run_exclusion },
	{ "free_control", 1, run_free_control },
	{ "free_article", 1, run_free_article },
	{ "free_amdgpu", 1, run_free_amdgpu },
	{ "watch", 4, run_watch },
};

static const struct mutex_check *chosen;

static void echo_check_params(const char *when)
{
	pr_info("%s: check=%s check_ms=%u check_threads=%u check_rounds=%u hold_us=%u release_window_ns=%ld\n",
		when, check_name, check_ms, nr_threads, check_rounds, hold_us,
		mutexlab_release_window_ns);
}

int check_prepare(const char *name)
{
	char known[128];
	size_t i, len;

	for (i = 0; i < ARRAY_SIZE(checks); i++)
		if (!strcmp(name, checks[i].name))
			chosen = &checks[i];
	if (!chosen) {
		for (i = 0, len = 0; i < ARRAY_SIZE(checks); i++)
			len += scnprintf(known + len, sizeof(known) - len, " %s",
					 checks[i].name);
		pr_err("unknown check '%s'; checks:%s\n", name, known);
		return -EINVAL;
	}
	check_name = chosen->name;
	nr_threads = check_threads ?: 2 * num_online_cpus() + 2;
	window_us = max(mutexlab_release_window_ns, 0L) / NSEC_PER_USEC;
	if (nr_threads > 256 || !check_ms || !hold_us || hold_us > 100000) {
		pr_err("check_threads (1..256), check_ms (>0) or hold_us (1..100000) out of range\n");
		return -EINVAL;
	}
	lock_events_get();
	echo_check_params("start");
	return 0;
}

void check_run(void)
{
	int passed;

	results_printf("KTAP version 1\n");
	report_guest_meta();
	results_printf("\"check\":\"%s\",\"params\":{\"check_ms\":%u,\"check_threads\":%u,\"check_rounds\":%u,\"hold_us\":%u}}\n",
		       check_name, check_ms, nr_threads, check_rounds, hold_us);
	results_printf("1..%d\n", chosen->nr_tests);
	passed = chosen->run();
	results_printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
		       passed, chosen->nr_tests - passed);
	results_finish();
	echo_check_params("end");
}

void check_exit(void)
{
	lock_events_put();
}
