// SPDX-License-Identifier: GPL-2.0
/*
 * Correctness checks, one per boot, chosen with check=NAME from checks[]:
 * exclusion (check_exclusion.c); free_article, free_amdgpu and their
 * negative control free_control (check_free.c); watch (watch.c). This file
 * holds their parameters, checks them, and frames the chosen check's
 * results: the KTAP header and plan, the meta record, the totals.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/time64.h>

#include "mutexlab.h"
#include "checks.h"
#include "defaults.h"	/* lab/build.sh writes it from lab/settings.toml */

static unsigned int check_ms = MUTEXLAB_DEFAULT_CHECK_MS;
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

struct mutex_check {
	const char *name;
	int nr_tests;
	int (*run)(const struct check_args *a);
};

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
static struct check_args args;

static void echo_check_params(const char *when)
{
	pr_info("%s: check=%s check_ms=%u check_threads=%u check_rounds=%u hold_us=%u release_window_ns=%ld\n",
		when, args.name, args.duration_ms, args.nr_threads,
		args.rounds, args.hold_us, mutexlab_release_window_ns);
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
	args = (struct check_args) {
		.name = chosen->name,
		.duration_ms = check_ms,
		.nr_threads = check_threads ?: 2 * num_online_cpus() + 2,
		.rounds = check_rounds,
		.hold_us = hold_us,
		.window_us = max(mutexlab_release_window_ns, 0L) / NSEC_PER_USEC,
	};
	if (args.nr_threads > 256 || !check_ms || !hold_us || hold_us > 100000) {
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
		       args.name, args.duration_ms, args.nr_threads,
		       args.rounds, args.hold_us);
	results_printf("1..%d\n", chosen->nr_tests);
	passed = chosen->run(&args);
	results_printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
		       passed, chosen->nr_tests - passed);
	results_finish();
	echo_check_params("end");
}

void check_exit(void)
{
	lock_events_put();
}
