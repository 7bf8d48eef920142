#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: guest/mkinitramfs.sh MODULE.ko OUTPUT.cpio [PEER.ko...]
# A busybox-static initramfs whose /init is guest/init, with the lab's module
# as /mutexlab.ko and the kernel's own test modules (PEER.ko) in /modules.
# Uncompressed: it is built for every run and the kernel then needs no
# decompressor.
set -euo pipefail
source "$(dirname "$0")/../lab/lib.sh"

module=${1:?usage: $0 MODULE.ko OUTPUT.cpio [PEER.ko...]}
output=${2:?usage: $0 MODULE.ko OUTPUT.cpio [PEER.ko...]}
shift 2
busybox=${BUSYBOX:-/bin/busybox}
[ -f "$module" ] || die "no module at $module"
# ldd exits 1 on a static binary: judge its words, not its status.
[[ "$(ldd "$busybox" 2>&1 || true)" == *"not a dynamic executable"* ]] ||
	die "$busybox is not static (install busybox-static)"

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
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) >"$output.tmp"
mv "$output.tmp" "$output"
