#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: guest/mkinitramfs.sh MODULE.ko OUTPUT.cpio
# A busybox-static initramfs whose /init is guest/init. Uncompressed: it is
# built for every run and the kernel then needs no decompressor.
set -euo pipefail
source "$(dirname "$0")/../lab/lib.sh"

module=${1:?usage: $0 MODULE.ko OUTPUT.cpio}
output=${2:?usage: $0 MODULE.ko OUTPUT.cpio}
busybox=${BUSYBOX:-/bin/busybox}
[ -f "$module" ] || die "no module at $module"
# ldd exits 1 on a static binary: judge its words, not its status.
[[ "$(ldd "$busybox" 2>&1 || true)" == *"not a dynamic executable"* ]] ||
	die "$busybox is not static (install busybox-static)"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,dev,proc,sys}
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
	# The list names busybox itself; a link there would replace the binary.
	[ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
install -m 0755 "$LAB_ROOT/guest/init" "$root/init"
cp "$module" "$root/mutexlab.ko"
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) >"$output.tmp"
mv "$output.tmp" "$output"
