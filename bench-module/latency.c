// SPDX-License-Identifier: GPL-2.0
/*
 * mutexlab: latency histograms with HDR-style buckets.
 *
 * Plain log2 buckets put a change of latency at 0, -50% or +100%: a 10%
 * slower handoff is invisible. Here every power of two is split into
 * LATENCY_SUB_BUCKETS linear buckets, so a bucket is at most 1/16 of its
 * lower bound wide (below 32 ns every ns has its own bucket). The index is
 * shift * LATENCY_SUB_BUCKETS + (ns >> shift), shift being how far ns must
 * move right to fit in LATENCY_SUB_BITS + 1 bits; analysis/latency.py
 * inverts it.
 */
#include <linux/log2.h>

#include "mutexlab.h"

unsigned int latency_bucket(u64 ns)
{
	unsigned int shift = 0;

	if (ns >= LATENCY_SUB_BUCKETS)
		shift = ilog2(ns) - LATENCY_SUB_BITS;
	if (shift > LATENCY_MAX_SHIFT)
		return LATENCY_BUCKETS - 1;
	return shift * LATENCY_SUB_BUCKETS + (ns >> shift);
}

/*
 * "key":{"sub_bits":B,"counts":[[bucket,count],...]}, with the buckets that
 * changed between before (NULL: all zero) and after.
 */
void report_latency_hist(const char *key, const u64 *before, const u64 *after)
{
	bool first = true;
	int b;

	results_printf("\"%s\":{\"sub_bits\":%d,\"counts\":[", key,
		       LATENCY_SUB_BITS);
	for (b = 0; b < LATENCY_BUCKETS; b++) {
		u64 n = after[b] - (before ? before[b] : 0);

		if (!n)
			continue;
		results_printf("%s[%d,%llu]", first ? "" : ",", b, n);
		first = false;
	}
	results_printf("]}");
}
