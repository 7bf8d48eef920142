#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: lab/checkpatch.sh [FILE...]
# Runs the kernel tree's scripts/checkpatch.pl on every patch of every series
# (the test-only mutants included) and on the bench module, or on the FILEs
# given: *.patch as patches, others as source files. Fails if any of them has
# an error or a warning.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

"$LAB_ROOT/lab/tree.sh" --pristine
# checkpatch runs spdxcheck.py with the first python3 on PATH; Debian's has ply.
export PATH="/usr/bin:$PATH"
# FILE_PATH_CHANGES only asks "does MAINTAINERS need updating?" of any new
# file; the lab adds files only under kernel/locking/, which MAINTAINERS'
# LOCKING PRIMITIVES entry already covers (F: kernel/locking/).
checkpatch=("$(pristine_dir)/scripts/checkpatch.pl" --root="$(pristine_dir)" --quiet
	--no-summary --show-types --ignore FILE_PATH_CHANGES)

files=("$@")
if [ "${#files[@]}" = 0 ]; then
	shopt -s nullglob
	files=("$VARIANTS_DIR"/*/[0-9][0-9][0-9][0-9]-*.patch
		"$LAB_ROOT"/tests/mutants/*/[0-9][0-9][0-9][0-9]-*.patch "$LAB_ROOT"/bench-module/*.[ch])
	shopt -u nullglob
fi

# checkpatch.pl takes any file that git tracks in the current directory for
# a source file (--file), a patch included: run it from the kernel tree,
# where none of the lab's files is tracked.
mapfile -t files < <(realpath -- "${files[@]}")
cd "$(pristine_dir)"

failed=0
for file in "${files[@]}"; do
	case "$file" in
	*.patch) mode=() ;;
	*) mode=(--file) ;;
	esac
	if "${checkpatch[@]}" "${mode[@]}" "$file"; then
		log "checkpatch clean: ${file#"$LAB_ROOT"/}"
	else
		log "checkpatch FAILED: ${file#"$LAB_ROOT"/}"
		failed=1
	fi
done
exit "$failed"
