// SPDX-License-Identifier: GPL-2.0
/*
 * The watch check's self-test: which kinds of access to a watched word trap
 * on this machine, reported with the check's record.
 */
#include <linux/atomic.h>

#include "mutexlab.h"
#include "checks.h"

static const char * const probe_names[NR_PROBES] = {
	"load", "store", "cmpxchg", "or", "xchg",
};

/*
 * Does each kind of access to the unlocked mutex's first word trap? The
 * designs release with locked read-modify-writes; an emulator that did not
 * check watchpoints on them would hide exactly the release. Each access
 * leaves the word as it was.
 */
void watch_probe_kinds(atomic_long_t *word, atomic_t *traps, bool *trapped)
{
	long old;
	int kind, before;

	for (kind = 0; kind < NR_PROBES; kind++) {
		before = atomic_read(traps);
		old = atomic_long_read(word);
		switch (kind) {
		case PROBE_LOAD:
			break;
		case PROBE_STORE:
			atomic_long_set(word, old);
			break;
		case PROBE_CMPXCHG:
			atomic_long_cmpxchg(word, old, old);
			break;
		case PROBE_OR:
			atomic_long_or(0, word);
			break;
		case PROBE_XCHG:
			atomic_long_xchg(word, old);
			break;
		}
		/* The load above traps too: count what the kind's access added. */
		trapped[kind] = atomic_read(traps) - before >
				(kind == PROBE_LOAD ? 0 : 1);
	}
}

void watch_report_probes(const bool *trapped)
{
	int kind;

	results_printf("\"traps_on\":{");
	for (kind = 0; kind < NR_PROBES; kind++)
		results_printf("%s\"%s\":%s", kind ? "," : "",
			       probe_names[kind], trapped[kind] ? "true" : "false");
	results_printf("},");
}
