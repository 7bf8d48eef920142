#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: guest/mkinitramfs.sh [--binary PATH]... MODULE.ko OUTPUT.cpio [PEER.ko...]
# A busybox-static initramfs whose /init is guest/init, with the lab's module
# as /mutexlab.ko, the kernel's own test modules (PEER.ko) in /modules, and
# each host binary given with --binary (perf) at its own path, with the
# shared libraries it loads.
# Uncompressed: it is built for every run and the kernel then needs no
# decompressor.
set -euo pipefail
source "$(dirname "$0")/../lab/lib.sh"

usage="usage: $0 [--binary PATH]... MODULE.ko OUTPUT.cpio [PEER.ko...]"
binaries=()
while [ "${1:-}" = --binary ]; do
	binaries+=("${2:?$usage}")
	shift 2
done
module=${1:?$usage}
output=${2:?$usage}
shift 2
busybox=${BUSYBOX:-/bin/busybox}
[ -f "$module" ] || die "no module at $module"
# ldd exits 1 on a static binary: judge its words, not its status.
[[ "$(ldd "$busybox" 2>&1 || true)" == *"not a dynamic executable"* ]] ||
	die "$busybox is not static (install busybox-static)"

# A dynamic binary and what ldd says it loads, each at its host path.
copy_with_libraries() {
	local binary=$1 root=$2 file
	[ -x "$binary" ] || die "no executable at $binary"
	for file in "$binary" $(ldd "$binary" | grep -o '/[^ ]*'); do
		mkdir -p "$root$(dirname "$file")"
		cp -L "$file" "$root$file"
	done
}

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,dev,proc,sys,modules}
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
	# The list names busybox itself; a link there would replace the binary.
	[ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
install -m 0755 "$LAB_ROOT/guest/init" "$root/init"
cp "$module" "$root/mutexlab.ko"
for peer in "$@"; do
	[ -f "$peer" ] || die "no module at $peer"
	cp "$peer" "$root/modules/"
done
for binary in "${binaries[@]}"; do
	copy_with_libraries "$binary" "$root"
done
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) >"$output.tmp"
mv "$output.tmp" "$output"
