// SPDX-License-Identifier: GPL-2.0
/* The kernel's mutex lock events (the lab's common series), where it has them. */
#include <linux/build_bug.h>
#include <linux/kernel.h>
#include <linux/module.h>

#include "mutexlab.h"

/* The mutex lock events of the lab's common series, in debugfs order. */
static const char * const mutex_events[] = {
	"mutex_slowpath", "mutex_opt_lock", "mutex_opt_fail",
	"mutex_opt_nospin", "mutex_sleep", "mutex_wake", "mutex_handoff",
	"mutex_unlock_slowpath",
};

static_assert(ARRAY_SIZE(mutex_events) == NR_MUTEX_EVENTS);

/*
 * Looked up at load time, so that the module also loads on a kernel without
 * the lab's common series (the stock reference), which then has no counters.
 */
static int (*lockevent_sum)(const char *name, u64 *sum);

/* The kernel's own counters, summed over CPUs; false without them. */
bool snapshot_events(u64 *counts)
{
	size_t i;

	if (!lockevent_sum)
		return false;
	for (i = 0; i < NR_MUTEX_EVENTS; i++)
		if (lockevent_sum(mutex_events[i], &counts[i]))
			return false;
	return true;
}

/* Absent counters are reported as null, never as zeros. */
void report_event_deltas(bool have, const u64 *before, const u64 *after)
{
	size_t i;

	if (!have) {
		results_printf("\"lock_events\":null");
		return;
	}
	results_printf("\"lock_events\":{");
	for (i = 0; i < NR_MUTEX_EVENTS; i++)
		results_printf("%s\"%s\":%llu", i ? "," : "", mutex_events[i],
			       after[i] - before[i]);
	results_printf("}");
}

void lock_events_get(void)
{
	lockevent_sum = __symbol_get("lockevent_sum_by_name");
}

void lock_events_put(void)
{
	if (lockevent_sum)
		__symbol_put("lockevent_sum_by_name");
}
