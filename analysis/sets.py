# SPDX-License-Identifier: GPL-2.0
"""Result sets on disk: written whole or not at all, read with a clear
error, the newest usable set of a kind, and a bench set's completeness.

A bench set is complete when its manifest says `outcome: ok` and its
results.json parses: a crashed, interrupted or truncated set is kept for
reading, but never picked as "the newest set" for a comparison.

Every read checks both files against their JSON Schema (schemas/, Debian's
python3-jsonschema): a file of the wrong shape, a measurement that is not
finite, negative or absurd, is a BadSet naming the file and the place in
it, never a traceback deep in the statistics.
"""
import json
import os
import tempfile
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

import jsonschema

SCHEMAS = Path(__file__).resolve().parent / "schemas"
# The version the lab writes; sets without one are version 1.
SCHEMA_VERSION = 1
# A set's file beyond this is not a set (a FULL sweep's results.json is a
# few MB); reading it whole would only fill the memory.
MAX_FILE_BYTES = 256 << 20


class BadSet(Exception):
    """A result set that cannot be used: missing, truncated, not JSON."""


def write_atomic(path, text):
    """Write text to path through a temporary file and a rename, so that a
    full disk or a crash leaves the old file or none, never a part; the
    file's mode is what the umask gives a new file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        # mkstemp makes it 0600: a set is for everyone the umask lets read
        # it (another user read "not a complete result set").
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def new_set_dir(folder, name):
    """folder/<UTC time>-name, made, and no other run's: -2, -3, ... after
    it when another run made it in the same second (lab/lib.sh
    unique_folder does the same for the shell jobs)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = Path(folder) / f"{stamp}-{name}"
    base.parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        path = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise BadSet(f"no free result folder beside {base}")


def not_finite(name):
    raise ValueError(f"{name} is not a number JSON has")


def read_json(path):
    """A JSON file, whole; BadSet naming it when it is missing, not a
    regular file, too large, truncated, nested beyond reason or holding
    NaN or Infinity (which Python's json reads, and JSON has not)."""
    path = Path(path)
    try:
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise BadSet(f"{path} is not a regular file")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise BadSet(f"{path} is larger than {MAX_FILE_BYTES >> 20} MB: not a set's file")
        return json.loads(path.read_text(), parse_constant=not_finite)
    except FileNotFoundError:
        raise BadSet(f"{path} is missing") from None
    except RecursionError:
        raise BadSet(f"{path} is nested too deep to be a set's file") from None
    except (OSError, ValueError) as e:
        raise BadSet(f"{path} is unreadable or truncated: {e}") from None


# A definition checked by pairs_problem() rather than by jsonschema: its
# 70,000-odd instances in a default sweep took jsonschema 0.25 s a set.
FAST = "hdr_pair"


def inline_refs(node, definitions):
    """The schema with its local "#/definitions/x" references replaced by
    what they name (jsonschema resolves a reference at every use), and
    FAST's by a plain array, checked apart."""
    if isinstance(node, dict):
        ref = node.get("$ref", "")
        if ref == f"#/definitions/{FAST}":
            return {"type": "array"}
        if ref.startswith("#/definitions/"):
            return inline_refs(definitions[ref.rsplit("/", 1)[1]], definitions)
        return {k: inline_refs(v, definitions) for k, v in node.items()}
    if isinstance(node, list):
        return [inline_refs(v, definitions) for v in node]
    return node


@lru_cache(maxsize=None)
def schema(name):
    """(its validator, its FAST definition with references inlined, or None)."""
    text = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    definitions = text.get("definitions", {})
    fast = definitions.get(FAST)
    return (jsonschema.Draft7Validator(inline_refs(text, definitions)),
            fast and inline_refs(fast, definitions))


def pairs_problem(results, pair):
    """Where a histogram pair leaves the schema's FAST definition (a fixed
    count of integers between bounds), or None."""
    size, item = pair["minItems"], pair["items"]
    low, high = item["minimum"], item["maximum"]
    for i, point in enumerate(results.get("points", ())):
        hdr = point.get("latency_hdr_ns") if isinstance(point, dict) else None
        counts = hdr.get("counts") if isinstance(hdr, dict) else None
        for j, p in enumerate(counts if isinstance(counts, list) else ()):
            if not (type(p) is list and len(p) == size  # noqa: E721 - bool is no int
                    and all(type(x) is int and low <= x <= high for x in p)):  # noqa: E721
                return f"points/{i}/latency_hdr_ns/counts/{j}: {p!r} is not a {FAST}"
    return None


def check_schema(data, name, path):
    """BadSet naming path and where in it data leaves schemas/NAME."""
    validate, fast = schema(name)
    error = jsonschema.exceptions.best_match(validate.iter_errors(data))
    if error is not None:
        where = "/".join(map(str, error.absolute_path)) or "the top"
        raise BadSet(f"{path}: {where}: {error.message[:200]} (schema {name})")
    problem = fast and pairs_problem(data, fast)
    if problem:
        raise BadSet(f"{path}: {problem} (schema {name})")


def load_bench_set(path):
    """(results, manifest) of a bench set; BadSet when either cannot be
    used."""
    path = Path(path)
    results = read_json(path / "results.json")
    if not isinstance(results, dict) or not isinstance(results.get("points"), list):
        raise BadSet(f"{path / 'results.json'} has no list of points")
    check_schema(results, "results", path / "results.json")
    manifest = read_json(path / "manifest.json")
    check_schema(manifest, "manifest", path / "manifest.json")
    return results, manifest


def machine(manifest):
    """Where a set ran: the accelerator and the host's CPU model and count.
    Times from two machines are two experiments, not one."""
    host = manifest.get("host") or {}
    return (f"{(manifest.get('accel') or '?').upper()} on "
            f"{host.get('cpu_model', '?')} x{host.get('cpus', '?')}")


def is_complete(path, variant=None):
    """A bench set that finished (outcome ok) and reads whole; of variant,
    where one is given, by its manifest's own word."""
    try:
        _, manifest = load_bench_set(path)
    except BadSet:
        return False
    return manifest.get("outcome") == "ok" and variant in (None, manifest["variant"])


def is_judged(path):
    """A make check or make verify set with its verdict written."""
    return (Path(path) / "verdict.json").is_file()


# Where each kind of set lies under RESULTS_DIR, and what makes one usable.
# Folder names are the pattern's prefix, the UTC time the set was made, the
# host, and -2, -3... for a second set made in the same second: by name is
# by time.
SET_KINDS = {
    "bench": ("{variant}", "[0-9]*", is_complete),
    "check": ("{variant}", "check-[0-9]*", is_judged),
    "verify": ("verify", "[0-9]*", is_judged),
}


def newest_sets(results_dir, kind, variant=None, count=1, accept=None):
    """The count newest usable sets of a kind (SET_KINDS) under results_dir,
    of variant where the kind has one; oldest first, fewer when there are
    fewer. Usable is the kind's test unless accept() is given: a crashed,
    interrupted or truncated bench set, or an unjudged check set, is never
    picked unless asked. The lab's one way of finding "the newest set"."""
    folder, pattern, usable = SET_KINDS[kind]
    if accept is None:
        # A bench set is picked for its variant only if its manifest says so.
        accept = (lambda path: usable(path, variant)) if kind == "bench" else usable
    found = []
    root = Path(results_dir) / folder.format(variant=variant)
    for path in sorted(root.glob(pattern), reverse=True):
        if len(found) == count:
            break
        # A link to a set elsewhere is not one of this folder's sets.
        if path.is_dir() and not path.is_symlink() and accept(path):
            found.append(path)
    return found[::-1]


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


def interleaved(base_names, new_names):
    """Whether two sides' boots ran interleaved, so that the i-th of each
    belong together: as many on each side, and in the order of their
    start (folder names begin with the UTC start) each consecutive two
    boots are the i-th of one side and the i-th of the other, in either
    order (A B A B, or the A B B A of counterbalanced rounds). Two batches
    run one after the other are not: pairing them in start order paired
    boots that shared nothing."""
    if len(base_names) != len(new_names):
        return False
    timeline = sorted([(name, 0, i) for i, name in enumerate(sorted(base_names))]
                      + [(name, 1, i) for i, name in enumerate(sorted(new_names))])
    for k in range(0, len(timeline), 2):
        (_, side_a, i), (_, side_b, j) = timeline[k], timeline[k + 1]
        if side_a == side_b or i != j:
            return False
    return True
