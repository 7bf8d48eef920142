/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mutexlab: what the correctness checks share. check.c chooses one by name
 * and hands it its settings; check_exclusion.c, check_free.c and watch.c
 * run them.
 */
#ifndef MUTEXLAB_CHECKS_H
#define MUTEXLAB_CHECKS_H

#include <linux/atomic.h>

/* What a check runs with: the module parameters, checked. */
struct check_args {
	const char *name;		/* the check's KTAP prefix */
	unsigned int duration_ms;	/* check_ms: the longest run */
	unsigned int nr_threads;
	unsigned int rounds;		/* check_rounds: objects freed */
	unsigned int hold_us;
	unsigned int window_us;		/* the release window as /init read it */
};

/* Each returns the KTAP results it passed. */
int run_exclusion(const struct check_args *a);
int run_free_article(const struct check_args *a);
int run_free_amdgpu(const struct check_args *a);
int run_free_control(const struct check_args *a);
int run_watch(const struct check_args *a);

/* watch_probe.c: the watch check's self-test */
enum probe_kind { PROBE_LOAD, PROBE_STORE, PROBE_CMPXCHG, PROBE_OR,
		  PROBE_XCHG, NR_PROBES };
void watch_probe_kinds(atomic_long_t *word, atomic_t *traps, bool *trapped);
void watch_report_probes(const bool *trapped);

#endif /* MUTEXLAB_CHECKS_H */
