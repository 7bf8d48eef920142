#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Usage: lab/save_reference.sh COMPARE_DIR [DEST_ROOT]
# Copies a make compare folder into DEST_ROOT/<its name>/ (default
# results/reference): the report, plots, comparison.json and rounds, and of
# each result set it pooled the files that describe and hold the numbers
# (manifest, results, steps), not the console logs. results.json is written
# without indentation: a set of the default sweep is 0.7 MB indented and
# 0.28 MB without, the same numbers. Small enough to commit; make regress
# and make compare take the copied sets as they take any set.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

compact_json() {
	"$PYTHON" -c 'import json, sys
json.dump(json.load(open(sys.argv[1])), open(sys.argv[2], "w"), separators=(",", ":"))' "$1" "$2"
}

main() {
	local src=${1:?usage: lab/save_reference.sh COMPARE_DIR [DEST_ROOT]} dest set rel file
	local dest_root=${2:-$LAB_ROOT/results/reference}
	[ -f "$src/comparison.json" ] || die "$src is not a make compare folder (no comparison.json)"
	dest="$dest_root/$(basename "$src")"
	[ ! -e "$dest" ] || die "$dest exists; remove it first"
	mkdir -p "$dest/sets"
	cp "$src"/report.md "$src"/*.png "$src"/*.svg "$src"/comparison.json "$dest/"
	# The rounds name the sets where they were made; the copy names them
	# where they are copied to, relative to itself.
	[ ! -f "$src/rounds.txt" ] ||
		sed -E 's#^([0-9]+) ([^ ]+) .*/([^/]+)$#\1 \2 sets/\2/\3#' "$src/rounds.txt" >"$dest/rounds.txt"
	while IFS= read -r set; do
		rel="$(basename "$(dirname "$set")")/$(basename "$set")"
		mkdir -p "$dest/sets/$rel"
		for file in manifest.json steps.txt; do
			[ ! -f "$set/$file" ] || cp "$set/$file" "$dest/sets/$rel/"
		done
		compact_json "$set/results.json" "$dest/sets/$rel/results.json"
	done < <("$PYTHON" -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["sets"]))' "$src/comparison.json")
	log "reference saved in $dest ($(du -sh "$dest" | cut -f1))"
}

main "$@"
