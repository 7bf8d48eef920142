#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: lab/bench.sh   (settings come from the environment; see the Makefile)
# The main job: dependencies, patched tree, kernel and module, initramfs, a
# boot in QEMU, and a self-describing result folder under RESULTS_DIR.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

VARIANT=${VARIANT:-owner-field}
PROFILE=${PROFILE:-bench}
# Sweep sizes: QUICK=1 a smoke run (about 30 s of guest time here), FULL=1
# a long one; settings given explicitly win over both.
QUICK=${QUICK:-0}
FULL=${FULL:-0}
[[ "$QUICK" =~ ^[01]$ && "$FULL" =~ ^[01]$ ]] || die "QUICK and FULL take 0 or 1"
if [ "$QUICK" = 1 ] && [ "$FULL" = 1 ]; then
	die "QUICK=1 and FULL=1 exclude each other"
elif [ "$QUICK" = 1 ]; then
	: "${REPS:=3}" "${DURATION_MS:=300}" "${WARMUP_MS:=50}"
	: "${THREADS:=1,$VCPUS,$((2 * VCPUS))}"
	: "${CS_LOOPS:=16}" "${THINK_LOOPS:=0}" "${PIN:=0}"
elif [ "$FULL" = 1 ]; then
	: "${REPS:=10}" "${DURATION_MS:=2000}" "${WARMUP_MS:=200}"
fi
DURATION_MS=${DURATION_MS:-1000}
WARMUP_MS=${WARMUP_MS:-100}
REPS=${REPS:-5}
# The contended workload sweeps every combination of CS_LOOPS, THINK_LOOPS
# and PIN (comma-separated lists) at each thread count; the other workloads
# take the first of each. Loops are the unit, so that every design gets the
# same work; one loop costs about 6 ns under TCG here (the meta record's
# loop_ps), so the defaults are C ~100 ns and ~5 us, W 0 and ~1 us.
# Shared-counter increments under the lock (critical section, C).
CS_LOOPS=${CS_LOOPS:-16,800}
# Local increments between acquisitions (think time, W).
THINK_LOOPS=${THINK_LOOPS:-0,160}
# 1: bind worker i to the (i mod vCPUs)-th vCPU; 0: the scheduler places them.
PIN=${PIN:-0,1}
# Time one mutex_lock() in this many for the latency histogram (0: none).
LATENCY_EVERY=${LATENCY_EVERY:-256}
# Comma-separated workloads of lab/catalog.toml (the module's table); the
# default is the catalog's default ones.
if [ -z "${WORKLOADS:-}" ]; then
	WORKLOADS=$(catalog workloads --default | cut -f1 | paste -sd,)
fi
# Mutexes of the sharded workload, a power of two.
SHARDS=${SHARDS:-64}
# Comma-separated thread counts (contended); empty means 1 .. VCPUS, 2*VCPUS.
THREADS=${THREADS:-}
RESULTS_DIR=${RESULTS_DIR:-$LAB_ROOT/results}
# Delay after each unlock's release point, ns (the common series' knob).
RELEASE_WINDOW_NS=${RELEASE_WINDOW_NS:-0}
# PLOTS=0 skips the set's plots (lab/interleave.sh plots once at the end).
PLOTS=${PLOTS:-1}
# CROSSCHECK=1: a second boot counts against perf lock contention and
# locktorture on the same kernel (lab/crosscheck.sh), into crosscheck/.
CROSSCHECK=${CROSSCHECK:-1}
# Its thread counts; empty means VCPUS and 2*VCPUS.
CROSSCHECK_THREADS=${CROSSCHECK_THREADS:-}
# Extra kernel parameters, e.g. the module's test-only mutexlab.test_bug=1.
GUEST_APPEND=${GUEST_APPEND:-}
# DRY_RUN=1: check every setting, print the plan, build and boot nothing.
DRY_RUN=${DRY_RUN:-0}

# The settings a result set records in its manifest.
SETTINGS=(VCPUS MEM_MB ACCEL WORKLOADS DURATION_MS WARMUP_MS REPS CS_LOOPS
	THINK_LOOPS LATENCY_EVERY THREADS PIN SHARDS QUICK FULL
	RELEASE_WINDOW_NS GUEST_APPEND)

check_settings() {
	local value
	[[ "$RELEASE_WINDOW_NS" =~ ^[0-9]+$ ]] ||
		die "RELEASE_WINDOW_NS must be a count of nanoseconds, got '$RELEASE_WINDOW_NS'"
	if [ "$RELEASE_WINDOW_NS" != 0 ] && ! uses_common_series "$VARIANT"; then
		die "variant $VARIANT has no release window (it does not build on variants/common)"
	fi
	check_guest_settings
	require_count DURATION_MS 1 3600000 "one hour per point"
	require_count WARMUP_MS 1 3600000
	require_count REPS 1 1000
	[[ "$CS_LOOPS" =~ ^[1-9][0-9]*(,[1-9][0-9]*){0,7}$ ]] ||
		die "CS_LOOPS must be up to 8 comma-separated positive integers, got '$CS_LOOPS'"
	[[ "$THINK_LOOPS" =~ ^[0-9]+(,[0-9]+){0,7}$ ]] ||
		die "THINK_LOOPS must be up to 8 comma-separated integers, got '$THINK_LOOPS'"
	[[ "$PIN" =~ ^[01](,[01])?$ ]] || die "PIN takes 0, 1, 0,1 or 1,0, got '$PIN'"
	[[ "$PLOTS" =~ ^[01]$ ]] || die "PLOTS takes 0 or 1, got '$PLOTS'"
	[[ "$CROSSCHECK" =~ ^[01]$ ]] || die "CROSSCHECK takes 0 or 1, got '$CROSSCHECK'"
	[[ "$DRY_RUN" =~ ^[01]$ ]] || die "DRY_RUN takes 0 or 1, got '$DRY_RUN'"
	[[ "$SHARDS" =~ ^[0-9]+$ ]] && ((SHARDS > 0 && (SHARDS & (SHARDS - 1)) == 0)) ||
		die "SHARDS must be a power of two, got '$SHARDS'"
	[[ "$LATENCY_EVERY" =~ ^[0-9]+$ ]] ||
		die "LATENCY_EVERY must be 0 or a positive integer, got '$LATENCY_EVERY'"
	[[ "$WORKLOADS" =~ ^[a-z_]+(,[a-z_]+)*$ ]] ||
		die "WORKLOADS must be a comma-separated list of names, got '$WORKLOADS'"
	local known
	known=$(catalog workloads | cut -f1)
	for value in ${WORKLOADS//,/ }; do
		[[ " ${known//$'\n'/ } " == *" $value "* ]] ||
			die "WORKLOADS: unknown workload '$value'; the module has: ${known//$'\n'/ }"
	done
	# The module's limits: 1..1024 threads, 64 thread counts.
	[[ -z "$THREADS" || "$THREADS" =~ ^[0-9]{1,4}(,[0-9]{1,4}){0,63}$ ]] ||
		die "THREADS must be up to 64 comma-separated counts, got '$THREADS'"
	for value in ${THREADS//,/ }; do
		((10#$value >= 1 && 10#$value <= 1024)) ||
			die "THREADS: $value is not a thread count from 1 to 1024"
	done
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

thread_points() {
	if [ -n "$THREADS" ]; then
		count_list "$THREADS"
	else
		echo $((VCPUS + 1))
	fi
}

module_append() {
	local append="mutexlab.workloads=$WORKLOADS"
	append+=" mutexlab.duration_ms=$DURATION_MS mutexlab.warmup_ms=$WARMUP_MS"
	append+=" mutexlab.reps=$REPS mutexlab.cs_loops=$CS_LOOPS mutexlab.think_loops=$THINK_LOOPS"
	append+=" mutexlab.pin=$PIN mutexlab.shards=$SHARDS"
	append+=" mutexlab.latency_every=$LATENCY_EVERY"
	[ -z "$THREADS" ] || append+=" mutexlab.threads=$THREADS"
	[ "$RELEASE_WINDOW_NS" = 0 ] || append+=" mutex_release_window_ns=$RELEASE_WINDOW_NS"
	printf '%s %s\n' "$append" "$GUEST_APPEND"
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
	timed_step initramfs make_initramfs
	local guest_status=0
	timed_step guest run_benchmark || guest_status=$?
	cat "$STEP_TIMES_FILE" >"$OUT/steps.txt"
	finish_result_set "$guest_status"
	[ "$PLOTS" = 0 ] || plot_result_set
	[ "$CROSSCHECK" = 0 ] || cross_check_result_set
}

main "$@"
