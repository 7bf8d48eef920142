// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmark sweep: every chosen workload's points (point.c) in each
 * repetition, then the unlock probe (probe.c), on the results channel as
 * KTAP results with a data record each. The parameters and the sweep's
 * shape are in bench_params.c.
 *
 * Each point also reports the deltas of the kernel's mutex lock events over
 * its measured window, read with lockevent_sum_by_name() where the kernel
 * has the lab's common series (null where it has not).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bug.h>
#include <linux/printk.h>

#include "mutexlab.h"
#include "bench.h"

static void report_meta(void)
{
	report_guest_meta();
	results_printf("\"loop_ps\":%llu,", loop_cost_ps());
	report_floors();
	bench_params_report();
	results_printf("}\n");
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
		if (bench_params.test_bug) {
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
	const unsigned int probe_rounds = bench_params.unlock_probe_rounds;
	int passed = 0, test_nr = 0, plan = 0;
	const struct workload *wl;
	unsigned int rep;

	for (wl = next_workload(NULL); wl; wl = next_workload(wl))
		plan += bench_params.reps * workload_points(wl);
	results_printf("KTAP version 1\n");
	report_meta();
	results_printf("1..%d\n", plan + (probe_rounds ? 1 : 0));
	for (rep = 1; rep <= bench_params.reps; rep++)
		for (wl = next_workload(NULL); wl; wl = next_workload(wl))
			passed += run_workload(wl, rep, &test_nr);
	if (probe_rounds)
		passed += run_unlock_probe(++test_nr, probe_rounds);
	results_printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
		       passed, test_nr - passed);
	if (results_overflowed())
		pr_err("result log overflowed; output is truncated\n");
}

int bench_prepare(void)
{
	int ret = bench_params_check();

	if (ret)
		return ret;
	bench_params_echo("start");
	lock_events_get();
	return 0;
}

void bench_run(void)
{
	run_sweep();
	results_finish();
	bench_params_echo("end");
}

void bench_exit(void)
{
	lock_events_put();
}
