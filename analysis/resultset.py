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
import catalog  # noqa: E402
from manifest import REQUIRED_KEYS  # noqa: E402
from results import series_of  # noqa: E402

REQUIRED_FILES = ("manifest.json", "kernel.config", "console.log",
                  "results.raw", "results.json", "qemu-cmd.json", "run.json")


def expected_thread_counts(manifest):
    threads = manifest["parameters"].get("threads") or ""
    if threads:
        return sorted({int(t) for t in threads.split(",")})
    # Sets from before THREADS had a default recorded "": the module's
    # sweep was then 1 .. vCPUs and twice the vCPUs.
    vcpus = int(manifest["vcpus"])
    return list(range(1, vcpus + 1)) + [2 * vcpus]


# The module's swept settings: a set that does not record one cannot be
# told complete (the module's defaults are the settings table's, and have
# changed; a set's own record is what it ran).
SWEPT = ("cs_loops", "think_loops", "pin")


def swept_settings(params):
    """[(cs_loops, think_loops, pinned)] the contended workload ran, in the
    module's order; the other workloads ran the first."""
    def values(name):
        return [int(v) for v in str(params[name]).split(",")]
    return [(c, w, bool(p)) for p in values("pin")
            for c in values("cs_loops") for w in values("think_loops")]


def expected_series(params, thread_counts, workloads, vcpus):
    """[(series, threads)] a set must hold, each REPS times: each workload
    of lab/catalog.toml that ran, in the shape the catalog gives it."""
    settings = swept_settings(params)
    threads_of = {"sweep": thread_counts, "one": [1], "twice_cpus": [2 * vcpus]}
    expected = []
    for wl in catalog.workloads():
        if wl.name not in workloads or (wl.threads == "twice_cpus" and not vcpus):
            continue
        for c, w, pinned in settings if wl.sweeps_settings else settings[:1]:
            if wl.critical_section == "one_increment":
                c, w = 1, 0
            series = series_of({"workload": wl.name, "cs_loops": c,
                                "think_loops": w, "pinned": pinned})
            expected += [(series, t) for t in threads_of[wl.threads]]
    return expected


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
    unrecorded = [name for name in SWEPT
                  if manifest.get("parameters", {}).get(name) in (None, "")]
    problems += [f"manifest records no {name}" for name in unrecorded]
    if "parameters" in manifest and "vcpus" in manifest and not unrecorded:
        # Sets from before the workloads setting ran contended only.
        workloads = (manifest["parameters"].get("workloads")
                     or "contended").split(",")
        expected = expected_series(manifest["parameters"],
                                   expected_thread_counts(manifest), workloads,
                                   int(manifest["vcpus"]))
        problems += check_points(results["points"], expected, reps)
    return problems


def check_points(points, expected, reps):
    """Every (series, threads) expected, REPS times, each with counts."""
    problems = []
    seen = {}
    for p in points:
        seen.setdefault((series_of(p), p["threads"]), []).append(p)
        if len(p["acquisitions"]) != p["threads"]:
            problems.append(f"{p['workload']} {p['threads']}t rep {p['rep']}: "
                            f"{len(p['acquisitions'])} per-thread counts")
        if p["total"] <= 0:
            problems.append(f"{p['workload']} {p['threads']}t rep {p['rep']}: "
                            "no acquisitions")
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
