/* SPDX-License-Identifier: GPL-2.0 */
/* mutexlab: what the module's parts share. */
#ifndef MUTEXLAB_H
#define MUTEXLAB_H

#include <linux/compiler.h>
#include <linux/types.h>

/* meta.c: what every run reports about the guest */
extern long mutexlab_release_window_ns;
extern char *mutexlab_clocksource;
void report_guest_meta(void);

/*
 * results.c: the results channel, debugfs mutexlab/results: KTAP, with each
 * data record a JSON object on a diagnostic line ("# {...}")
 */
int results_init(void);
void results_exit(void);
__printf(1, 2) void results_printf(const char *fmt, ...);
void results_record(const char *type);
void results_ktap(int nr, bool ok, const char *check, const char *name,
		  const char *why);
void results_finish(void);
bool results_overflowed(void);
void results_wait_forwarded(void);

/* events.c: the kernel's mutex lock events, where it counts them */
#define NR_MUTEX_EVENTS	8
void lock_events_get(void);
void lock_events_put(void);
bool snapshot_events(u64 *counts);
void report_event_deltas(bool have, const u64 *before, const u64 *after);

/* latency.c: HDR-style latency histograms (see there) */
#define LATENCY_SUB_BITS	4
#define LATENCY_SUB_BUCKETS	(1 << LATENCY_SUB_BITS)
/*
 * Values from 2^(LATENCY_MAX_SHIFT + LATENCY_SUB_BITS + 1) ns (~18 min) up
 * share the last bucket.
 */
#define LATENCY_MAX_SHIFT	35
#define LATENCY_BUCKETS		((LATENCY_MAX_SHIFT + 2) * LATENCY_SUB_BUCKETS)
unsigned int latency_bucket(u64 ns);
void report_latency_hist(const char *key, const u64 *before, const u64 *after);

/* floors.c: the clocks' and the fast-path atomics' costs, in this boot */
void report_floors(void);

/* bench.c: the benchmark sweep (the default; bench.h for its parts) */
int bench_prepare(void);
void bench_run(void);
void bench_exit(void);

/* check.c: one correctness check, chosen with check=NAME (checks.h) */
int check_prepare(const char *name);
void check_run(void);
void check_exit(void);

/* threads.c: the module's kthreads, each held by a reference */
struct task_struct;
__printf(5, 6) int mutexlab_thread_create(struct task_struct **task,
					  int (*fn)(void *), void *data,
					  int cpu, const char *fmt, ...);
__printf(5, 6) int mutexlab_thread_start(struct task_struct **task,
					 int (*fn)(void *), void *data,
					 int cpu, const char *fmt, ...);
void mutexlab_thread_stop(struct task_struct *task);

#endif /* MUTEXLAB_H */
