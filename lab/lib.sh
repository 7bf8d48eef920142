# SPDX-License-Identifier: GPL-2.0
# Shared helpers and settings for the lab's shell scripts; sourced, never run.
# Every setting that more than one script needs is defined here, once.
# shellcheck disable=SC2034 # the settings are used by the sourcing scripts

LAB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB_CACHE=${LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mutexlab}
# Absolute, since git runs them from inside the kernel trees.
VARIANTS_DIR=$(realpath -m "${VARIANTS_DIR:-$LAB_ROOT/variants}")
# The series every variant builds on (the lab's instrumentation), applied
# before the variant's own patches.
COMMON_SERIES_DIR=$(realpath -m "${COMMON_SERIES_DIR:-$LAB_ROOT/variants/common}")
KERNEL_SOURCE_PACKAGE=linux-source-6.1
KERNEL_SOURCE_TARBALL=${KERNEL_SOURCE_TARBALL:-/usr/src/$KERNEL_SOURCE_PACKAGE.tar.xz}
PRISTINE_TAG=pristine

PYTHON=/usr/bin/python3

log() { printf '[mutexlab %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { printf 'mutexlab: error: %s\n' "$*" >&2; exit 1; }
# One line in 200 of a long step's output (a build log), so that it shows
# life. On stderr, as log's lines: a script's stdout is what it reports
# (interleave.sh's rounds), and build progress in it once made a make
# compare's rounds file name no result sets after an hour of boots.
show_progress() {
	local line count=0
	while IFS= read -r line; do
		count=$((count + 1))
		[ $((count % 200)) = 0 ] && printf '  ... %d lines: %s\n' "$count" "$line" >&2
	done
	return 0
}

# Debian version of the kernel source package, e.g. 6.1.192-3.
kernel_source_version() {
	dpkg-query -W -f='${Version}' "$KERNEL_SOURCE_PACKAGE" 2>/dev/null ||
		die "$KERNEL_SOURCE_PACKAGE is not installed (run: make deps)"
}

pristine_dir() { printf '%s/src/linux-%s\n' "$LAB_CACHE" "$(kernel_source_version)"; }
tree_dir() { printf '%s/trees/%s\n' "$LAB_CACHE" "$1"; }
# Inside the tree, one level down: Kbuild then names the source tree ".."
# in every command line, which is the same for every variant, so that ccache
# serves a variant the objects of another with the same .config and headers
# (a mutant of owner-field, say) instead of compiling them again.
build_dir() { printf '%s/build-%s\n' "$(tree_dir "$1")" "$2"; }

# A variant is a folder of VARIANTS_DIR with a README.md; "common" is the
# shared series, not a variant.
list_variants() {
	local dir
	for dir in "$VARIANTS_DIR"/*/; do
		[ -f "$dir/README.md" ] || continue
		dir=${dir%/}
		[ "$dir" = "${COMMON_SERIES_DIR%/}" ] && continue
		basename "$dir"
	done
}

# Names that become paths (variants, profiles): letters, digits, '.', '_'
# and '-', never "." or "..". Checked before any lookup, so that no value
# (a newline, a slash) can lead a path outside the lab's folders.
require_path_name() {
	local setting=$1 value=$2
	[[ $value =~ ^[A-Za-z0-9._-]+$ && $value != . && $value != .. ]] ||
		die "$setting '${value//$'\n'/\\n}' is not a name: use letters, digits, '.', '_' and '-'"
}

# round_order ROUND VARIANT...: the order of ROUND's boots. Counterbalanced
# rounds: every other round runs the designs in reverse (A B C, C B A, A B
# C, ...), so that a drift of the machine that is linear over two rounds
# lands on every design alike; in the same order every round, the last
# design of each carried it (README, "Regressions": the reference's drift
# and what it was worth to its first and last designs).
round_order() {
	local round=$1 i
	shift
	if ((round % 2)); then
		echo "$@"
		return
	fi
	local reversed=()
	for ((i = $#; i >= 1; i--)); do
		reversed+=("${!i}")
	done
	echo "${reversed[@]}"
}

require_variant() {
	local variant=$1 variants
	variants=$(list_variants)
	[ -n "$variant" ] || die "no VARIANT given; variants: ${variants//$'\n'/ }"
	require_path_name VARIANT "$variant"
	# Not "list_variants | grep -q": under pipefail, grep's early exit can
	# kill the writer with SIGPIPE and fail a name that is there.
	grep -qxF -- "$variant" <<<"$variants" ||
		die "unknown VARIANT '$variant'; variants in $VARIANTS_DIR: ${variants//$'\n'/ }"
	# Here, not in the subshells that list the series, where die is lost.
	variant_series_dirs "$variant" >/dev/null
}

# A variant builds on the common series unless its folder has a file named
# no-common-series (the unpatched reference, say).
uses_common_series() { [ ! -e "$VARIANTS_DIR/$1/no-common-series" ]; }

# A variant that builds on another (count-only on legacy, a test-only mutant
# on tri-state) names, in a file named extends, the variant of
# $LAB_ROOT/variants whose series it adds its patches to; that one may
# extend another in turn (tri-state on owner-field).
extended_variant() {
	local file="$2/$1/extends" base
	[ -f "$file" ] || return 0
	base=$(<"$file")
	[ -f "$LAB_ROOT/variants/$base/README.md" ] ||
		die "variant $1 extends '$base', which is not in $LAB_ROOT/variants"
	printf '%s\n' "$base"
}

# The folders whose patches make up a variant, in the order they apply:
# the common series, then each base's series from the deepest one on.
variant_series_dirs() {
	local variant=$1 dir=$VARIANTS_DIR base depth=0
	local -a chain=("$VARIANTS_DIR/$variant")
	while :; do
		# extended_variant's die only ends its subshell: stop here too.
		base=$(extended_variant "$variant" "$dir") || exit 1
		[ -n "$base" ] || break
		((++depth <= 8)) || die "variant $1: its extends files form a loop"
		chain=("$LAB_ROOT/variants/$base" "${chain[@]}")
		variant=$base dir=$LAB_ROOT/variants
	done
	if uses_common_series "$1"; then
		printf '%s\n' "$COMMON_SERIES_DIR"
	fi
	printf '%s\n' "${chain[@]}"
}

# The patches of a variant, in the order they are applied: common first.
variant_patches() {
	local variant=$1 dir patch
	local -a dirs
	mapfile -t dirs < <(variant_series_dirs "$variant")
	shopt -s nullglob
	for dir in "${dirs[@]}"; do
		for patch in "$dir"/[0-9][0-9][0-9][0-9]-*.patch; do
			printf '%s\n' "$patch"
		done
	done
	shopt -u nullglob
}

# Content hash of files given as arguments (names and contents).
hash_files() {
	local file
	for file in "$@"; do
		printf '%s\n' "$(basename "$file")"
		cat "$file"
	done | sha256sum | cut -d' ' -f1
}

series_hash() {
	local -a patches
	mapfile -t patches < <(variant_patches "$1")
	{ kernel_source_version; hash_files "${patches[@]}"; } | sha256sum | cut -d' ' -f1
}

# The config fragments of a (variant, profile), in merge order.
config_fragments() {
	local variant=$1 profile=$2
	printf '%s\n' "$LAB_ROOT/guest/config/base.config"
	[ -f "$LAB_ROOT/guest/config/$profile.config" ] ||
		die "unknown PROFILE '$profile' (no guest/config/$profile.config)"
	printf '%s\n' "$LAB_ROOT/guest/config/$profile.config"
	local dir
	while IFS= read -r dir; do
		if [ -f "$dir/config" ]; then
			printf '%s\n' "$dir/config"
		fi
	done < <(variant_series_dirs "$variant")
}

# Run a step, printing its wall time; the times go into the manifest.
STEP_TIMES_FILE=${STEP_TIMES_FILE:-}
timed_step() {
	local name=$1 start end secs status=0
	shift
	start=$(date +%s.%N)
	"$@" || status=$?
	end=$(date +%s.%N)
	secs=$(printf '%.1f' "$(echo "$end - $start" | bc)")
	log "step $name took ${secs}s$([ "$status" = 0 ] || echo ", failed ($status)")"
	if [ -n "$STEP_TIMES_FILE" ]; then
		printf '%s %s\n' "$name" "$secs" >>"$STEP_TIMES_FILE"
	fi
	return "$status"
}

# Usage: load_settings JOB
# JOB's settings (lab/settings.toml), each from the environment or its
# default, every value checked before any tree, build or boot; set and
# exported here, so that the scripts JOB runs see the same values. A bad
# value ends the job, named by lab/settings.py.
load_settings() {
	local file item
	file=$(mktemp)
	if ! "$PYTHON" "$LAB_ROOT/lab/settings.py" resolve "$1" >"$file"; then
		rm -f "$file"
		exit 1
	fi
	while IFS= read -r -d '' item; do
		printf -v "${item%%=*}" '%s' "${item#*=}"
		export "${item%%=*}"
	done <"$file"
	rm -f "$file"
}

# Usage: setting_default NAME JOB
# NAME's default for JOB (lab/settings.toml), for the scripts that default
# a setting or two without resolving a whole job.
setting_default() {
	"$PYTHON" "$LAB_ROOT/lab/settings.py" default "$1" "$2"
}

# Usage: recorded_settings JOB
# The settings JOB's manifest records, one name a line.
recorded_settings() {
	"$PYTHON" "$LAB_ROOT/lab/settings.py" names --record "$1" | tr ' ' '\n'
}

# The guest's results channel (RESULTS_CHANNEL): nothing for the serial
# ports, mutexlab.channel=console for results framed on the console.
channel_append() {
	[ "$RESULTS_CHANNEL" = serial ] || printf 'mutexlab.channel=%s\n' "$RESULTS_CHANNEL"
}

# The kernel parameters a kernel of BUILD_DIR needs, whatever it runs.
# KASAN (the check and debug profiles) boots with 4-level paging: its test
# of whether an address has shadow follows pgtable_l5_enabled(), the LA57
# bit of boot_cpu_data, which identify_cpu() clears and sets again at boot
# (6.1's arch/x86/kernel/cpu/common.c), so an interrupt in that window read
# its irq_desc, a 5-level direct-map address, as a wild access and
# panicked the guest. TCG's -cpu max and newer hosts offer LA57; 4-level
# paging has no such window.
kernel_append() {
	if grep -qsx 'CONFIG_KASAN=y' "$1/.config"; then
		printf 'no5lvl\n'
	fi
}

# Usage: boot_guest BUILD_DIR INITRAMFS OUT_DIR EXPECTED_RUN_S APPEND [TCG_THREADS]
# One boot of the (variant, profile) kernel in BUILD_DIR; QEMU's files go to
# OUT_DIR. Fails when the guest crashed, hung or reported a failed load.
# Ctrl-C, or SIGTERM (make passes it to its child), is passed to the runner,
# which stops QEMU and writes run.json with outcome "interrupted"; then
# boot_guest returns 128 + the signal and its caller finishes the set.
# The runner runs in the background because bash runs a trap only once its
# foreground child has exited, and `wait` is what a trap can interrupt.
boot_guest() {
	local pid status=0
	INTERRUPTED=
	trap 'INTERRUPTED=INT; kill -TERM "$pid" 2>/dev/null || :' INT
	trap 'INTERRUPTED=TERM; kill -TERM "$pid" 2>/dev/null || :' TERM
	trap 'INTERRUPTED=HUP; kill -TERM "$pid" 2>/dev/null || :' HUP
	"$PYTHON" "$LAB_ROOT/guest/qemu_runner.py" --kernel "$1/arch/x86/boot/bzImage" \
		--initrd "$2" --out "$3" --vcpus "$VCPUS" --mem-mb "$MEM_MB" \
		--accel "$ACCEL" --pin-vcpus "$VCPU_PIN" \
		--expected-run-s "$4" --cache-dir "$LAB_CACHE" \
		--append "$5 $(kernel_append "$1")" --tcg-threads "${6:-multi}" &
	pid=$!
	# A trapped signal ends `wait` early: wait until the runner is done.
	until wait "$pid"; status=$?; ! kill -0 "$pid" 2>/dev/null; do :; done
	trap - INT TERM HUP
	[ -z "$INTERRUPTED" ] || return "$(($(kill -l "$INTERRUPTED") + 128))"
	return "$status"
}

# The steps every job starts with: dependencies, the variant's tree, its
# kernel for PROFILE. Sets BUILD, the build folder.
prepare_kernel() {
	timed_step deps "$LAB_ROOT/lab/deps.sh"
	timed_step tree "$LAB_ROOT/lab/tree.sh" "$VARIANT"
	timed_step build "$LAB_ROOT/lab/build.sh" "$VARIANT" "$PROFILE"
	BUILD=$(build_dir "$VARIANT" "$PROFILE")
}

# Usage: unique_folder PATH
# Makes PATH, or PATH-2, PATH-3, ... when another run made it first (two
# runs started in the same second), and prints the one it made: mkdir
# without -p is the atomic test.
unique_folder() {
	local path=$1 try=$1 n=1
	mkdir -p "$(dirname "$path")"
	until mkdir "$try" 2>/dev/null; do
		[ -e "$try" ] || die "cannot create $try (permissions, or the disk is full?)"
		n=$((n + 1))
		[ "$n" -le 999 ] || die "no free folder beside $path"
		try="$path-$n"
	done
	printf '%s\n' "$try"
}

# Usage: new_result_folder [PREFIX]
# Sets OUT to a new RESULTS_DIR/VARIANT/<PREFIX><UTC>-<host>, with the
# kernel's .config in it; write_manifest names it once it is finished.
new_result_folder() {
	OUT=$(unique_folder "$RESULTS_DIR/$VARIANT/${1:-}$(date -u +%Y%m%dT%H%M%SZ)-$(hostname -s)")
	log "result folder: $OUT"
	cp "$BUILD/.config" "$OUT/kernel.config" 2>/dev/null || abandon_set "$OUT/kernel.config"
}

# Usage: die_unwritable PATH
# A write to PATH failed. A full disk (the usual cause: less than 1 MiB
# left where PATH lies) is the user's to fix: exit 2, as for bad input,
# naming the path. Anything else is the lab's failure: exit 1.
die_unwritable() {
	local path=$1 dir free_kib
	dir=$(dirname "$path")
	free_kib=$(($(stat -f -c '%a * %S' "$dir" 2>/dev/null || echo 0) / 1024))
	if [ "$free_kib" -lt 1024 ]; then
		printf 'mutexlab: error: cannot write %s: disk full (%s KiB left)\n' "$path" "$free_kib" >&2
		exit 2
	fi
	die "cannot write $path (see above)"
}

# Usage: abandon_set PATH
# A set that could not be written before its boot holds nothing worth
# keeping (the kernel's .config, a part of the initramfs): it is removed,
# and the job ends as die_unwritable says. Earlier sets are not touched.
abandon_set() {
	rm -rf -- "$OUT"
	die_unwritable "$1"
}

# Usage: name_set PATH
# Tells whoever ran this job (set_made_by, python3 lab VERB) that PATH is
# the set it made, through the file RESULT_SET_FILE names, when it names one:
# a script that runs a job learns the set that job made from there, never
# by guessing "the newest folder" (another run may have made a newer one).
# A job names its set once the set is finished (its manifest written, as
# ok, failed or interrupted); an unfinished one is never named.
name_set() {
	[ -z "${RESULT_SET_FILE:-}" ] || printf '%s\n' "$1" >"$RESULT_SET_FILE"
}

# Usage: set_made_by COMMAND...
# Runs a job (lab/bench.sh, lab/check.sh) and prints the result set it made;
# prints nothing when it made none (it failed before its boot). The job's
# own exit status is returned, its output goes to stderr.
set_made_by() {
	local file status=0
	file=$(mktemp)
	RESULT_SET_FILE=$file "$@" >&2 || status=$?
	cat "$file"
	rm -f "$file"
	return "$status"
}

# Usage: write_manifest SETTING...
# OUT's manifest.json: the variant, its series and fragments, and the value
# of every SETTING named. The manifest finishes a set: once it is written
# the job names the set (name_set); a manifest that cannot be written ends
# the job as die_unwritable says, the set unnamed.
write_manifest() {
	local -a args=(--lab-root "$LAB_ROOT" --variant "$VARIANT" --profile "$PROFILE"
		--series-sha256 "$(series_hash "$VARIANT")"
		--debian-source-version "$(kernel_source_version)"
		--mutex-object "$BUILD/kernel/locking/mutex.o")
	local item
	while IFS= read -r item; do args+=(--patch "$item"); done < <(variant_patches "$VARIANT")
	while IFS= read -r item; do args+=(--fragment "$item"); done < <(config_fragments "$VARIANT" "$PROFILE")
	for item in "$@"; do
		args+=(--param "${item,,}=${!item}")
	done
	"$PYTHON" "$LAB_ROOT/lab/manifest.py" "$OUT" "${args[@]}" ||
		die_unwritable "$OUT/manifest.json"
	name_set "$OUT"
}

# The lab's workloads and checks (lab/catalog.toml): tab-separated fields,
# one entry per line; see lab/catalog.py for the commands.
catalog() {
	"$PYTHON" "$LAB_ROOT/lab/catalog.py" "$@"
}
