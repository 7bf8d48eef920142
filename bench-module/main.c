// SPDX-License-Identifier: GPL-2.0
/*
 * mutexlab: measure or check a mutex design from inside a guest kernel.
 *
 * Loading the module runs the benchmark sweep (bench.c), or with check=NAME
 * one correctness check (check.c), all inside its init; results stream out
 * through debugfs mutexlab/results (results.c) while it runs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/utsname.h>

#include "mutexlab.h"

/* What /init read in debugfs and sysfs: the module cannot read them itself. */
long mutexlab_release_window_ns = -1;
module_param_named(release_window_ns, mutexlab_release_window_ns, long, 0444);
MODULE_PARM_DESC(release_window_ns, "The kernel's mutex release window as /init read it (-1: none)");

char *mutexlab_clocksource = "unknown";
module_param_named(clocksource, mutexlab_clocksource, charp, 0444);
MODULE_PARM_DESC(clocksource, "The guest's clocksource as /init read it");

/*
 * Opens the meta record with what every run reports about the guest; the
 * caller adds its own fields and closes it.
 */
void report_guest_meta(void)
{
	results_printf("{\"type\":\"meta\",\"uname_r\":\"%s\",\"uname_v\":\"%s\",\"online_cpus\":%u,\"clocksource\":\"%s\",\"sizeof_mutex\":%zu,",
		       init_utsname()->release, init_utsname()->version,
		       num_online_cpus(), mutexlab_clocksource,
		       sizeof(struct mutex));
	/* A kernel without the lab's release window reports null. */
	if (mutexlab_release_window_ns >= 0)
		results_printf("\"release_window_ns\":%ld,",
			       mutexlab_release_window_ns);
	else
		results_printf("\"release_window_ns\":null,");
}

static char *check;
module_param(check, charp, 0444);
MODULE_PARM_DESC(check, "Run this correctness check instead of the benchmark");

static int __init mutexlab_init(void)
{
	int ret;

	ret = check ? check_prepare(check) : bench_prepare();
	if (ret)
		return ret;
	ret = results_init();
	if (ret)
		return ret;
	/* Verdicts go to KTAP: a failed init would unload the results file. */
	if (check)
		check_run();
	else
		bench_run();
	return 0;
}

static void __exit mutexlab_exit(void)
{
	if (check)
		check_exit();
	else
		bench_exit();
	results_exit();
}

module_init(mutexlab_init);
module_exit(mutexlab_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("mutexlab: mutex design benchmark and checks run inside a guest");
