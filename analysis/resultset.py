#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Check that a result folder is complete and self-describing.

Usage: analysis/resultset.py RESULT_DIR
Prints each problem and exits 1 if there is any.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lab"))
from manifest import REQUIRED_KEYS  # noqa: E402

REQUIRED_FILES = ("manifest.json", "kernel.config", "console.log",
                  "results.raw", "results.json", "qemu-cmd.json", "run.json")


def expected_thread_counts(manifest):
    threads = manifest["parameters"].get("threads") or ""
    if threads:
        return sorted({int(t) for t in threads.split(",")})
    return list(range(1, 2 * int(manifest["vcpus"]) + 1))


def check_result_set(path):
    """Return a list of problems; empty when the set is complete."""
    path = Path(path)
    problems = [f"missing {name}" for name in REQUIRED_FILES
                if not (path / name).is_file()]
    if problems:
        return problems
    manifest = json.loads((path / "manifest.json").read_text())
    results = json.loads((path / "results.json").read_text())
    # An empty list is a real value (owner-field's series is empty).
    problems += [f"manifest lacks {key}" for key in REQUIRED_KEYS
                 if manifest.get(key) in (None, "")]
    if manifest.get("outcome") != "ok":
        problems.append(f"outcome is {manifest.get('outcome')!r}, not 'ok'")
    problems += [f"results: {p}" for p in results.get("problems", [])]
    reps = int(manifest.get("parameters", {}).get("reps") or 0)
    if "parameters" in manifest and "vcpus" in manifest:
        # Sets from before the workloads setting ran contended only.
        workloads = (manifest["parameters"].get("workloads")
                     or "contended").split(",")
        problems += check_points(results["points"],
                                 expected_thread_counts(manifest), reps,
                                 workloads, int(manifest["vcpus"]))
    return problems


def check_points(points, thread_counts, reps, workloads=("contended",),
                 vcpus=None):
    """Every workload asked for, at each of its thread counts, REPS times."""
    problems = []
    seen = {}
    for p in points:
        seen.setdefault((p["workload"], p["threads"]), []).append(p)
        if len(p["acquisitions"]) != p["threads"]:
            problems.append(f"{p['workload']} {p['threads']}t rep {p['rep']}: "
                            f"{len(p['acquisitions'])} per-thread counts")
        if p["total"] <= 0:
            problems.append(f"{p['workload']} {p['threads']}t rep {p['rep']}: "
                            "no acquisitions")
    expected = [(w, t) for w in ("contended", "sharded") if w in workloads
                for t in thread_counts]
    if "uncontended" in workloads:
        expected.append(("uncontended", 1))
    if "oversubscribed" in workloads and vcpus:
        expected.append(("oversubscribed", 2 * vcpus))
    for key in expected:
        if len(seen.get(key, [])) != reps:
            problems.append(f"{key[0]} {key[1]} threads: "
                            f"{len(seen.get(key, []))} of {reps} repetitions present")
    return problems


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    problems = check_result_set(argv[1])
    for p in problems:
        print(f"{argv[1]}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
