# SPDX-License-Identifier: GPL-2.0
"""Confirm flagged rows by rerunning just their points.

A row that make regress flags was picked out of many: judged again on the
same boots it would look as bad as the selection made it. So a flagged row
(series and thread count) is measured anew: ROUNDS interleaved boots of each
side (base, new, base, new, ...) that run only that point, with each side's
own settings (its manifest's parameters, its kernel command line), and is
judged on those boots alone, at alpha split over the rows being confirmed.
Only a row that is flagged again stays a regression.
"""
import os
import subprocess
import tempfile
from pathlib import Path

LAB_ROOT = Path(__file__).resolve().parent.parent

# Manifest parameters that a rerun keeps as they were (each side its own).
KEPT = ("vcpus", "mem_mb", "accel", "duration_ms", "warmup_ms", "reps",
        "latency_every", "shards", "guest_append")


class ConfirmError(Exception):
    pass


def point_settings(series, threads, parameters):
    """lab/bench.sh's environment for one point of a series."""
    env = {k.upper(): str(parameters[k]) for k in KEPT
           if parameters.get(k) not in (None, "")}
    env.update(CROSSCHECK="0", PLOTS="0", QUICK="0", FULL="0")
    if series == "uncontended":
        env["WORKLOADS"] = "uncontended"
        return env
    workload, cs, think, pin = series.split("/")
    env.update(WORKLOADS=workload, CS_LOOPS=cs[1:], THINK_LOOPS=think[1:],
               PIN="1" if pin == "pinned" else "0", THREADS=str(threads))
    return env


def run_boot(bench, variant, settings, results_dir):
    """One boot; the result set it made, as the job names it in
    RESULT_SET_FILE (lab/lib.sh new_result_folder)."""
    with tempfile.NamedTemporaryFile("r", prefix="mutexlab-set.") as made:
        env = {**os.environ, **settings, "VARIANT": variant,
               "RESULTS_DIR": str(results_dir), "RESULT_SET_FILE": made.name}
        if subprocess.run([str(bench)], env=env).returncode != 0:
            raise ConfirmError(f"the confirming {variant} run failed (see above)")
        path = made.read().strip()
    if not path:
        raise ConfirmError(f"the confirming {variant} run made no result set")
    return Path(path)


def confirm(report, rounds, results_dir, judge_sets,
            bench=LAB_ROOT / "lab" / "bench.sh"):
    """Rerun the flagged rows of a make regress report; a row stays a
    regression only when its rerun flags it too. judge_sets(base sets, new
    sets, threshold, alpha) gives the rows of the reruns (regress's, passed
    in so that this module does not import the one that calls it). Updates
    the report."""
    flagged = sorted({(r["series"], r["threads"]) for r in report["rows"]
                      if r["regression"]})
    if not flagged:
        return report
    alpha = report["alpha"] / len(flagged)
    sides = report["sides"]
    for series, threads in flagged:
        made = {"base": [], "new": []}
        for _ in range(rounds):
            for side in ("base", "new"):
                settings = point_settings(series, threads, sides[side]["parameters"])
                made[side].append(run_boot(bench, sides[side]["variant"], settings,
                                           Path(results_dir)))
        rerun = {r["metric"]: r for r in judge_sets(
            made["base"], made["new"], report["threshold"], alpha)
            if (r["series"], r["threads"]) == (series, threads)}
        for row in report["rows"]:
            if (row["series"], row["threads"]) != (series, threads) or not row["regression"]:
                continue
            again = rerun.get(row["metric"])
            row["confirmation"] = again and {
                k: again[k] for k in ("change", "ci95", "p_holm", "mde", "boots")}
            row["regression"] = bool(again and again["regression"])
            row["verdict"] = ("REGRESSION (confirmed)" if row["regression"]
                              else "not confirmed")
    report["regressions"] = sum(r["regression"] for r in report["rows"])
    report["confirmed_with"] = {"rounds": rounds, "alpha_per_row": alpha}
    return report
