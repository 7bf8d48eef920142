#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: VARIANTS="stock owner-field" [ROUNDS=3] lab/interleave.sh
# Boots each variant in turn, ROUNDS times (A B, B A, A B, ...), so that
# drift of the machine hits every variant alike. Other settings are
# lab/bench.sh's.
# Prints one line per result set: round, variant, folder.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

VARIANTS=${VARIANTS:?VARIANTS="a b ..." is required}
ROUNDS=${ROUNDS:-$(setting_default ROUNDS compare)}
RESULTS_DIR=${RESULTS_DIR:-$(setting_default RESULTS_DIR compare)}
# Plotting each round's set would put host work between the rounds, and a
# cross-check boot a round of its own.
PLOTS=0
CROSSCHECK=0
export RESULTS_DIR PLOTS CROSSCHECK

read -ra variants <<<"$VARIANTS"
# Build everything first: a build in the middle would skew the rounds.
# Their output goes with the log, to stderr: stdout carries only the rounds.
for variant in "${variants[@]}"; do
	require_variant "$variant"
	"$LAB_ROOT/lab/tree.sh" "$variant" >&2
	"$LAB_ROOT/lab/build.sh" "$variant" "${PROFILE:-bench}" >&2
done
for round in $(seq 1 "$ROUNDS"); do
	read -ra order <<<"$(round_order "$round" "${variants[@]}")"
	for variant in "${order[@]}"; do
		log "round $round/$ROUNDS: $variant"
		made=$(VARIANT=$variant set_made_by "$LAB_ROOT/lab/bench.sh") ||
			die "round $round: the $variant run failed (see above); its set: ${made:-none}"
		printf '%s %s %s\n' "$round" "$variant" "$made"
	done
done
