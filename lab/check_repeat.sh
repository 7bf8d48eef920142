#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: RUNS=10 VARIANT=x CHECKS="free_article" lab/check_repeat.sh
# Runs make check RUNS times (other settings are lab/check.sh's) and counts,
# per check, the runs in which it failed: how reliably a hazard is caught,
# and how often a check raises a false alarm.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

RUNS=${RUNS:-10}
VARIANT=${VARIANT:-owner-field}
RESULTS_DIR=${RESULTS_DIR:-$(setting_default RESULTS_DIR check)}
export VARIANT RESULTS_DIR
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer"

verdict_outcome() {
	"$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("outcome", ""))' "$1"
}

sets=()
for run in $(seq 1 "$RUNS"); do
	log "run $run/$RUNS of make check VARIANT=$VARIANT"
	# A failing check is what is being counted, not an error.
	latest=$(set_made_by "$LAB_ROOT/lab/check.sh") || true
	# A run that failed before its checks makes no set: an older one must
	# not be counted in its place.
	[ -n "$latest" ] || die "run $run made no check set (it failed before its checks; see above)"
	[ -f "$latest/verdict.json" ] || die "run $run left no verdict (see above)"
	[ "$(verdict_outcome "$latest/verdict.json")" != interrupted ] ||
		die "run $run was interrupted; its set $latest is not counted"
	sets+=("$latest")
done
"$PYTHON" "$LAB_ROOT/analysis/check_verdict.py" --tally "${sets[@]}"
