#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: [BASE=owner-field] [NEW=variant] [BASE_VARIANTS_DIR=dir] \
#        [NEW_VARIANTS_DIR=dir] [PAIRS=5] \
#        [SETS_PER_SIDE=3] [BASE_APPEND=...] [NEW_APPEND=...] [THRESHOLD=5] \
#        lab/calibrate_regress.sh   (make calibrate; defaults: lab/settings.toml)
# Runs BASE and NEW in turn (bench settings as for make bench), SETS_PER_SIDE
# boots each per comparison, PAIRS comparisons, and asks analysis/regress.py
# about each (at THRESHOLD percent), the boots of the two sides paired in the
# order they ran. With NEW unset (NEW=BASE) it is an A/A test: every
# comparison that flags anything is a family-wise false alarm. With NEW a
# slowed mutant (NEW=slow-lock NEW_VARIANTS_DIR=tests/mutants) it shows
# what is caught.
# BASE_APPEND and NEW_APPEND go on each side's kernel command line: with
# BASE=NEW=slow-lock, NEW_APPEND=mutex.test_delay_loops=N slows one kernel
# by a chosen amount, so that only the boot parameter differs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# BASE, NEW, PAIRS, SETS_PER_SIDE, the appends, THRESHOLD: lab/settings.toml's
# calibrate job, checked there; each boot is a make bench (bench's settings).
load_settings calibrate
NEW=${NEW:-$BASE}
BASE_VARIANTS_DIR=${BASE_VARIANTS_DIR:-$VARIANTS_DIR}
NEW_VARIANTS_DIR=${NEW_VARIANTS_DIR:-$VARIANTS_DIR}
export PLOTS=0 CROSSCHECK=0

# Prints the new set of one run. Called in $(...), which does not inherit
# errexit: a failed run must say so itself, or nothing would be counted
# for it without a word.
run_one() {
	local variant=$1 dir=$2 append=$3 made
	made=$(VARIANT=$variant VARIANTS_DIR=$dir GUEST_APPEND=$append \
		set_made_by "$LAB_ROOT/lab/bench.sh") ||
		die "the $variant run failed (see above); calibration stopped, nothing counted for it"
	[ -n "$made" ] || die "the $variant run made no new result set"
	printf '%s\n' "$made"
}

main() {
	local pair side base_sets new_sets out status
	if [ "${DRY_RUN:-0}" = 1 ]; then
		printf 'plan: calibrate: %s comparison(s) of %s against %s, %s boot(s) a side each, threshold %s%% (dry run: nothing built or booted)\n' \
			"$PAIRS" "$NEW" "$BASE" "$SETS_PER_SIDE" "$THRESHOLD"
		VARIANT=$BASE VARIANTS_DIR=$BASE_VARIANTS_DIR GUEST_APPEND=$BASE_APPEND \
			"$LAB_ROOT/lab/bench.sh" | sed 's/^/  base /'
		VARIANT=$NEW VARIANTS_DIR=$NEW_VARIANTS_DIR GUEST_APPEND=$NEW_APPEND \
			"$LAB_ROOT/lab/bench.sh" | sed 's/^/  new /'
		return 0
	fi
	out=$(unique_folder "$RESULTS_DIR/calibration/$(date -u +%Y%m%dT%H%M%SZ)-$BASE-vs-$NEW-x$SETS_PER_SIDE")
	for pair in $(seq 1 "$PAIRS"); do
		base_sets="" new_sets=""
		for side in $(seq 1 "$SETS_PER_SIDE"); do
			log "comparison $pair/$PAIRS, run $side/$SETS_PER_SIDE: $BASE, then $NEW"
			base_sets+="${base_sets:+,}$(run_one "$BASE" "$BASE_VARIANTS_DIR" "$BASE_APPEND")"
			new_sets+="${new_sets:+,}$(run_one "$NEW" "$NEW_VARIANTS_DIR" "$NEW_APPEND")"
		done
		status=0
		"$PYTHON" "$LAB_ROOT/analysis/regress.py" --threshold "$THRESHOLD" \
			--json "$out/pair$pair.json" "$base_sets" "$new_sets" >"$out/pair$pair.txt" || status=$?
		# 0 not slower or cannot tell, 1 slower, 3 nothing judged (fewer
		# than 3 boots a side, outside ACCEL=icount): each an answer to count.
		case "$status" in
		0 | 1 | 3) ;;
		*) die "regress failed on comparison $pair (exit $status); see $out/pair$pair.txt" ;;
		esac
		cat "$out/pair$pair.txt"
	done
	"$PYTHON" "$LAB_ROOT/analysis/regress.py" --tally "$out"
	log "comparisons and reports in $out"
	name_set "$out"
}

main "$@"
