#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: lab/crosscheck.sh RESULT_SET   (settings from the environment, as
# lab/bench.sh's: VARIANT PROFILE VCPUS DURATION_MS CS_LOOPS THINK_LOOPS
# CROSSCHECK_THREADS)
# Our counts against the kernel's own tools, on the kernel the result set was
# measured on: one boot that runs the module's contended workload once per
# thread count under `perf lock record`, then perf's contention report, then
# the module's locktorture_cs workload and locktorture (torture_type=
# mutex_lock) for the same time at the same thread counts (guest/init). Everything goes to RESULT_SET/crosscheck/,
# with crosscheck.json and crosscheck.md comparing the numbers.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

OUT=$(realpath "${1:?usage: $0 RESULT_SET}")
# make bench's settings (lab/settings.toml), as it exported them or their
# defaults when run alone. The first critical section and think time of the
# sweep are the contended series the counts are compared on.
load_settings bench
CROSSCHECK_THREADS=${CROSSCHECK_THREADS:-$VCPUS,$((2 * VCPUS))}
PERF=${PERF:-/usr/bin/perf}
BUILD=$(build_dir "$VARIANT" "$PROFILE")
CROSS="$OUT/crosscheck"

[ -x "$PERF" ] || die "no perf at $PERF (install linux-perf: make deps)"

# Every lock timed (latency_every=1): our wait total is then a sum, not an
# estimate. No warm-up: perf sees the whole run, and so should we.
module_append() {
	local append="mutexlab.crosscheck=1 mutexlab.workloads=contended"
	append+=" mutexlab.threads=$CROSSCHECK_THREADS mutexlab.reps=1"
	append+=" mutexlab.duration_ms=$DURATION_MS mutexlab.warmup_ms=0"
	append+=" mutexlab.cs_loops=${CS_LOOPS%%,*} mutexlab.think_loops=${THINK_LOOPS%%,*}"
	append+=" mutexlab.pin=0 mutexlab.latency_every=1 mutexlab.unlock_probe_rounds=0"
	append+=" mutexlab.peer_threads=$CROSSCHECK_THREADS"
	append+=" mutexlab.peer_secs=$(printf '%d.%03d' $((DURATION_MS / 1000)) $((DURATION_MS % 1000)))"
	printf '%s\n' "$append"
}

make_initramfs() {
	"$LAB_ROOT/guest/mkinitramfs.sh" --binary "$PERF" "$BUILD/bench-module/mutexlab.ko" \
		"$CROSS/initramfs.cpio" "$BUILD/kernel/torture.ko" \
		"$BUILD/kernel/locking/locktorture.ko"
}

# Two points and one locktorture run per thread count, and perf's report.
expected_seconds() {
	local counts
	counts=$(tr ',' '\n' <<<"$CROSSCHECK_THREADS" | wc -l)
	echo $((counts * 3 * DURATION_MS / 1000 + 60))
}

main() {
	mkdir -p "$CROSS"
	log "cross-check against perf lock contention and locktorture: $CROSS"
	make_initramfs
	local status=0
	boot_guest "$BUILD" "$CROSS/initramfs.cpio" "$CROSS" "$(expected_seconds)" \
		"$(module_append)" || status=$?
	rm -f "$CROSS/initramfs.cpio"
	[ -f "$CROSS/results.raw" ] || : >"$CROSS/results.raw"
	"$PYTHON" "$LAB_ROOT/analysis/crosscheck.py" "$CROSS" "$VCPUS" || status=$?
	return "$status"
}

main "$@"
