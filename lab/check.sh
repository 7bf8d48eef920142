#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: lab/check.sh   (settings come from the environment; see the Makefile)
# make check VARIANT=x: the variant built in the check profile (KASAN), then
# one guest boot per check, so that a check that crashes the guest costs no
# other check its verdict. Writes RESULTS_DIR/VARIANT/check-<UTC>-<host>/
# with one folder per check and verdict.json; exits 1 when a check failed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# Every setting (lab/settings.toml, make help): from the environment or its
# default, each checked before anything is built. check (KASAN) or debug
# (KASAN, CONFIG_DEBUG_MUTEXES and lockdep; the correctness checks only:
# lockdep turns the fast paths off, so the free-safety hazard is not the one
# the benchmark runs).
load_settings check
case "$PROFILE" in
check | debug) ;;
*) die "make check takes PROFILE=check or PROFILE=debug, got '$PROFILE'" ;;
esac
# The settings a result set records in its manifest.
mapfile -t SETTINGS < <(recorded_settings check)
[ "${#SETTINGS[@]}" -gt 0 ] || die "lab/settings.toml records no setting of make check"

# The catalog's checks (lab/catalog.toml), read once: how each runs and how
# long it takes with these settings. The profile's default CHECKS are the
# catalog's.
declare -A CHECK_RUNNER CHECK_RUNS_FOR CHECK_EXPECTED_S CHECK_RELEASE_WINDOW CHECK_TCG_THREADS
while IFS=$'\t' read -r name runner runs_for expected_s release_window tcg_threads; do
	CHECK_RUNNER[$name]=$runner
	CHECK_RUNS_FOR[$name]=$runs_for
	CHECK_EXPECTED_S[$name]=$expected_s
	CHECK_RELEASE_WINDOW[$name]=$release_window
	CHECK_TCG_THREADS[$name]=$tcg_threads
done < <(catalog checks "$CHECK_MS" "$PEER_SECS")
[ "${#CHECK_RUNNER[@]}" -gt 0 ] || die "lab/catalog.toml lists no checks"

# The kernel's own suites, built as modules by the check profile.
peer_modules() {
	printf '%s\n' "$BUILD/kernel/torture.ko" "$BUILD/kernel/locking/locktorture.ko" \
		"$BUILD/kernel/locking/test-ww_mutex.ko"
}

check_append() {
	local check=$1 append
	if [ "${CHECK_RUNNER[$check]}" = peer ]; then
		append="mutexlab.peer=$check"
		if [ "${CHECK_RUNS_FOR[$check]}" = peer_secs ]; then
			append+=" mutexlab.peer_secs=$PEER_SECS mutexlab.peer_threads=$((2 * VCPUS))"
		fi
	else
		append="mutexlab.check=$check mutexlab.check_ms=$CHECK_MS"
	fi
	# Only where the hazard is looked for; a kernel without the common
	# series has no window to open.
	if [[ "${CHECK_RELEASE_WINDOW[$check]}" = 1 && "$RELEASE_WINDOW_NS" != 0 ]] &&
		uses_common_series "$VARIANT"; then
		append+=" mutex_release_window_ns=$RELEASE_WINDOW_NS"
	fi
	printf '%s %s %s\n' "$append" "$(channel_append)" "$GUEST_APPEND"
}

# A crashed or failed guest is a verdict, not an error of the lab.
run_check() {
	local check=$1 dir="$OUT/$1"
	mkdir -p "$dir"
	log "check $check: $(check_append "$check")"
	boot_guest "$BUILD" "$OUT/initramfs.cpio" "$dir" "${CHECK_EXPECTED_S[$check]}" \
		"$(check_append "$check")" "${CHECK_TCG_THREADS[$check]}" ||
		log "check $check: the guest did not end cleanly"
}


main() {
	local check verdict_status=0
	require_variant "$VARIANT"
	if [ "$DRY_RUN" = 1 ]; then
		printf 'plan: make check VARIANT=%s (dry run: nothing built or booted)\n' "$VARIANT"
		printf '  kernel: %s (profile %s)\n' "$(build_dir "$VARIANT" "$PROFILE")" "$PROFILE"
		for check in $CHECKS; do
			printf '  boot %s: %s s, %s\n' "$check" "${CHECK_EXPECTED_S[$check]}" \
				"$(check_append "$check")"
		done
		return 0
	fi
	STEP_TIMES_FILE=$(mktemp)
	trap 'rm -f "$STEP_TIMES_FILE"' EXIT
	prepare_kernel

	# debug-check-*: not check-*, which make compare reads as the verdict.
	new_result_folder "$([ "$PROFILE" = check ] && echo check- || echo "$PROFILE-check-")"
	local -a peers
	mapfile -t peers < <(peer_modules)
	timed_step initramfs "$LAB_ROOT/guest/mkinitramfs.sh" \
		"$BUILD/bench-module/mutexlab.ko" "$OUT/initramfs.cpio" "${peers[@]}" ||
		abandon_set "$OUT/initramfs.cpio"
	for check in $CHECKS; do
		timed_step "$check" run_check "$check"
		# Ctrl-C or SIGTERM: the checks so far are judged, no more run.
		[ -z "${INTERRUPTED:-}" ] || break
	done
	rm -f "$OUT/initramfs.cpio"
	"$PYTHON" "$LAB_ROOT/analysis/check_verdict.py" --vmlinux "$BUILD/vmlinux" "$OUT" ||
		verdict_status=$?
	cat "$STEP_TIMES_FILE" >"$OUT/steps.txt" || die_unwritable "$OUT/steps.txt"
	write_manifest "${SETTINGS[@]}"
	[ -z "${INTERRUPTED:-}" ] ||
		die "interrupted (SIG$INTERRUPTED) in check $check; result set kept in $OUT (outcome interrupted)"
	case "$verdict_status" in
	0) log "all checks passed; result set: $OUT" ;;
	1) die "checks failed (verdict above); result set: $OUT" ;;
	*) die "could not judge the checks; result set kept in $OUT" ;;
	esac
}

main "$@"
