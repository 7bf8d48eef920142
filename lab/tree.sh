#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: lab/tree.sh VARIANT | --pristine
# Makes $LAB_CACHE/trees/VARIANT: a git worktree of the pristine Debian kernel
# source with the variant's series applied by `git am`. Work is redone only
# when the series changed; a series that does not apply leaves the tree at the
# pristine commit, so the cache stays usable.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# Commits identify the lab, not a person, so that trees are reproducible.
export GIT_AUTHOR_NAME=mutexlab GIT_AUTHOR_EMAIL=mutexlab@localhost
export GIT_COMMITTER_NAME=mutexlab GIT_COMMITTER_EMAIL=mutexlab@localhost
export GIT_COMMITTER_DATE='2000-01-01T00:00:00Z'

make_pristine() {
	local pristine staging
	pristine=$(pristine_dir)
	if git -C "$pristine" rev-parse -q --verify "refs/tags/$PRISTINE_TAG" >/dev/null 2>&1; then
		return
	fi
	[ -r "$KERNEL_SOURCE_TARBALL" ] || die "$KERNEL_SOURCE_TARBALL missing (run: make deps)"
	# Unpack and commit beside the final place, then rename: an interrupted
	# import leaves no half-made pristine tree behind.
	staging="$pristine.partial"
	rm -rf "$staging"
	mkdir -p "$staging"
	log "unpacking $KERNEL_SOURCE_TARBALL ($(kernel_source_version)) once into $pristine"
	tar -C "$staging" --strip-components=1 -xf "$KERNEL_SOURCE_TARBALL"
	log "importing the pristine tree into git (once)"
	git -C "$staging" init -q
	git -C "$staging" config gc.auto 0
	git -C "$staging" add -f -A .  # Debian's .gitignore ends in "/*"
	git -C "$staging" commit -q -m "$KERNEL_SOURCE_PACKAGE $(kernel_source_version) as shipped by Debian"
	git -C "$staging" tag "$PRISTINE_TAG"
	rm -rf "$pristine"
	mv "$staging" "$pristine"
}

# Bring the worktree back to the pristine commit, whatever state it is in.
reset_to_pristine() {
	local tree=$1
	git -C "$tree" am --abort >/dev/null 2>&1 || true
	git -C "$tree" reset -q --hard "$PRISTINE_TAG"
	# Not the build folders (lib.sh's build_dir): make rebuilds what changed.
	git -C "$tree" clean -q -fdx -e '/build-*/'
}

ensure_worktree() {
	local pristine=$1 tree=$2
	if git -C "$tree" rev-parse -q --verify HEAD >/dev/null 2>&1; then
		return
	fi
	rm -rf "$tree"
	git -C "$pristine" worktree prune
	mkdir -p "$(dirname "$tree")"
	log "checking out a worktree for $(basename "$tree")"
	git -C "$pristine" worktree add -q --detach "$tree" "$PRISTINE_TAG"
}

apply_series() {
	local variant=$1 tree=$2 patch out
	local -a patches
	mapfile -t patches < <(variant_patches "$variant")
	log "applying ${#patches[@]} patch(es) for $variant"
	for patch in "${patches[@]}"; do
		if ! out=$(git -C "$tree" am -q "$patch" 2>&1); then
			reset_to_pristine "$tree"
			printf '%s\n' "$out" | grep -E '^(error|Patch failed|fatal)' >&2 || printf '%s\n' "$out" >&2
			die "patch ${patch#"$LAB_ROOT"/} does not apply to $KERNEL_SOURCE_PACKAGE $(kernel_source_version) (hunks above); tree reset to pristine"
		fi
	done
}

main() {
	local variant=${1:-}
	[ "$variant" = --pristine ] || require_variant "$variant"
	mkdir -p "$LAB_CACHE/src" "$LAB_CACHE/trees"
	# One lab process at a time touches the shared git repository.
	exec 9>"$LAB_CACHE/.tree.lock"
	flock 9
	make_pristine
	[ "$variant" != --pristine ] || return 0
	local tree stamp want
	tree=$(tree_dir "$variant")
	stamp="$tree.series"
	want=$(series_hash "$variant")
	ensure_worktree "$(pristine_dir)" "$tree"
	if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && [ -z "$(git -C "$tree" status --porcelain)" ]; then
		log "tree for $variant is up to date ($tree)"
		return
	fi
	rm -f "$stamp"
	reset_to_pristine "$tree"
	apply_series "$variant" "$tree"
	printf '%s\n' "$want" >"$stamp"
	log "tree for $variant ready at $tree"
}

main "$@"
