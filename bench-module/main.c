// SPDX-License-Identifier: GPL-2.0
/*
 * mutexlab: measure or check a mutex design from inside a guest kernel.
 *
 * Loading the module runs the benchmark sweep (bench.c), or with check=NAME
 * one correctness check (check.c), all inside its init; results stream out
 * through debugfs mutexlab/results (results.c) while it runs. This file
 * only chooses between the two: the parts it calls never call back.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

#include "mutexlab.h"

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
