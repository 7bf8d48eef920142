// SPDX-License-Identifier: GPL-2.0
/*
 * mutexlab: floors, measured in the same boot as the benchmark.
 *
 * A timed mutex_lock() contains one clock read, so the clock's cost is
 * reported for the analysis to subtract, with its spread. An uncontended
 * lock+unlock pair of any of the lab's designs cannot be cheaper than the
 * two atomic read-modify-writes of its fast paths (acquire on lock, release
 * on unlock): their cost on a private word is the floor the report sets
 * each design's uncontended pair against.
 */
#include <linux/atomic.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "mutexlab.h"

/* Back-to-back clock reads timed for each clock's cost. */
#define CLOCK_SAMPLES	1024
#define ATOMIC_PAIRS	200000

/*
 * What one ktime_get_ns() costs here, ns, on average: under TCG the
 * clocksource (hpet) is emulated, and any timing of short intervals pays it.
 */
static u64 timestamp_cost_ns(void)
{
	const unsigned int calls = 1000;
	u64 t0, t1 = 0;
	unsigned int i;

	t0 = ktime_get_ns();
	for (i = 0; i < calls; i++)
		t1 = ktime_get_ns();
	return (t1 - t0) / calls;
}

static u64 read_ktime(void)
{
	return ktime_get_ns();
}

static u64 read_local_clock(void)
{
	return local_clock();
}

/*
 * "key":{histogram} of CLOCK_SAMPLES intervals between two back-to-back
 * reads of clock: what a timing with it measures beyond the timed code.
 */
static void report_clock_cost(const char *key, u64 (*clock)(void))
{
	u64 *hist = kcalloc(LATENCY_BUCKETS, sizeof(*hist), GFP_KERNEL);
	int i;

	if (!hist) {
		results_printf("\"%s\":null,", key);
		return;
	}
	for (i = 0; i < CLOCK_SAMPLES; i++) {
		u64 t0 = clock();

		hist[latency_bucket(clock() - t0)]++;
	}
	report_latency_hist(key, NULL, hist);
	results_printf(",");
	kfree(hist);
}

/*
 * One acquire and one release compare-and-exchange on a private word, ps:
 * the atomics of a mutex fast path, without the mutex.
 */
static u64 atomic_pair_ps(void)
{
	atomic_long_t word = ATOMIC_LONG_INIT(0);
	long expected;
	u64 t0, ns;
	int i;

	t0 = ktime_get_ns();
	for (i = 0; i < ATOMIC_PAIRS; i++) {
		expected = 0;
		atomic_long_try_cmpxchg_acquire(&word, &expected, 1);
		expected = 1;
		atomic_long_try_cmpxchg_release(&word, &expected, 0);
	}
	ns = ktime_get_ns() - t0;
	return ns * 1000 / ATOMIC_PAIRS;
}

/* The floors as members of the meta record. */
void report_floors(void)
{
	results_printf("\"timestamp_ns\":%llu,", timestamp_cost_ns());
	report_clock_cost("timer_hdr_ns", read_ktime);
	report_clock_cost("local_clock_hdr_ns", read_local_clock);
	results_printf("\"atomic_pair_ps\":%llu,", atomic_pair_ps());
}
