# SPDX-License-Identifier: GPL-2.0
"""Result sets on disk: written whole or not at all, read with a clear
error, and the newest complete set of a variant.

A bench set is complete when its manifest says `outcome: ok` and its
results.json parses: a crashed, interrupted or truncated set is kept for
reading, but never picked as "the newest set" for a comparison.
"""
import json
import os
import tempfile
from pathlib import Path


class BadSet(Exception):
    """A result set that cannot be used: missing, truncated, not JSON."""


def write_atomic(path, text):
    """Write text to path through a temporary file and a rename, so that a
    full disk or a crash leaves the old file or none, never a part."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path):
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise BadSet(f"{path} is missing") from None
    except (OSError, ValueError) as e:
        raise BadSet(f"{path} is unreadable or truncated: {e}") from None


def load_bench_set(path):
    """(results, manifest) of a bench set; BadSet when either cannot be
    used."""
    path = Path(path)
    results = read_json(path / "results.json")
    if not isinstance(results, dict) or not isinstance(results.get("points"), list):
        raise BadSet(f"{path / 'results.json'} has no list of points")
    manifest = read_json(path / "manifest.json")
    return results, manifest


def is_complete(path):
    try:
        _, manifest = load_bench_set(path)
    except BadSet:
        return False
    return manifest.get("outcome") == "ok"


def newest_set(results_dir, variant, accept=is_complete):
    """The newest bench set of variant that accept() takes (by default a
    complete one), or None. Folder names begin with the UTC time."""
    found = newest_sets(results_dir, variant, 1, accept)
    return found[0] if found else None


def newest_sets(results_dir, variant, count, accept=is_complete):
    """The count newest sets of variant that accept() takes, oldest first;
    fewer when there are fewer. Folder names begin with the UTC time."""
    found = []
    for path in sorted((Path(results_dir) / variant).glob("[0-9]*"), reverse=True):
        if len(found) == count:
            break
        if path.is_dir() and accept(path):
            found.append(path)
    return found[::-1]


def newest_check_set(results_dir, variant):
    """The newest judged `make check` set of variant (one with a
    verdict.json), or None. Folder names are check-<UTC time>-<host>."""
    judged = sorted((Path(results_dir) / variant).glob("check-[0-9]*/verdict.json"))
    return judged[-1].parent if judged else None


def read_rounds(path):
    """{round: {variant: set folder}} from lab/interleave.sh's rounds file
    (lines "ROUND VARIANT FOLDER"). A relative folder is taken from the
    file's own folder, so a committed reference reads where it lies."""
    path = Path(path)
    rounds = {}
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise BadSet(f"{path}: {e.strerror}") from None
    for lineno, line in enumerate(lines, 1):
        fields = line.split(maxsplit=2)
        if not fields:
            continue
        if len(fields) != 3:
            raise BadSet(f"{path}:{lineno}: not 'ROUND VARIANT FOLDER': {line!r}")
        rnd, variant, folder = fields
        rounds.setdefault(rnd, {})[variant] = path.parent / folder
    return rounds
