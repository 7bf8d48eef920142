// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmark sweep: for each thread count, T kthreads contend on one
 * mutex for a fixed time, each critical section doing plain increments of a
 * shared counter. Every point reports per-thread acquisitions as a JSON line
 * and a KTAP result; the result is "not ok" when the shared counter shows
 * that two threads were inside the critical section at once.
 *
 * Each point also reports the deltas of the kernel's mutex lock events over
 * its measured window, read with lockevent_sum_by_name() where the kernel
 * has the lab's common series (null where it has not), and an unlock probe
 * times mutex_unlock() with a sleeping waiter, the slow path that the
 * release window delays.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "mutexlab.h"

#define MUTEXLAB_MAX_POINTS	64
/* Values of each setting swept besides the thread count. */
#define MUTEXLAB_MAX_VALUES	8

static int threads[MUTEXLAB_MAX_POINTS];
static int nr_thread_points;
module_param_array_named(threads, threads, int, &nr_thread_points, 0444);
MODULE_PARM_DESC(threads, "Thread counts to sweep (default 1..online CPUs, 2*online CPUs)");

static unsigned int duration_ms = 1000;
module_param(duration_ms, uint, 0444);
MODULE_PARM_DESC(duration_ms, "Measured time per point, ms");

static unsigned int warmup_ms = 100;
module_param(warmup_ms, uint, 0444);
MODULE_PARM_DESC(warmup_ms, "Time run before measuring each point, ms");

static unsigned int reps = 5;
module_param(reps, uint, 0444);
MODULE_PARM_DESC(reps, "Repetitions of each point");

/*
 * The settings the contended workload sweeps besides the thread count, every
 * combination in each repetition; the other workloads take the first value
 * of each. Loops, not ns, are their unit, so that every design gets the same
 * work per acquisition; the meta record's loop_ps gives them in time.
 */
static unsigned int cs_loops[MUTEXLAB_MAX_VALUES] = { 16 };
static int nr_cs_loops = 1;
module_param_array(cs_loops, uint, &nr_cs_loops, 0444);
MODULE_PARM_DESC(cs_loops, "Critical sections to sweep: shared-counter increments under the lock");

static unsigned int think_loops[MUTEXLAB_MAX_VALUES];
static int nr_think_loops = 1;
module_param_array(think_loops, uint, &nr_think_loops, 0444);
MODULE_PARM_DESC(think_loops, "Think times to sweep: local increments between acquisitions");

static bool pin[2];
static int nr_pin = 1;
module_param_array(pin, bool, &nr_pin, 0444);
MODULE_PARM_DESC(pin, "Placements to sweep: 1 binds worker i to the (i mod online CPUs)-th online CPU, 0 leaves it to the scheduler");

/*
 * A timestamp costs about 300 ns under TCG here, as much as a whole
 * uncontended lock/unlock: time one acquisition in this many, not all.
 */
static unsigned int latency_every = 256;
module_param(latency_every, uint, 0444);
MODULE_PARM_DESC(latency_every, "Time one mutex_lock() in this many (0: none)");

static unsigned int unlock_probe_rounds = 20;
module_param(unlock_probe_rounds, uint, 0444);
MODULE_PARM_DESC(unlock_probe_rounds, "Timed unlocks with a sleeping waiter (0: no probe)");

/* Test-only: prove that the host notices a crash and a broken lock. */
static bool test_bug;
module_param(test_bug, bool, 0444);
MODULE_PARM_DESC(test_bug, "TEST ONLY: BUG() after the first point");

static bool test_unlocked;
module_param(test_unlocked, bool, 0444);
MODULE_PARM_DESC(test_unlocked, "TEST ONLY: skip the mutex, so the exclusion check must fail");

/*
 * The workloads, chosen by name with workloads=a,b (locktorture's ops). The
 * host's lab/catalog.toml lists the same ones, in the same order and shape
 * (tests/test_catalog.py).
 */
struct workload {
	const char *name;
	enum { SWEEP, ONE, TWICE_CPUS } threads;
	bool empty_cs;	/* no work under the lock: the cost of a pair */
	bool hogs;	/* a CPU hog bound to every online CPU */
	/*
	 * A cond_resched() inside the critical section: with voluntary
	 * preemption (the bench profile's, as Debian's) an owner is otherwise
	 * never descheduled while it holds the lock.
	 */
	bool resched_in_cs;
	bool sharded;	/* over shards mutexes, not one */
	bool sweeps_settings;	/* every cs_loops, think_loops and pin */
	/*
	 * A busy-wait of this many ms in the critical section, as locktorture's
	 * mutex_lock writer (torture_mutex_delay()) holds the lock: our count
	 * against its Total checks the counting, not the designs.
	 */
	unsigned int cs_delay_ms;
};

static const struct workload workload_table[] = {
	{ .name = "uncontended", .threads = ONE, .empty_cs = true },
	{ .name = "contended", .threads = SWEEP, .sweeps_settings = true },
	/*
	 * More runnable tasks than CPUs: owners get preempted, spinners meet
	 * owners that are not running, and sleeping and waking dominate.
	 */
	{ .name = "oversubscribed", .threads = TWICE_CPUS, .hogs = true,
	  .resched_in_cs = true },
	/* Low contention: the cost of the mutexes' cache footprint. */
	{ .name = "sharded", .threads = SWEEP, .sharded = true },
	{ .name = "locktorture_cs", .threads = SWEEP, .cs_delay_ms = 20 },
};

/* What a point runs with besides the workload and the thread count. */
struct point_setting {
	unsigned int cs_loops, think_loops;
	bool pin;
};

static unsigned int shards = 64;
module_param(shards, uint, 0444);
MODULE_PARM_DESC(shards, "Mutexes of the sharded workload (a power of two)");

static char *workloads = "uncontended,contended,oversubscribed";
module_param(workloads, charp, 0444);
MODULE_PARM_DESC(workloads, "Comma-separated names of workload_table's workloads");

static bool workload_on[ARRAY_SIZE(workload_table)];

/* One run of a point: the lock and the state it protects. */
/*
 * A mutex and what it guards. sharded packs them in an array, so that a
 * smaller mutex puts more of them on a cache line, as in real structures.
 */
struct shard {
	struct mutex lock;
	unsigned long shared;
};

struct contended_run {
	const struct workload *wl;
	struct point_setting setting;
	struct completion all_ready;
	struct completion start;
	atomic_t ready;
	int nr_workers;
	bool stop;
	unsigned int nr_shards;		/* a power of two */
	struct shard *shards;
};

struct worker {
	struct contended_run *run;
	struct task_struct *task;
	u64 acquisitions;
	unsigned long local;	/* what local_work() works on */
	u32 rng;		/* picks the shard */
	unsigned int latency_countdown;
	u64 latency_sum_ns;	/* of the timed acquisitions */
	u64 latency_hist[LATENCY_BUCKETS];	/* latency_bucket() of ns */
} ____cacheline_aligned_in_smp;

/* Times every latency_every-th mutex_lock() of a worker (0: none). */
static void timed_lock(struct worker *w, struct mutex *lock)
{
	u64 t0, ns;
	unsigned int b;

	/* A countdown, not a modulo: a division is slow under TCG. */
	if (!latency_every || --w->latency_countdown) {
		mutex_lock(lock);
		return;
	}
	w->latency_countdown = latency_every;
	t0 = ktime_get_ns();
	mutex_lock(lock);
	ns = ktime_get_ns() - t0;
	b = latency_bucket(ns);
	/* Only this thread writes them; the sweep reads them racily. */
	WRITE_ONCE(w->latency_hist[b], w->latency_hist[b] + 1);
	WRITE_ONCE(w->latency_sum_ns, w->latency_sum_ns + ns);
}

/* Work on the thread's own data between acquisitions (think time). */
static void local_work(unsigned long *local, unsigned int loops)
{
	unsigned int i;

	for (i = 0; i < loops; i++)
		WRITE_ONCE(*local, READ_ONCE(*local) + 1);
}

static void critical_section(struct contended_run *run, struct shard *shard)
{
	/* Locals: the volatile stores below would make the compiler reload run. */
	const unsigned int loops = run->setting.cs_loops;
	const bool resched = run->wl->resched_in_cs;
	unsigned int i;

	/* Plain read-modify-write: overlapping owners lose increments. */
	for (i = 0; i < loops; i++) {
		WRITE_ONCE(shard->shared, READ_ONCE(shard->shared) + 1);
		if (resched && i == loops / 2)
			cond_resched();
	}
	if (run->wl->cs_delay_ms)
		mdelay(run->wl->cs_delay_ms);
}

/* One shard, or a pseudo-random one of many (an LCG: no division). */
static struct shard *next_shard(struct worker *w)
{
	struct contended_run *run = w->run;

	if (run->nr_shards == 1)
		return run->shards;
	w->rng = w->rng * 1103515245 + 12345;
	return &run->shards[(w->rng >> 16) & (run->nr_shards - 1)];
}

static int contended_worker(void *arg)
{
	struct worker *w = arg;
	struct contended_run *run = w->run;

	if (atomic_inc_return(&run->ready) == run->nr_workers)
		complete(&run->all_ready);
	wait_for_completion(&run->start);
	while (!READ_ONCE(run->stop)) {
		struct shard *shard = next_shard(w);

		if (test_unlocked) {
			critical_section(run, shard);
		} else {
			timed_lock(w, &shard->lock);
			critical_section(run, shard);
			mutex_unlock(&shard->lock);
		}
		/* Only this thread writes it; the sweep reads it racily. */
		WRITE_ONCE(w->acquisitions, w->acquisitions + 1);
		local_work(&w->local, run->setting.think_loops);
		cond_resched();
	}
	return 0;
}

static void snapshot(struct worker *workers, int nr, u64 *counts)
{
	int i;

	for (i = 0; i < nr; i++)
		counts[i] = READ_ONCE(workers[i].acquisitions);
}

/* The workers' latency histograms, merged, and their sum. */
static void snapshot_latency(struct worker *workers, int nr, u64 *hist,
			     u64 *sum_ns)
{
	int i, b;

	*sum_ns = 0;
	for (i = 0; i < nr; i++)
		*sum_ns += READ_ONCE(workers[i].latency_sum_ns);
	for (b = 0; b < LATENCY_BUCKETS; b++) {
		hist[b] = 0;
		for (i = 0; i < nr; i++)
			hist[b] += READ_ONCE(workers[i].latency_hist[b]);
	}
}

/* Online CPUs in turn: worker i runs on the (i mod online)-th of them. */
static unsigned int nth_online_cpu(int i)
{
	int n = i % num_online_cpus();
	unsigned int cpu;

	for_each_online_cpu(cpu)
		if (!n--)
			return cpu;
	return cpumask_first(cpu_online_mask);
}

static int start_workers(struct contended_run *run, struct worker *workers,
			 int nr)
{
	int i;

	for (i = 0; i < nr; i++) {
		workers[i].run = run;
		workers[i].latency_countdown = latency_every;
		workers[i].rng = i + 1;
		workers[i].task = mutexlab_thread_create(contended_worker,
				&workers[i],
				run->setting.pin ? nth_online_cpu(i) : -1,
				"%d", i);
		if (IS_ERR(workers[i].task)) {
			int err = PTR_ERR(workers[i].task);

			workers[i].task = NULL;
			return err;
		}
		wake_up_process(workers[i].task);
	}
	return 0;
}

static void stop_workers(struct contended_run *run, struct worker *workers,
			 int nr)
{
	int i;

	WRITE_ONCE(run->stop, true);
	/* Workers never started must not wait for a start that never comes. */
	complete_all(&run->start);
	for (i = 0; i < nr && workers[i].task; i++)
		mutexlab_thread_stop(workers[i].task);
}

/* What the workers' scheduler accounting says, summed over them. */
struct sched_counts {
	u64 switches;	/* voluntary and involuntary context switches */
	u64 cpu_ns;	/* CPU time, as of each task's last accounting */
};

static void snapshot_sched(struct worker *workers, int nr,
			   struct sched_counts *c)
{
	int i;

	c->switches = 0;
	c->cpu_ns = 0;
	for (i = 0; i < nr; i++) {
		struct task_struct *t = workers[i].task;

		c->switches += READ_ONCE(t->nvcsw) + READ_ONCE(t->nivcsw);
		c->cpu_ns += READ_ONCE(t->se.sum_exec_runtime);
	}
}

/*
 * What one loop of the critical section costs, ps, timed on one thread:
 * CS_LOOPS and THINK_LOOPS in time. Loops, not ns, are the unit, so that a
 * slower design does not get less work per acquisition.
 */
static u64 loop_cost_ps(void)
{
	static const struct workload calibration = { .name = "calibration" };
	struct shard shard = { .shared = 0 };
	struct contended_run *run;
	const unsigned int loops = 100000;
	u64 t0, ns;

	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (!run)
		return 0;
	run->wl = &calibration;
	run->setting.cs_loops = loops;
	t0 = ktime_get_ns();
	critical_section(run, &shard);
	ns = ktime_get_ns() - t0;
	kfree(run);
	return ns * 1000 / loops;
}

struct point_counts {
	u64 *before, *after;
	struct sched_counts sched_before, sched_after;
	u64 latency_before[LATENCY_BUCKETS], latency_after[LATENCY_BUCKETS];
	u64 latency_sum_before, latency_sum_after;
	u64 events_before[NR_MUTEX_EVENTS], events_after[NR_MUTEX_EVENTS];
	bool have_events;
	u64 loop_ps;	/* loop_cost_ps() just before the point */
};

/* The merged histogram of the point, and the sum it gives the mean from. */
static void report_latency(const struct point_counts *c)
{
	results_printf("\"latency_every\":%u,\"latency_sum_ns\":%llu,",
		       latency_every,
		       c->latency_sum_after - c->latency_sum_before);
	report_latency_hist("latency_hdr_ns", c->latency_before,
			    c->latency_after);
	results_printf(",");
}

/*
 * A point's KTAP name: workload/<T>t, its settings where the workload has a
 * critical section, and the repetition (analysis/results.py's series_of()
 * names the same series).
 */
static void report_point_name(const struct workload *wl,
			      const struct point_setting *s, int nr,
			      unsigned int rep)
{
	results_printf("%s/%dt", wl->name, nr);
	if (!wl->empty_cs)
		results_printf("/C%u/W%u/%s", s->cs_loops, s->think_loops,
			       s->pin ? "pinned" : "unpinned");
	results_printf("/rep%u", rep);
}

static void report_point(const struct contended_run *run, int test_nr,
			 int nr, unsigned int rep, u64 elapsed_ns,
			 const struct point_counts *c, bool exclusive)
{
	const struct point_setting *s = &run->setting;
	const u64 *before = c->before, *after = c->after;
	int i;

	results_printf("{\"type\":\"point\",\"workload\":\"%s\",\"threads\":%d,\"rep\":%u,\"elapsed_ns\":%llu,\"cs_loops\":%u,\"think_loops\":%u,\"pinned\":%s,\"cs_delay_ms\":%u,\"hogs\":%u,\"shards\":%u,\"acquisitions\":[",
		       run->wl->name, nr, rep, elapsed_ns, s->cs_loops,
		       s->think_loops, s->pin ? "true" : "false",
		       run->wl->cs_delay_ms,
		       run->wl->hogs ? num_online_cpus() : 0, run->nr_shards);
	for (i = 0; i < nr; i++)
		results_printf("%s%llu", i ? "," : "", after[i] - before[i]);
	results_printf("],\"mutual_exclusion\":%s,\"context_switches\":%llu,\"cpu_ns\":%llu,\"loop_ps\":%llu,",
		       exclusive ? "true" : "false",
		       c->sched_after.switches - c->sched_before.switches,
		       c->sched_after.cpu_ns - c->sched_before.cpu_ns, c->loop_ps);
	report_latency(c);
	report_event_deltas(c->have_events, c->events_before, c->events_after);
	results_printf("}\n");
	results_printf("%sok %d - ", exclusive ? "" : "not ", test_nr);
	report_point_name(run->wl, s, nr, rep);
	results_printf("\n");
}

/* Runnable all the time; yields only where the kernel would preempt it. */
static int hog_fn(void *arg)
{
	struct contended_run *run = arg;

	while (!READ_ONCE(run->stop)) {
		cpu_relax();
		cond_resched();
	}
	return 0;
}

/* One hog bound to each online CPU; hogs[] has nr_cpu_ids slots. */
static int start_hogs(struct contended_run *run, struct task_struct **hogs)
{
	unsigned int cpu;

	for_each_online_cpu(cpu) {
		struct task_struct *t;

		t = mutexlab_thread_create(hog_fn, run, cpu, "hog%u", cpu);
		if (IS_ERR(t))
			return PTR_ERR(t);
		hogs[cpu] = t;
		wake_up_process(t);
	}
	return 0;
}

/* After stop_workers(), which set run->stop. */
static void stop_hogs(struct task_struct **hogs)
{
	unsigned int cpu;

	for (cpu = 0; cpu < nr_cpu_ids; cpu++)
		if (hogs[cpu])
			mutexlab_thread_stop(hogs[cpu]);
}

/* Returns 1 when the point passed, 0 when it failed, or -errno. */
static int run_point(int test_nr, const struct workload *wl,
		     const struct point_setting *setting, int nr,
		     unsigned int rep)
{
	struct task_struct **hogs;
	struct contended_run *run;
	struct worker *workers;
	struct point_counts *c;
	u64 start, elapsed_ns, total = 0, shared;
	bool exclusive;
	int i, err;

	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (run) {
		run->nr_shards = wl->sharded ? shards : 1;
		run->shards = kcalloc(run->nr_shards, sizeof(*run->shards),
				      GFP_KERNEL);
	}
	workers = kcalloc(nr, sizeof(*workers), GFP_KERNEL);
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	hogs = kcalloc(nr_cpu_ids, sizeof(*hogs), GFP_KERNEL);
	if (c) {
		c->before = kcalloc(nr, sizeof(u64), GFP_KERNEL);
		c->after = kcalloc(nr, sizeof(u64), GFP_KERNEL);
	}
	if (!run || !run->shards || !workers || !c || !c->before || !c->after ||
	    !hogs) {
		err = -ENOMEM;
		goto out_free;
	}
	run->wl = wl;
	run->setting = *setting;
	for (i = 0; i < run->nr_shards; i++)
		mutex_init(&run->shards[i].lock);
	init_completion(&run->all_ready);
	init_completion(&run->start);
	run->nr_workers = nr;

	/*
	 * The vCPU's speed just before the point, before the workers compete
	 * with it. Recorded, not judged by: under TCG it spreads by 3x on a
	 * quiet host (analysis/results.py, is_disturbed()).
	 */
	c->loop_ps = loop_cost_ps();
	err = start_workers(run, workers, nr);
	if (!err && wl->hogs)
		err = start_hogs(run, hogs);
	if (err)
		goto out_stop;
	wait_for_completion(&run->all_ready);

	complete_all(&run->start);
	msleep(warmup_ms);
	c->have_events = snapshot_events(c->events_before);
	snapshot(workers, nr, c->before);
	snapshot_sched(workers, nr, &c->sched_before);
	snapshot_latency(workers, nr, c->latency_before, &c->latency_sum_before);
	start = ktime_get_ns();
	msleep(duration_ms);
	snapshot(workers, nr, c->after);
	snapshot_sched(workers, nr, &c->sched_after);
	snapshot_latency(workers, nr, c->latency_after, &c->latency_sum_after);
	elapsed_ns = ktime_get_ns() - start;
	if (c->have_events)
		c->have_events = snapshot_events(c->events_after);
	stop_workers(run, workers, nr);
	stop_hogs(hogs);

	for (i = 0; i < nr; i++)
		total += workers[i].acquisitions;
	shared = 0;
	for (i = 0; i < run->nr_shards; i++)
		shared += run->shards[i].shared;
	exclusive = shared == total * run->setting.cs_loops;
	report_point(run, test_nr, nr, rep, elapsed_ns, c, exclusive);
	pr_info("%s %dt C%u W%u pin %d rep %u: %llu acquisitions%s\n",
		wl->name, nr, setting->cs_loops, setting->think_loops,
		setting->pin, rep, total,
		exclusive ? "" : ", MUTUAL EXCLUSION BROKEN");
	err = exclusive;
	goto out_free;

out_stop:
	stop_workers(run, workers, nr);
	stop_hogs(hogs);
out_free:
	kfree(hogs);
	if (c) {
		kfree(c->after);
		kfree(c->before);
	}
	kfree(c);
	kfree(workers);
	if (run)
		kfree(run->shards);
	kfree(run);
	return err;
}

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

	init_completion(&pw.started);
	mutex_lock(lock);
	task = mutexlab_thread_create(probe_waiter_fn, &pw, -1, "probe");
	if (IS_ERR(task)) {
		mutex_unlock(lock);
		return PTR_ERR(task);
	}
	wake_up_process(task);
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
static int run_unlock_probe(int test_nr)
{
	u64 events_before[NR_MUTEX_EVENTS], events_after[NR_MUTEX_EVENTS];
	unsigned int round, slept_rounds = 0;
	bool have_events, slept;
	struct mutex lock;
	u64 *unlock_ns;
	int err = 0;

	unlock_ns = kcalloc(unlock_probe_rounds, sizeof(*unlock_ns), GFP_KERNEL);
	if (!unlock_ns) {
		results_printf("not ok %d - unlock_probe # error %d\n", test_nr,
			       -ENOMEM);
		return 0;
	}
	mutex_init(&lock);
	have_events = snapshot_events(events_before);
	for (round = 0; round < unlock_probe_rounds && !err; round++) {
		err = probe_unlock_once(&lock, &unlock_ns[round], &slept);
		slept_rounds += slept;
	}
	if (have_events)
		have_events = snapshot_events(events_after);
	sort(unlock_ns, round, sizeof(*unlock_ns), cmp_u64, NULL);
	results_printf("{\"type\":\"unlock_probe\",\"rounds\":%u,\"waiter_slept\":%u,\"unlock_ns_min\":%llu,\"unlock_ns_median\":%llu,\"unlock_ns_max\":%llu,",
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

/* An array parameter as "a,b,c"; bools as 0 and 1. */
struct param_list {
	char text[MUTEXLAB_MAX_POINTS * 12];
};

static const char *uint_list(struct param_list *l, const unsigned int *v, int n)
{
	size_t len = 0;
	int i;

	l->text[0] = '\0';
	for (i = 0; i < n; i++)
		len += scnprintf(l->text + len, sizeof(l->text) - len, "%s%u",
				 i ? "," : "", v[i]);
	return l->text;
}

static const char *threads_list(struct param_list *l)
{
	unsigned int v[MUTEXLAB_MAX_POINTS];
	int i;

	for (i = 0; i < nr_thread_points; i++)
		v[i] = threads[i];
	return uint_list(l, v, nr_thread_points);
}

static const char *pin_list(struct param_list *l)
{
	unsigned int v[ARRAY_SIZE(pin)];
	int i;

	for (i = 0; i < nr_pin; i++)
		v[i] = pin[i];
	return uint_list(l, v, nr_pin);
}

/* locktorture style: every parameter, at the start and at the end. */
static void echo_params(const char *when)
{
	struct param_list *l = kmalloc_array(4, sizeof(*l), GFP_KERNEL);

	if (!l)
		return;
	pr_info("%s: workloads=%s threads=%s cs_loops=%s think_loops=%s pin=%s shards=%u duration_ms=%u warmup_ms=%u reps=%u latency_every=%u unlock_probe_rounds=%u test_bug=%d test_unlocked=%d\n",
		when, workloads, threads_list(&l[0]),
		uint_list(&l[1], cs_loops, nr_cs_loops),
		uint_list(&l[2], think_loops, nr_think_loops), pin_list(&l[3]),
		shards, duration_ms, warmup_ms, reps, latency_every,
		unlock_probe_rounds, test_bug, test_unlocked);
	kfree(l);
}

static void report_meta(void)
{
	struct param_list *l = kmalloc_array(4, sizeof(*l), GFP_KERNEL);

	report_guest_meta();
	results_printf("\"loop_ps\":%llu,", loop_cost_ps());
	report_floors();
	if (!l) {
		results_printf("\"params\":null}\n");
		return;
	}
	results_printf("\"params\":{\"workloads\":\"%s\",\"threads\":[%s],\"cs_loops\":[%s],\"think_loops\":[%s],\"pin\":[%s],\"shards\":%u,\"duration_ms\":%u,\"warmup_ms\":%u,\"reps\":%u,\"latency_every\":%u,\"unlock_probe_rounds\":%u,\"test_bug\":%s,\"test_unlocked\":%s}}\n",
		       workloads, threads_list(&l[0]),
		       uint_list(&l[1], cs_loops, nr_cs_loops),
		       uint_list(&l[2], think_loops, nr_think_loops),
		       pin_list(&l[3]), shards, duration_ms, warmup_ms, reps,
		       latency_every, unlock_probe_rounds,
		       test_bug ? "true" : "false",
		       test_unlocked ? "true" : "false");
	kfree(l);
}

/* Sets workload_on[] from the workloads parameter. */
static int parse_workloads(void)
{
	char *list, *cursor, *name, known[128];
	bool found;
	size_t w, len;
	int ret = 0;

	list = kstrdup(workloads, GFP_KERNEL);
	if (!list)
		return -ENOMEM;
	cursor = list;
	while ((name = strsep(&cursor, ",")) && !ret) {
		found = false;
		for (w = 0; w < ARRAY_SIZE(workload_table); w++) {
			if (!strcmp(name, workload_table[w].name)) {
				workload_on[w] = true;
				found = true;
			}
		}
		if (!found) {
			for (w = 0, len = 0; w < ARRAY_SIZE(workload_table); w++)
				len += scnprintf(known + len, sizeof(known) - len,
						 " %s", workload_table[w].name);
			pr_err("unknown workload '%s'; workloads:%s\n", name, known);
			ret = -EINVAL;
		}
	}
	kfree(list);
	return ret;
}

static int check_params(void)
{
	int i, ret;

	ret = parse_workloads();
	if (ret)
		return ret;
	/* next_shard() masks instead of dividing: division is slow in TCG. */
	if (!is_power_of_2(shards) || shards > 65536) {
		pr_err("shards=%u is not a power of two up to 65536\n", shards);
		return -EINVAL;
	}

	if (!nr_thread_points) {
		/*
		 * Default sweep: 1 .. vCPUs, then 2 * vCPUs, so that waiters
		 * must sleep.
		 */
		nr_thread_points = min_t(int, num_online_cpus(),
					 MUTEXLAB_MAX_POINTS - 1);
		for (i = 0; i < nr_thread_points; i++)
			threads[i] = i + 1;
		threads[nr_thread_points++] = 2 * num_online_cpus();
	}
	for (i = 0; i < nr_thread_points; i++) {
		if (threads[i] < 1 || threads[i] > 1024) {
			pr_err("threads[%d]=%d is out of range 1..1024\n", i,
			       threads[i]);
			return -EINVAL;
		}
	}
	for (i = 0; i < nr_cs_loops; i++) {
		/* No increments: no witness for the exclusion check. */
		if (!cs_loops[i]) {
			pr_err("cs_loops[%d] is 0; the critical section needs work\n",
			       i);
			return -EINVAL;
		}
	}
	if (!reps || !duration_ms) {
		pr_err("reps and duration_ms must be positive\n");
		return -EINVAL;
	}
	if (unlock_probe_rounds > 10000) {
		pr_err("unlock_probe_rounds is above 10000\n");
		return -EINVAL;
	}
	return 0;
}

/* Settings of one repetition of a workload (struct point_setting). */
static int workload_settings(const struct workload *wl)
{
	return wl->sweeps_settings ? nr_pin * nr_cs_loops * nr_think_loops : 1;
}

/* The n-th combination of the swept settings; think time varies fastest. */
static struct point_setting nth_setting(const struct workload *wl, int n)
{
	struct point_setting s = {
		.pin = pin[n / (nr_cs_loops * nr_think_loops)],
		.cs_loops = cs_loops[n / nr_think_loops % nr_cs_loops],
		.think_loops = think_loops[n % nr_think_loops],
	};

	if (wl->empty_cs) {
		s.cs_loops = 0;
		s.think_loops = 0;
	} else if (wl->cs_delay_ms) {
		/* One increment: the exclusion check still has its witness. */
		s.cs_loops = 1;
		s.think_loops = 0;
	}
	return s;
}

static int workload_thread_points(const struct workload *wl)
{
	return wl->threads == SWEEP ? nr_thread_points : 1;
}

/* Points of one repetition of a workload. */
static int workload_points(const struct workload *wl)
{
	return workload_settings(wl) * workload_thread_points(wl);
}

static int workload_threads(const struct workload *wl, int point)
{
	switch (wl->threads) {
	case ONE:
		return 1;
	case TWICE_CPUS:
		return 2 * num_online_cpus();
	default:
		return threads[point];
	}
}

/* Returns the points passed; reports errors itself. */
static int run_workload(const struct workload *wl, unsigned int rep,
			int *test_nr)
{
	struct point_setting setting;
	int passed = 0, i, nr, ret;

	for (i = 0; i < workload_points(wl); i++) {
		/* Thread counts vary fastest: a series is swept together. */
		setting = nth_setting(wl, i / workload_thread_points(wl));
		nr = workload_threads(wl, i % workload_thread_points(wl));
		ret = run_point(++*test_nr, wl, &setting, nr, rep);
		if (ret < 0) {
			results_printf("not ok %d - ", *test_nr);
			report_point_name(wl, &setting, nr, rep);
			results_printf(" # error %d\n", ret);
		} else {
			passed += ret;
		}
		/* The crash comes after a point so that it has results to keep. */
		if (test_bug) {
			results_wait_forwarded();
			BUG();
		}
	}
	return passed;
}

/*
 * Verdicts go to KTAP, never to the module's init status: a failed init would
 * unload the module and its results file before the guest had read them all.
 * Repetitions are the outer loop, so that drift hits every point alike.
 */
static void run_sweep(void)
{
	int passed = 0, test_nr = 0, plan = 0;
	unsigned int rep;
	size_t w;

	for (w = 0; w < ARRAY_SIZE(workload_table); w++)
		if (workload_on[w])
			plan += reps * workload_points(&workload_table[w]);
	results_printf("KTAP version 1\n");
	report_meta();
	results_printf("1..%d\n", plan + (unlock_probe_rounds ? 1 : 0));
	for (rep = 1; rep <= reps; rep++)
		for (w = 0; w < ARRAY_SIZE(workload_table); w++)
			if (workload_on[w])
				passed += run_workload(&workload_table[w], rep,
						       &test_nr);
	if (unlock_probe_rounds)
		passed += run_unlock_probe(++test_nr);
	results_printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
		       passed, test_nr - passed);
	if (results_overflowed())
		pr_err("result log overflowed; output is truncated\n");
}

int bench_prepare(void)
{
	int ret = check_params();

	if (ret)
		return ret;
	echo_params("start");
	lock_events_get();
	return 0;
}

void bench_run(void)
{
	run_sweep();
	results_finish();
	echo_params("end");
}

void bench_exit(void)
{
	lock_events_put();
}
