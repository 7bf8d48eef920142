#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: ./run.sh [OUT_DIR]   (in a bundle made by make bundle)
# Boots the bundle's kernel, initramfs and module with the QEMU command the
# lab would run (qemu.args), on any host with QEMU and bash: no lab tree,
# no Python. Writes into OUT_DIR (default: out-<UTC time> beside this
# script) what make bench's runner writes: console.log, results.raw,
# guest-status, qemu.log; and, for make import, this host (host.txt), how
# QEMU ended (qemu-status: 124 when the watchdog stopped it) and the
# bundle's manifest. QEMU=path picks the binary.
set -euo pipefail

bundle=$(cd "$(dirname "$0")" && pwd)
out=${1:-$bundle/out-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
qemu=${QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null || { echo "run.sh: $qemu not found (install QEMU, or set QEMU=)" >&2; exit 2; }

mapfile -t args <"$bundle/qemu.args"
args=("${args[@]//@BUNDLE@/$bundle}")
args=("${args[@]//@OUT@/$out}")
watchdog=$(<"$bundle/watchdog_s")

# This host, as the lab's manifests describe one.
{
	printf 'hostname\t%s\n' "$(uname -n)"
	printf 'cpus\t%s\n' "$(nproc)"
	printf 'cpu_model\t%s\n' "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
	printf 'kernel\t%s\n' "$(uname -r)"
	printf 'qemu\t%s\n' "$("$qemu" --version | head -n1)"
} >"$out/host.txt"
cp "$bundle/manifest.json" "$bundle/kernel.config" "$bundle/qemu.args" "$out/"

echo "run.sh: booting; results in $out (watchdog ${watchdog} s)" >&2
status=0
timeout "$watchdog" "$qemu" "${args[@]}" </dev/null >"$out/qemu.log" 2>&1 || status=$?
echo "$status" >"$out/qemu-status"
echo "run.sh: QEMU ended with status $status; import with: make import RUN=$out" >&2
