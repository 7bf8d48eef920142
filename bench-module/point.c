// SPDX-License-Identifier: GPL-2.0
/*
 * One point of the benchmark sweep: T kthreads contend on one mutex (or on
 * shards of them) for a fixed time, each critical section doing plain
 * increments of a shared counter. The point reports per-thread
 * acquisitions, latency, scheduler and lock-event counts as a data record
 * and a KTAP result, "not ok" when the shared counter shows that two threads
 * were inside the critical section at once.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "mutexlab.h"
#include "bench.h"

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
	if (!bench_params.latency_every || --w->latency_countdown) {
		mutex_lock(lock);
		return;
	}
	w->latency_countdown = bench_params.latency_every;
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

		if (bench_params.test_unlocked) {
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
	int i, err;

	for (i = 0; i < nr; i++) {
		workers[i].run = run;
		workers[i].latency_countdown = bench_params.latency_every;
		workers[i].rng = i + 1;
		err = mutexlab_thread_start(&workers[i].task, contended_worker,
					    &workers[i],
					    run->setting.pin ? nth_online_cpu(i) : -1,
					    "%d", i);
		if (err)
			return err;
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
u64 loop_cost_ps(void)
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
		       bench_params.latency_every,
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
void report_point_name(const struct workload *wl,
		       const struct point_setting *s, int nr, unsigned int rep)
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

	results_record("point");
	results_printf("\"workload\":\"%s\",\"threads\":%d,\"rep\":%u,\"elapsed_ns\":%llu,\"cs_loops\":%u,\"think_loops\":%u,\"pinned\":%s,\"cs_delay_ms\":%u,\"hogs\":%u,\"shards\":%u,\"acquisitions\":[",
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
	int err;

	for_each_online_cpu(cpu) {
		err = mutexlab_thread_start(&hogs[cpu], hog_fn, run, cpu, "hog%u",
					    cpu);
		if (err)
			return err;
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
int run_point(int test_nr, const struct workload *wl,
	      const struct point_setting *setting, int nr, unsigned int rep)
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
		run->nr_shards = wl->sharded ? bench_params.shards : 1;
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
	msleep(bench_params.warmup_ms);
	c->have_events = snapshot_events(c->events_before);
	snapshot(workers, nr, c->before);
	snapshot_sched(workers, nr, &c->sched_before);
	snapshot_latency(workers, nr, c->latency_before, &c->latency_sum_before);
	start = ktime_get_ns();
	msleep(bench_params.duration_ms);
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
