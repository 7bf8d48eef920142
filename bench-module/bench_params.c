// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmark sweep's module parameters, their validation and echo, and
 * the sweep's shape: which points a repetition of each workload runs, in
 * what order (lab/catalog.toml and analysis/resultset.py expect the same).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "mutexlab.h"
#include "bench.h"
#include "defaults.h"

/*
 * The defaults of the parameters the lab sets are its settings table's
 * (lab/settings.toml), in defaults.h, which lab/build.sh writes beside
 * this file from it; make bench's sweep is what insmod alone runs.
 */
struct bench_params bench_params = {
	.duration_ms = MUTEXLAB_DEFAULT_DURATION_MS,
	.warmup_ms = MUTEXLAB_DEFAULT_WARMUP_MS,
	.reps = MUTEXLAB_DEFAULT_REPS,
	/*
	 * The settings the contended workload sweeps besides the thread
	 * count, every combination in each repetition; the other workloads
	 * take the first value of each. Loops, not ns, are their unit, so that
	 * every design gets the same work per acquisition; the meta record's
	 * loop_ps gives them in time.
	 */
	.cs_loops = MUTEXLAB_DEFAULT_CS_LOOPS,
	.nr_cs_loops = MUTEXLAB_DEFAULT_NR_CS_LOOPS,
	.think_loops = MUTEXLAB_DEFAULT_THINK_LOOPS,
	.nr_think_loops = MUTEXLAB_DEFAULT_NR_THINK_LOOPS,
	.pin = MUTEXLAB_DEFAULT_PIN,
	.nr_pin = MUTEXLAB_DEFAULT_NR_PIN,
	/*
	 * A timestamp costs about 300 ns under TCG here, as much as a whole
	 * uncontended lock/unlock: time one acquisition in this many, not all.
	 */
	.latency_every = MUTEXLAB_DEFAULT_LATENCY_EVERY,
	.unlock_probe_rounds = 20,
	.shards = MUTEXLAB_DEFAULT_SHARDS,
	.workloads = MUTEXLAB_DEFAULT_WORKLOADS,
};

module_param_array_named(threads, bench_params.threads, int,
			 &bench_params.nr_threads, 0444);
MODULE_PARM_DESC(threads, "Thread counts to sweep (default: powers of two up to the online CPUs, the online CPUs, twice as many)");
module_param_named(duration_ms, bench_params.duration_ms, uint, 0444);
MODULE_PARM_DESC(duration_ms, "Measured time per point, ms");
module_param_named(warmup_ms, bench_params.warmup_ms, uint, 0444);
MODULE_PARM_DESC(warmup_ms, "Time run before measuring each point, ms");
module_param_named(reps, bench_params.reps, uint, 0444);
MODULE_PARM_DESC(reps, "Repetitions of each point");
module_param_array_named(cs_loops, bench_params.cs_loops, uint,
			 &bench_params.nr_cs_loops, 0444);
MODULE_PARM_DESC(cs_loops, "Critical sections to sweep: shared-counter increments under the lock");
module_param_array_named(think_loops, bench_params.think_loops, uint,
			 &bench_params.nr_think_loops, 0444);
MODULE_PARM_DESC(think_loops, "Think times to sweep: local increments between acquisitions");
module_param_array_named(pin, bench_params.pin, bool, &bench_params.nr_pin,
			 0444);
MODULE_PARM_DESC(pin, "Placements to sweep: 1 binds worker i to the (i mod online CPUs)-th online CPU, 0 leaves it to the scheduler");
module_param_named(latency_every, bench_params.latency_every, uint, 0444);
MODULE_PARM_DESC(latency_every, "Time one mutex_lock() in this many (0: none)");
module_param_named(unlock_probe_rounds, bench_params.unlock_probe_rounds, uint,
		   0444);
MODULE_PARM_DESC(unlock_probe_rounds, "Timed unlocks with a sleeping waiter (0: no probe)");
module_param_named(shards, bench_params.shards, uint, 0444);
MODULE_PARM_DESC(shards, "Mutexes of the sharded workload (a power of two)");
module_param_named(workloads, bench_params.workloads, charp, 0444);
MODULE_PARM_DESC(workloads, "Comma-separated names of workload_table's workloads");
/* Test-only: prove that the host notices a crash and a broken lock. */
module_param_named(test_bug, bench_params.test_bug, bool, 0444);
MODULE_PARM_DESC(test_bug, "TEST ONLY: BUG() after the first point");
module_param_named(test_unlocked, bench_params.test_unlocked, bool, 0444);
MODULE_PARM_DESC(test_unlocked, "TEST ONLY: skip the mutex, so the exclusion check must fail");

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

static bool workload_on[ARRAY_SIZE(workload_table)];

const struct workload *next_workload(const struct workload *prev)
{
	size_t w = prev ? prev - workload_table + 1 : 0;

	for (; w < ARRAY_SIZE(workload_table); w++)
		if (workload_on[w])
			return &workload_table[w];
	return NULL;
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

	for (i = 0; i < bench_params.nr_threads; i++)
		v[i] = bench_params.threads[i];
	return uint_list(l, v, bench_params.nr_threads);
}

static const char *pin_list(struct param_list *l)
{
	unsigned int v[ARRAY_SIZE(bench_params.pin)];
	int i;

	for (i = 0; i < bench_params.nr_pin; i++)
		v[i] = bench_params.pin[i];
	return uint_list(l, v, bench_params.nr_pin);
}

/* locktorture style: every parameter, at the start and at the end. */
void bench_params_echo(const char *when)
{
	const struct bench_params *p = &bench_params;
	struct param_list *l = kmalloc_array(4, sizeof(*l), GFP_KERNEL);

	if (!l)
		return;
	pr_info("%s: workloads=%s threads=%s cs_loops=%s think_loops=%s pin=%s shards=%u duration_ms=%u warmup_ms=%u reps=%u latency_every=%u unlock_probe_rounds=%u test_bug=%d test_unlocked=%d\n",
		when, p->workloads, threads_list(&l[0]),
		uint_list(&l[1], p->cs_loops, p->nr_cs_loops),
		uint_list(&l[2], p->think_loops, p->nr_think_loops),
		pin_list(&l[3]), p->shards, p->duration_ms, p->warmup_ms,
		p->reps, p->latency_every, p->unlock_probe_rounds, p->test_bug,
		p->test_unlocked);
	kfree(l);
}

/* The meta record's "params" field. */
void bench_params_report(void)
{
	const struct bench_params *p = &bench_params;
	struct param_list *l = kmalloc_array(4, sizeof(*l), GFP_KERNEL);

	if (!l) {
		results_printf("\"params\":null");
		return;
	}
	results_printf("\"params\":{\"workloads\":\"%s\",\"threads\":[%s],\"cs_loops\":[%s],\"think_loops\":[%s],\"pin\":[%s],\"shards\":%u,\"duration_ms\":%u,\"warmup_ms\":%u,\"reps\":%u,\"latency_every\":%u,\"unlock_probe_rounds\":%u,\"test_bug\":%s,\"test_unlocked\":%s}",
		       p->workloads, threads_list(&l[0]),
		       uint_list(&l[1], p->cs_loops, p->nr_cs_loops),
		       uint_list(&l[2], p->think_loops, p->nr_think_loops),
		       pin_list(&l[3]), p->shards, p->duration_ms, p->warmup_ms,
		       p->reps, p->latency_every, p->unlock_probe_rounds,
		       p->test_bug ? "true" : "false",
		       p->test_unlocked ? "true" : "false");
	kfree(l);
}

/* Sets workload_on[] from the workloads parameter. */
static int parse_workloads(void)
{
	char *list, *cursor, *name, known[128];
	bool found;
	size_t w, len;
	int ret = 0;

	list = kstrdup(bench_params.workloads, GFP_KERNEL);
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

/*
 * Default sweep, as lab/settings.py's thread_sweep() gives the host's
 * default THREADS: powers of two up to the vCPUs, the vCPUs themselves,
 * then twice as many, so that waiters must sleep.
 */
static void default_threads(struct bench_params *p)
{
	int cpus = num_online_cpus(), t;

	p->nr_threads = 0;
	for (t = 1; t < cpus; t *= 2)
		p->threads[p->nr_threads++] = t;
	p->threads[p->nr_threads++] = cpus;
	p->threads[p->nr_threads++] = 2 * cpus;
}

int bench_params_check(void)
{
	struct bench_params *p = &bench_params;
	int i, ret;

	ret = parse_workloads();
	if (ret)
		return ret;
	/* next_shard() masks instead of dividing: division is slow in TCG. */
	if (!is_power_of_2(p->shards) || p->shards > 65536) {
		pr_err("shards=%u is not a power of two up to 65536\n", p->shards);
		return -EINVAL;
	}
	if (!p->nr_threads)
		default_threads(p);
	for (i = 0; i < p->nr_threads; i++) {
		if (p->threads[i] < 1 || p->threads[i] > 1024) {
			pr_err("threads[%d]=%d is out of range 1..1024\n", i,
			       p->threads[i]);
			return -EINVAL;
		}
	}
	for (i = 0; i < p->nr_cs_loops; i++) {
		/* No increments: no witness for the exclusion check. */
		if (!p->cs_loops[i]) {
			pr_err("cs_loops[%d] is 0; the critical section needs work\n",
			       i);
			return -EINVAL;
		}
	}
	if (!p->reps || !p->duration_ms) {
		pr_err("reps and duration_ms must be positive\n");
		return -EINVAL;
	}
	if (p->unlock_probe_rounds > 10000) {
		pr_err("unlock_probe_rounds is above 10000\n");
		return -EINVAL;
	}
	return 0;
}

/* Settings of one repetition of a workload (struct point_setting). */
static int workload_settings(const struct workload *wl)
{
	const struct bench_params *p = &bench_params;

	return wl->sweeps_settings ?
		p->nr_pin * p->nr_cs_loops * p->nr_think_loops : 1;
}

/* The n-th combination of the swept settings; think time varies fastest. */
struct point_setting nth_setting(const struct workload *wl, int n)
{
	const struct bench_params *p = &bench_params;
	struct point_setting s = {
		.pin = p->pin[n / (p->nr_cs_loops * p->nr_think_loops)],
		.cs_loops = p->cs_loops[n / p->nr_think_loops % p->nr_cs_loops],
		.think_loops = p->think_loops[n % p->nr_think_loops],
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

int workload_thread_points(const struct workload *wl)
{
	return wl->threads == SWEEP ? bench_params.nr_threads : 1;
}

/* Points of one repetition of a workload. */
int workload_points(const struct workload *wl)
{
	return workload_settings(wl) * workload_thread_points(wl);
}

int workload_threads(const struct workload *wl, int point)
{
	switch (wl->threads) {
	case ONE:
		return 1;
	case TWICE_CPUS:
		return 2 * num_online_cpus();
	default:
		return bench_params.threads[point];
	}
}
