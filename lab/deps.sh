#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: lab/deps.sh [lava]
# Installs the Debian packages the lab needs when run as root; otherwise
# prints the exact apt-get line to run and fails. Fast when nothing is missing.
# With "lava", also LAVA's dispatcher (make lava-job checks its job against
# LAVA's schema; the tests run it with lava-run): not needed by make bench.
# Installed when run as root; for another user its absence is only said (the
# LAVA tests skip), so that make test works as the README's second command.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

PACKAGES=(
	"$KERNEL_SOURCE_PACKAGE" gcc make flex bison bc libelf-dev libssl-dev
	ccache xz-utils git perl cpio busybox-static qemu-system-x86
	linux-perf python3 python3-matplotlib python3-scipy python3-statsmodels
	python3-pytest python3-pytest-timeout python3-ply python3-git python3-yaml python3-jsonschema
	shellcheck spin
)
LAVA_PACKAGES=(lava-dispatcher lava-common)

missing_packages() {
	local pkg
	for pkg in "${PACKAGES[@]}"; do
		[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = 'install ok installed' ] ||
			printf '%s\n' "$pkg"
	done
}

main() {
	local -a missing
	case "${1:-}" in
	"") ;;
	lava)
		if [ "$(id -u)" = 0 ]; then
			PACKAGES+=("${LAVA_PACKAGES[@]}")
		else
			PACKAGES=("${LAVA_PACKAGES[@]}")
			mapfile -t missing < <(missing_packages)
			[ "${#missing[@]}" = 0 ] ||
				log "note: ${missing[*]} not installed: the LAVA tests skip (as root: make deps-test)"
			return 0
		fi
		;;
	*) die "lab/deps.sh takes nothing or 'lava', got '$1'" ;;
	esac
	mapfile -t missing < <(missing_packages)
	[ "${#missing[@]}" -gt 0 ] || return 0
	local -a install=(apt-get install -y --no-install-recommends "${missing[@]}")
	if [ "$(id -u)" != 0 ]; then
		die "missing Debian packages; run: sudo apt-get update && sudo ${install[*]}"
	fi
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	"${install[@]}"
}

main "$@"
