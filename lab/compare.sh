#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: VARIANTS="owner-field tri-state count-only legacy" [ROUNDS=3] lab/compare.sh
#        SETS="results/a/... results/b/..." lab/compare.sh
# Runs the variants interleaved (lab/interleave.sh; bench settings as for
# make bench) or takes existing result sets, then writes plots and report.md
# to $RESULTS_DIR/compare/<UTC time>/.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

RESULTS_DIR=${RESULTS_DIR:-$(setting_default RESULTS_DIR compare)}
export RESULTS_DIR

# DRY_RUN=1: each variant's bench plan (every setting checked), or the sets.
print_plan() {
	local variant set
	if [ -n "${SETS:-}" ]; then
		printf 'plan: make compare of existing sets (dry run: nothing booted)\n'
		for set in $SETS; do
			[ -f "$set/manifest.json" ] || die "$set is not a result set (no manifest.json)"
			printf '  set: %s\n' "$set"
		done
	else
		[ -n "${VARIANTS:-}" ] || die 'give VARIANTS="a b ..." to run, or SETS="dir ..." to reuse'
		printf 'plan: make compare: %s round(s) of %s, interleaved (dry run: nothing built or booted)\n' \
			"${ROUNDS:-$(setting_default ROUNDS compare)}" "$VARIANTS"
		for variant in $VARIANTS; do
			VARIANT=$variant "$LAB_ROOT/lab/bench.sh" | sed 's/^/  /'
		done
	fi
	printf '  report: %s/compare/<UTC time>/report.md\n' "$RESULTS_DIR"
}

main() {
	local out rounds_file
	local -a sets
	if [ "${DRY_RUN:-0}" = 1 ]; then
		print_plan
		return 0
	fi
	out=$(unique_folder "$RESULTS_DIR/compare/$(date -u +%Y%m%dT%H%M%SZ)")
	if [ -n "${SETS:-}" ]; then
		read -ra sets <<<"$SETS"
	else
		[ -n "${VARIANTS:-}" ] || die 'give VARIANTS="a b ..." to run, or SETS="dir ..." to reuse'
		: "${ROUNDS:=$(setting_default ROUNDS compare)}"
		export ROUNDS
		rounds_file="$out/rounds.txt"
		log "running ${VARIANTS} interleaved, $ROUNDS round(s); rounds in $rounds_file"
		"$LAB_ROOT/lab/interleave.sh" | tee "$rounds_file"
		mapfile -t sets < <(cut -d' ' -f3- "$rounds_file")
	fi
	[ "${#sets[@]}" -gt 0 ] || die "no result sets to compare"
	local -a mix=()
	[ "${MIX_MACHINES:-0}" = 0 ] || mix=(--mix-machines)
	# Its status is the caller's (2 bad input or a full disk, 5 a bug); a
	# report folder that got nothing is not left behind.
	"$PYTHON" "$LAB_ROOT/analysis/compare.py" --checks-dir "$RESULTS_DIR" "${mix[@]}" \
		"$out" "${sets[@]}" || {
		local status=$?
		rmdir "$out" 2>/dev/null || :
		exit "$status"
	}
	log "report: $out/report.md"
	name_set "$out"
}

main "$@"
