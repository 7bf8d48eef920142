/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mutexlab: what the benchmark's files share. bench_params.c holds the
 * sweep's parameters and its shape, point.c runs one point, probe.c the
 * unlock probe, bench.c the sweep over them.
 */
#ifndef MUTEXLAB_BENCH_H
#define MUTEXLAB_BENCH_H

#include <linux/types.h>

#define MUTEXLAB_MAX_POINTS	64
/* Values of each setting swept besides the thread count. */
#define MUTEXLAB_MAX_VALUES	8

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

/* What a point runs with besides the workload and the thread count. */
struct point_setting {
	unsigned int cs_loops, think_loops;
	bool pin;
};

/* bench_params.c: the module parameters of the sweep, as loaded */
struct bench_params {
	int threads[MUTEXLAB_MAX_POINTS];
	int nr_threads;
	unsigned int duration_ms;
	unsigned int warmup_ms;
	unsigned int reps;
	unsigned int cs_loops[MUTEXLAB_MAX_VALUES];
	int nr_cs_loops;
	unsigned int think_loops[MUTEXLAB_MAX_VALUES];
	int nr_think_loops;
	bool pin[2];
	int nr_pin;
	unsigned int latency_every;
	unsigned int unlock_probe_rounds;
	unsigned int shards;
	char *workloads;
	bool test_bug;
	bool test_unlocked;
};

extern struct bench_params bench_params;

int bench_params_check(void);
void bench_params_echo(const char *when);
void bench_params_report(void);
/* The chosen workloads in table order; NULL after the last one. */
const struct workload *next_workload(const struct workload *prev);
int workload_points(const struct workload *wl);
int workload_thread_points(const struct workload *wl);
struct point_setting nth_setting(const struct workload *wl, int n);
int workload_threads(const struct workload *wl, int point);

/* point.c: one point of the sweep */
u64 loop_cost_ps(void);
int run_point(int test_nr, const struct workload *wl,
	      const struct point_setting *setting, int nr, unsigned int rep);
void report_point_name(const struct workload *wl,
		       const struct point_setting *s, int nr, unsigned int rep);

/* probe.c: mutex_unlock() timed with a sleeping waiter */
int run_unlock_probe(int test_nr, unsigned int rounds);

#endif /* MUTEXLAB_BENCH_H */
