#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: lab/build.sh VARIANT PROFILE
# Builds bzImage and the bench module for (VARIANT, PROFILE) in
# $LAB_CACHE/trees/VARIANT/build-PROFILE from the tree lab/tree.sh prepared. The
# kernel is rebuilt only when its content key (series, config fragments,
# compiler) changed; ccache makes a rebuild of unchanged objects cheap.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

JOBS=${JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$LAB_CACHE/ccache}
# Depend mode: ccache takes the headers an object read from the compiler's
# own dependency file (Kbuild's -Wp,-MMD) instead of running the
# preprocessor once more on a miss. Measured on 60 objects of a KASAN
# kernel: 29.3 s cold in ccache's default mode, 20.6 s in depend mode, 19.4
# s without ccache; hits take 1 s either way.
export CCACHE_DEPEND=true
# The kernel's make must not inherit the lab's: `make -s test` would silence
# kbuild (an empty build log), `make -jN bench` would lend it a jobserver.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

kmake() {
	make -C "$TREE" O="$OUT" CC="ccache gcc" HOSTCC="ccache gcc" \
		KBUILD_BUILD_USER=mutexlab KBUILD_BUILD_HOST=lab "$@"
}

# merge_config.sh only warns when a fragment's value did not stick; a
# benchmark on a silently different config is worse than no benchmark.
verify_config() {
	local config=$1 fragment line sym bad=0
	shift
	for fragment in "$@"; do
		while IFS= read -r line; do
			case "$line" in
			CONFIG_*=*)
				grep -qxF -- "$line" "$config" && continue
				;;
			"# CONFIG_"*" is not set")
				sym=${line#\# }
				sym=${sym%% *}
				grep -q "^$sym=" "$config" || continue
				;;
			*) continue ;;
			esac
			sym=${line#\# }
			sym=${sym%%[= ]*}
			printf '  %s: wanted "%s", got "%s"\n' "${fragment#"$LAB_ROOT"/}" "$line" \
				"$(grep -E -m1 "^(# )?${sym}[= ]" "$config" || echo absent)" >&2
			bad=1
		done <"$fragment"
	done
	[ "$bad" = 0 ] || die "the merged .config does not honour the fragments above"
}

configure() {
	local -a fragments
	mapfile -t fragments < <(config_fragments "$VARIANT" "$PROFILE")
	log "configuring: tinyconfig + ${fragments[*]#"$LAB_ROOT"/}"
	kmake -s tinyconfig >/dev/null
	"$TREE/scripts/kconfig/merge_config.sh" -m -O "$OUT" "$OUT/.config" "${fragments[@]}" \
		>"$OUT/merge_config.log" 2>&1 || {
		cat "$OUT/merge_config.log" >&2
		die "merge_config.sh failed"
	}
	# Fragments override tinyconfig's choices by design: keep kconfig's
	# "override" notes out of the way, in the merge log.
	kmake -s olddefconfig >>"$OUT/merge_config.log" 2>&1
	verify_config "$OUT/.config" "${fragments[@]}"
}

compile_kernel() {
	local log_file="$OUT/build.log"
	log "building kernel for $VARIANT/$PROFILE with -j$JOBS (log: $log_file)"
	if ! kmake -j"$JOBS" bzImage modules 2>&1 | tee "$log_file" | show_progress; then
		grep -a -E -m 20 '(error|Error [0-9]|undefined reference)' "$log_file" >&2 ||
			tail -n 20 "$log_file" >&2
		die "kernel build for $VARIANT/$PROFILE failed; full log: $log_file"
	fi
}

compile_module() {
	local moddir="$OUT/bench-module" log_file="$OUT/bench-module.log"
	# Built from a copy so that the checkout stays free of build products,
	# and from an empty folder: checkouts share this build folder, and an
	# older checkout's sources (older mtimes) would otherwise be linked with
	# a newer one's objects, or with its files that the older one lacks.
	rm -rf "$moddir"
	mkdir -p "$moddir"
	cp -p "$LAB_ROOT"/bench-module/*.[ch] "$LAB_ROOT"/bench-module/Kbuild "$moddir"/
	# The defaults of the parameters the lab sets, from its settings table.
	"$PYTHON" "$LAB_ROOT/lab/settings.py" c-defaults >"$moddir/defaults.h"
	if ! kmake M="$moddir" modules >"$log_file" 2>&1; then
		cat "$log_file" >&2
		die "bench module failed to build against $VARIANT/$PROFILE"
	fi
}

# A fresh build folder starts as a copy of a built relative's of the same
# profile when one differs from this tree in no shared header (include/,
# arch/*/include/): a mutant of owner-field then recompiles mutex.c and
# relinks, and the unpatched stock kernel what the lab's series touch,
# instead of the whole kernel (a cold `make test` builds nine). Kbuild
# decides what to rebuild by mtimes, fixdep's per-option dependencies and
# the command lines, which name the source tree ".." in every variant.
# Prints "folder changed-files" of the seed, or nothing.
find_seed() {
	local head=$1 candidate built changed count best="" best_count=""
	for candidate in "$LAB_CACHE"/trees/*/build-"$PROFILE"; do
		[ "$candidate" != "$OUT" ] || continue
		[ -f "$candidate/.kernel-key" ] && [ -f "$candidate/arch/x86/boot/bzImage" ] &&
			built=$(cat "$candidate/.kernel-tree" 2>/dev/null) || continue
		changed=$(git -C "$TREE" diff --name-only "$built" "$head" 2>/dev/null) || continue
		grep -qE '^(include|arch/[^/]+/include)/' <<<"$changed" && continue
		count=$(grep -c . <<<"$changed" || true)
		if [ -z "$best" ] || [ "$count" -lt "$best_count" ]; then
			best=$candidate best_count=$count
		fi
	done
	[ -z "$best" ] || printf '%s %s\n' "$best" "$best_count"
}

# Copies SEED's build folder into $OUT with times that make make rebuild
# exactly what depends on the files this tree changed: the copied files get
# time T, every file that differs from the seed's built tree T + 1 s (then
# in the past: no clock skew), every other source is older than T. A
# .seeding marker names a copy that did not finish; it is thrown away.
seed_build() {
	local seed=$1 seed_tree built stamp_time
	seed_tree=$(dirname "$seed")
	built=$(cat "$seed/.kernel-tree")
	exec 7<"$seed/.lock"
	flock -s -n 7 || { exec 7<&-; return 1; }
	touch "$OUT/.seeding"
	(cd "$seed" && find . -mindepth 1 -maxdepth 1 ! -name '.lock' ! -name '.kernel-*' \
		! -name '.module-key' ! -name bench-module ! -name '*.log' -print0 |
		xargs -0 cp -a -t "$OUT")
	exec 7<&-
	# objtool's own build (tools/) names its files by absolute path: as
	# the seed's, its command lines would differ, objtool be rebuilt, and
	# with it every object, which depends on the objtool binary.
	grep -rlIZ -- "$seed_tree/" "$OUT/tools" |
		xargs -0 -r sed -i "s#$seed_tree/#$TREE/#g"
	stamp_time=$(date +%s)
	find "$OUT" -exec touch -h -d "@$stamp_time" {} +
	git -C "$TREE" diff -z --name-only "$built" HEAD |
		(cd "$TREE" && xargs -0 -r touch -c -d "@$((stamp_time + 1))")
	sleep 1.1
	rm -f "$OUT/.seeding"
}

# A build folder never configured (or a copy cut short) may start from a
# seed; one that was built keeps its own objects.
maybe_seed() {
	local seed
	if [ -e "$OUT/.seeding" ]; then
		log "throwing away an unfinished copy in $OUT"
		find "$OUT" -mindepth 1 -maxdepth 1 ! -name .lock -exec rm -rf {} +
	fi
	[ ! -e "$OUT/.config" ] || return 0
	seed=$(find_seed "$(git -C "$TREE" rev-parse HEAD)")
	[ -n "$seed" ] || return 0
	log "starting from ${seed% *} (its tree differs from this one in ${seed#* } file(s))"
	seed_build "${seed% *}" || log "${seed% *} is being built; building from scratch"
}

kernel_key() {
	local -a fragments
	mapfile -t fragments < <(config_fragments "$VARIANT" "$PROFILE")
	{
		series_hash "$VARIANT"
		hash_files "${fragments[@]}" "$0"
		gcc --version | head -1
	} | sha256sum | cut -d' ' -f1
}

main() {
	VARIANT=${1:-}
	PROFILE=${2:-bench}
	require_variant "$VARIANT"
	TREE=$(tree_dir "$VARIANT")
	OUT=$(build_dir "$VARIANT" "$PROFILE")
	# The kernel key names the series; the tree must hold that series.
	[ "$(cat "$TREE.series" 2>/dev/null)" = "$(series_hash "$VARIANT")" ] ||
		die "the tree for $VARIANT does not hold its current series (run lab/tree.sh $VARIANT)"
	mkdir -p "$OUT"
	# Two makes in one build folder corrupt it: one build at a time.
	exec 8>"$OUT/.lock"
	if ! flock -n 8; then
		log "waiting for another build of $VARIANT/$PROFILE to finish"
		flock 8
	fi

	local key stamp="$OUT/.kernel-key"
	key=$(kernel_key)
	if [ "$(cat "$stamp" 2>/dev/null)" = "$key" ] && [ -f "$OUT/arch/x86/boot/bzImage" ]; then
		log "kernel for $VARIANT/$PROFILE is up to date"
	else
		rm -f "$stamp" "$OUT/.module-key" "$OUT/.kernel-tree"
		maybe_seed
		configure
		compile_kernel
		printf '%s\n' "$key" >"$stamp"
	fi
	# The commit it was built from, for find_seed: the key fixes the series,
	# and tree.sh's commits are reproducible, so an older build's is HEAD.
	[ -f "$OUT/.kernel-tree" ] || git -C "$TREE" rev-parse HEAD >"$OUT/.kernel-tree"

	local module_key module_stamp="$OUT/.module-key"
	module_key=$({
		echo "$key"
		hash_files "$LAB_ROOT"/bench-module/*.[ch] "$LAB_ROOT"/bench-module/Kbuild \
			"$LAB_ROOT/lab/settings.toml" "$LAB_ROOT/lab/catalog.toml"
	} | sha256sum | cut -d' ' -f1)
	if [ "$(cat "$module_stamp" 2>/dev/null)" != "$module_key" ] || [ ! -f "$OUT/bench-module/mutexlab.ko" ]; then
		rm -f "$module_stamp"
		compile_module
		printf '%s\n' "$module_key" >"$module_stamp"
	fi
	log "built $OUT/arch/x86/boot/bzImage and $OUT/bench-module/mutexlab.ko"
}

main "$@"
