#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: lab/bench.sh   (settings come from the environment; see the Makefile)
# The main job: dependencies, patched tree, kernel and module, initramfs, a
# boot in QEMU, and a self-describing result folder under RESULTS_DIR.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# Every setting (lab/settings.toml, make help): from the environment or its
# default, QUICK=1 and FULL=1 choosing other defaults for the sweep's size;
# each checked before anything is built.
load_settings bench
# The settings a result set records in its manifest.
mapfile -t SETTINGS < <(recorded_settings bench)
[ "${#SETTINGS[@]}" -gt 0 ] || die "lab/settings.toml records no setting of make bench"

# What the table cannot know: whether the variant has a window to open.
check_settings() {
	if [ "$RELEASE_WINDOW_NS" != 0 ] && ! uses_common_series "$VARIANT"; then
		die "variant $VARIANT has no release window (it does not build on variants/common)"
	fi
}

# Points per repetition, as the module runs them (lab/catalog.py): contended
# one per thread count and setting, sharded and locktorture_cs one per thread
# count, the others one each.
points_per_rep() {
	local settings
	settings=$(($(count_list "$CS_LOOPS") * $(count_list "$THINK_LOOPS") * $(count_list "$PIN")))
	catalog points-per-rep "$WORKLOADS" "$settings" "$(thread_points)"
}

count_list() {
	tr ',' '\n' <<<"$1" | wc -l
}

# THREADS is never empty: lab/settings.toml defaults it from VCPUS.
thread_points() {
	count_list "$THREADS"
}

module_append() {
	local append="mutexlab.workloads=$WORKLOADS"
	append+=" mutexlab.duration_ms=$DURATION_MS mutexlab.warmup_ms=$WARMUP_MS"
	append+=" mutexlab.reps=$REPS mutexlab.cs_loops=$CS_LOOPS mutexlab.think_loops=$THINK_LOOPS"
	append+=" mutexlab.pin=$PIN mutexlab.shards=$SHARDS"
	append+=" mutexlab.latency_every=$LATENCY_EVERY"
	append+=" mutexlab.threads=$THREADS"
	[ "$RELEASE_WINDOW_NS" = 0 ] || append+=" mutex_release_window_ns=$RELEASE_WINDOW_NS"
	printf '%s %s %s\n' "$append" "$(channel_append)" "$GUEST_APPEND"
}

make_initramfs() {
	"$LAB_ROOT/guest/mkinitramfs.sh" "$BUILD/bench-module/mutexlab.ko" "$OUT/initramfs.cpio"
}

# The guest's measuring time, s. The unlock probe takes a few ms a round;
# 1 s covers it.
expected_seconds() {
	echo $(($(points_per_rep) * REPS * (DURATION_MS + WARMUP_MS) / 1000 + 2))
}

run_benchmark() {
	boot_guest "$BUILD" "$OUT/initramfs.cpio" "$OUT" "$(expected_seconds)" "$(module_append)"
}

# DRY_RUN=1: what a run would do, after every check, and nothing else.
print_plan() {
	local name patch
	printf 'plan: make bench VARIANT=%s PROFILE=%s (dry run: nothing built or booted)\n' \
		"$VARIANT" "$PROFILE"
	printf '  series, in order:\n'
	while IFS= read -r patch; do
		printf '    %s\n' "${patch#"$LAB_ROOT"/}"
	done < <(variant_patches "$VARIANT")
	printf '  kernel: %s\n' "$(build_dir "$VARIANT" "$PROFILE")"
	printf '  guest: %s vCPUs, %s MB, accel %s; %s points a repetition, %s s of measuring\n' \
		"$VCPUS" "$MEM_MB" "$ACCEL" "$(points_per_rep)" "$(expected_seconds)"
	printf '  module: %s\n' "$(module_append)"
	printf '  result set: %s/%s/<UTC time>-%s\n' "$RESULTS_DIR" "$VARIANT" "$(hostname -s)"
	printf '  plots: %s, cross-check boot: %s\n' "$PLOTS" "$CROSSCHECK"
	for name in "${SETTINGS[@]}"; do
		printf '  %s=%s\n' "$name" "${!name}"
	done
}


# Whatever the guest managed to send is parsed and described, pass or fail.
finish_result_set() {
	local guest_status=$1 parse_status=0
	[ -f "$OUT/results.raw" ] || : >"$OUT/results.raw"
	"$PYTHON" "$LAB_ROOT/analysis/results.py" "$OUT/results.raw" "$OUT/results.json" "$VCPUS" ||
		parse_status=$?
	rm -f "$OUT/initramfs.cpio"
	write_manifest "${SETTINGS[@]}"
	[ -z "${INTERRUPTED:-}" ] ||
		die "interrupted (SIG$INTERRUPTED); result set kept in $OUT (outcome interrupted)"
	if [ "$guest_status" != 0 ] || [ "$parse_status" != 0 ]; then
		die "run of $VARIANT failed; result set kept in $OUT"
	fi
	log "result set: $OUT"
}

# The set's plots in $OUT/plots, against the newest owner-field bench set
# measured alike, when there is one. A failed plot costs the result set
# nothing.
plot_result_set() {
	if "$PYTHON" "$LAB_ROOT/analysis/compare.py" --checks-dir "$RESULTS_DIR" \
		--baseline-from "$RESULTS_DIR" "$OUT/plots" "$OUT" >/dev/null; then
		log "plots: $OUT/plots/report.md"
	else
		log "warning: plotting failed; the result set itself is complete"
	fi
}

# A failed cross-check costs the result set nothing; it says so loudly.
cross_check_result_set() {
	if ! VARIANT=$VARIANT PROFILE=$PROFILE VCPUS=$VCPUS MEM_MB=$MEM_MB ACCEL=$ACCEL \
		DURATION_MS=$DURATION_MS CS_LOOPS=$CS_LOOPS \
		THINK_LOOPS=$THINK_LOOPS CROSSCHECK_THREADS=$CROSSCHECK_THREADS \
		timed_step crosscheck "$LAB_ROOT/lab/crosscheck.sh" "$OUT"; then
		log "WARNING: the cross-check failed (see $OUT/crosscheck/); the result set itself is complete"
	fi
}

main() {
	require_variant "$VARIANT"
	require_path_name PROFILE "$PROFILE"
	check_settings
	if [ "$DRY_RUN" = 1 ]; then
		print_plan
		return 0
	fi
	STEP_TIMES_FILE=$(mktemp)
	trap 'rm -f "$STEP_TIMES_FILE"' EXIT
	prepare_kernel

	new_result_folder
	timed_step initramfs make_initramfs || abandon_set "$OUT/initramfs.cpio"
	local guest_status=0
	timed_step guest run_benchmark || guest_status=$?
	cat "$STEP_TIMES_FILE" >"$OUT/steps.txt" || die_unwritable "$OUT/steps.txt"
	finish_result_set "$guest_status"
	[ "$PLOTS" = 0 ] || plot_result_set
	[ "$CROSSCHECK" = 0 ] || cross_check_result_set
}

# lab/bundle.sh sources this file for its settings and the guest's command
# line; run, it is make bench.
[ "${BASH_SOURCE[0]}" != "$0" ] || main "$@"
