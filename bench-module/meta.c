// SPDX-License-Identifier: GPL-2.0
/*
 * What every run reports about its guest, in the meta record that opens its
 * results: the kernel, the CPUs, the clocksource and the release window.
 */
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
	results_record("meta");
	results_printf("\"uname_r\":\"%s\",\"uname_v\":\"%s\",\"online_cpus\":%u,\"clocksource\":\"%s\",\"sizeof_mutex\":%zu,",
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
