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

main() {
	local out rounds_file
	local -a sets
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
	"$PYTHON" "$LAB_ROOT/analysis/compare.py" --checks-dir "$RESULTS_DIR" \
		"$out" "${sets[@]}"
	log "report: $out/report.md"
}

main "$@"
