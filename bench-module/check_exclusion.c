// SPDX-License-Identifier: GPL-2.0
/*
 * The exclusion check: threads update shared state under one mutex with
 * invariants that break if two tasks hold it at once (an owner word checked
 * on entry and exit, a plain counter that loses increments), taking it every
 * way the API offers: mutex_lock(), _nested(), _io(), _interruptible() and
 * _killable() (a signaller thread interrupts their waits), mutex_trylock()
 * and atomic_dec_and_mutex_lock().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "mutexlab.h"
#include "checks.h"

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
	unsigned int nr_workers;
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
	unsigned int nr = workers[0].s->nr_workers, n = 0;

	while (!kthread_should_stop()) {
		send_sig(n & 1 ? SIGKILL : SIGUSR1,
			 workers[(n / 2) % nr].task, 1);
		n++;
		usleep_range(100, 200);
	}
	return 0;
}

static void sum_ways(const struct excl_worker *workers, unsigned int nr,
		     struct way_counts *sum)
{
	int i, way;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < nr; i++) {
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

int run_exclusion(const struct check_args *a)
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
	workers = kcalloc(a->nr_threads, sizeof(*workers), GFP_KERNEL);
	if (!s || !workers) {
		err = -ENOMEM;
		goto out;
	}
	mutex_init(&s->lock);
	s->nr_workers = a->nr_threads;
	atomic_set(&s->dec_refs, DEC_REFS);
	have_events = snapshot_events(events_before);
	for (i = 0; i < a->nr_threads && !err; i++) {
		workers[i].s = s;
		err = mutexlab_thread_start(&workers[i].task, excl_worker_fn,
					    &workers[i], -1, "x%d", i);
	}
	signaller = NULL;
	if (!err)
		err = mutexlab_thread_start(&signaller, excl_signaller_fn,
					    workers, -1, "sig");
	if (!err)
		msleep(a->duration_ms);
	if (signaller)
		mutexlab_thread_stop(signaller);
	WRITE_ONCE(s->stop, true);
	for (i = 0; i < a->nr_threads && workers[i].task; i++)
		mutexlab_thread_stop(workers[i].task);
	if (err)
		goto out;
	if (have_events)
		have_events = snapshot_events(events_after);

	sum_ways(workers, a->nr_threads, &sum);
	for (i = 0; i < NR_WAYS; i++) {
		total += sum.taken[i];
		ways_taken += sum.taken[i] > 0;
	}
	violations = atomic_read(&s->seen_on_entry) +
		     atomic_read(&s->seen_on_exit) + atomic_read(&s->dec_not_zero);
	interrupted = sum.interrupted[WAY_INTERRUPTIBLE] &&
		      sum.interrupted[WAY_KILLABLE];
	results_record("check");
	results_printf("\"check\":\"exclusion\",\"threads\":%u,\"duration_ms\":%u,\"violations\":%d,\"seen_on_entry\":%d,\"seen_on_exit\":%d,\"dec_not_zero\":%d,\"entries\":%lu,\"acquisitions\":%llu,",
		       a->nr_threads, a->duration_ms, violations,
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
	results_ktap(1, exclusive, a->name, "mutual_exclusion",
		     "two owners at once");
	passed += ways_taken == NR_WAYS;
	results_ktap(2, ways_taken == NR_WAYS, a->name, "every_way_taken",
		     "some way of locking never took the mutex");
	passed += interrupted;
	results_ktap(3, interrupted, a->name, "interrupted_waits",
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
