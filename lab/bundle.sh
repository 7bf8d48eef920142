#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: lab/bundle.sh   (make bundle; settings as for make bench, ACCEL=kvm or tcg)
# make bench packed for another host: the variant's kernel, the initramfs
# with the module, the QEMU arguments for VCPUS, MEM_MB and ACCEL, the
# watchdog, the manifest of what was built, and guest/run_bundle.sh as
# run.sh, in RESULTS_DIR/bundles/<variant>-<UTC time>-<host>/. Nothing in it
# needs the lab's tree: ./run.sh on a host with QEMU boots it, and
# make import RUN=<its output> turns the output into a result set.
set -euo pipefail
source "$(dirname "$0")/bench.sh"

print_bundle_plan() {
	printf 'plan: make bundle VARIANT=%s PROFILE=%s ACCEL=%s (dry run: nothing built)\n' \
		"$VARIANT" "$PROFILE" "$ACCEL"
	printf '  kernel: %s\n' "$(build_dir "$VARIANT" "$PROFILE")"
	printf '  guest: %s vCPUs, %s MB; %s s of measuring\n' "$VCPUS" "$MEM_MB" "$(expected_seconds)"
	printf '  module: %s\n' "$(module_append)"
	printf '  bundle: %s/bundles/%s-<UTC time>-%s\n' "$RESULTS_DIR" "$VARIANT" "$(hostname -s)"
}

write_bundle() {
	cp "$BUILD/arch/x86/boot/bzImage" "$OUT/bzImage"
	cp "$BUILD/.config" "$OUT/kernel.config"
	make_initramfs
	"$PYTHON" "$LAB_ROOT/guest/qemu_runner.py" --write-bundle "$OUT" \
		--kernel "$OUT/bzImage" --initrd "$OUT/initramfs.cpio" --out "$OUT" \
		--vcpus "$VCPUS" --mem-mb "$MEM_MB" --accel "$ACCEL" \
		--expected-run-s "$(expected_seconds)" --cache-dir "$LAB_CACHE" \
		--append "$(module_append)"
	install -m 0755 "$LAB_ROOT/guest/run_bundle.sh" "$OUT/run.sh"
	write_manifest "${SETTINGS[@]}"
}

bundle_main() {
	require_variant "$VARIANT"
	require_path_name PROFILE "$PROFILE"
	check_settings
	case "$ACCEL" in
	kvm | tcg) ;;
	*) die "a bundle runs on another host: give ACCEL=kvm or ACCEL=tcg, not '$ACCEL'" ;;
	esac
	[ "$VCPU_PIN" = 0 ] ||
		die "a bundle runs on another host, whose CPUs this one cannot bind: VCPU_PIN=1 is for make bench"
	if [ "$DRY_RUN" = 1 ]; then
		print_bundle_plan
		return 0
	fi
	STEP_TIMES_FILE=$(mktemp)
	trap 'rm -f "$STEP_TIMES_FILE"' EXIT
	prepare_kernel
	OUT=$(unique_folder "$RESULTS_DIR/bundles/$VARIANT-$(date -u +%Y%m%dT%H%M%SZ)-$(hostname -s)")
	timed_step bundle write_bundle
	log "bundle: $OUT (run it with $OUT/run.sh on a host with QEMU)"
}

bundle_main "$@"
