#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Is NEW slower than BASE? Per metric and configuration, with statistics.

Usage: analysis/regress.py [--threshold PCT] [--alpha A] [--json FILE]
                           [--metrics throughput,latency_p99] BASE NEW
       analysis/regress.py --tally DIR
BASE and NEW are result set folders, or variant names meaning the newest set
of that variant under $RESULTS_DIR (default results/); several, separated by
commas, pool their repetitions. For every series (workload and settings) and
thread count both sets ran, and every metric: the change of the median over
repetitions, its bootstrap 95% interval, and a two-sided Mann-Whitney U test.
A regression is a change for the worse beyond the threshold (default 5%)
with p < alpha (default 0.05). Exit status 1 if there is one, 2 on bad input.
--tally counts the flags in the JSON reports in DIR (lab/calibrate_regress.sh).
"""
import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path

import stats
from results import series_of
from sets import BadSet, is_complete, load_bench_set, newest_set

LAB_ROOT = Path(__file__).resolve().parent.parent
MIN_REPS = 5
# name: (how to read it from a point, True if higher is better)
METRICS = {
    "throughput": (lambda p: p["per_sec"], True),
    "latency_p99": (lambda p: (p.get("latency_ns") or {}).get("p99"), False),
}
# Settings that must match for a comparison to mean anything.
COMPARABLE = ("vcpus", "accel", "cs_loops", "think_loops", "duration_ms",
              "pin", "shards")


class InputError(Exception):
    pass


def resolve(spec, results_dir):
    """A result set folder, or the newest complete set of a variant."""
    path = Path(spec)
    if (path / "results.json").exists() or (path / "manifest.json").exists():
        if not is_complete(path):
            raise InputError(f"{spec}: not a complete result set (crashed, "
                             "interrupted or truncated; see its manifest)")
        return path
    newest = newest_set(results_dir, spec)
    if newest is None:
        raise InputError(f"{spec}: neither a result set nor a variant with "
                         f"complete result sets in {results_dir}")
    return newest


def load(path):
    try:
        results, manifest = load_bench_set(path)
    except BadSet as e:
        raise InputError(str(e)) from None
    return results["points"], manifest


def samples(points):
    """{(series, threads, metric): [value per repetition]}."""
    out = {}
    for p in points:
        for metric, (read, _) in METRICS.items():
            value = read(p)
            if value is None:
                continue
            key = (series_of(p), p["threads"], metric)
            out.setdefault(key, []).append(value)
    return out


def settings(manifest):
    params = {k.lower(): str(v) for k, v in manifest.get("parameters", {}).items()}
    for key in ("vcpus", "accel"):
        if key in manifest:
            params[key] = str(manifest[key])
    return {k: params.get(k) for k in COMPARABLE}


def compare(base, new, metrics, threshold, alpha):
    """One row per (series, threads, metric) present in both."""
    rows = []
    order = list(METRICS)
    for key in sorted(base.keys() & new.keys(),
                      key=lambda k: (k[0], k[1], order.index(k[2]))):
        series, threads, metric = key
        if metric not in metrics:
            continue
        b, n = base[key], new[key]
        higher_is_better = METRICS[metric][1]
        b_med, n_med = statistics.median(b), statistics.median(n)
        change = n_med / b_med - 1 if b_med else float("nan")
        low, high = stats.bootstrap_change_ci(b, n) if b_med else (None, None)
        _, p = stats.mann_whitney_u(b, n)
        worse = -change if higher_is_better else change
        rows.append({
            "series": series, "threads": threads, "metric": metric,
            "base_median": b_med, "new_median": n_med, "change": change,
            "ci95": [low, high], "p_value": p,
            "base_reps": len(b), "new_reps": len(n),
            "regression": bool(worse > threshold and p < alpha),
        })
    return rows


def warnings_for(rows, base_settings, new_settings, alpha):
    out = []
    differ = [k for k in COMPARABLE if base_settings[k] != new_settings[k]]
    if differ:
        out.append("settings differ (" + ", ".join(
            f"{k}: {base_settings[k]} vs {new_settings[k]}" for k in differ)
            + "): the comparison may not mean what it seems")
    reps = {(r["base_reps"], r["new_reps"]) for r in rows}
    for m, n in sorted(reps):
        if stats.min_p_value(m, n) >= alpha:
            out.append(f"WARNING: with {m} and {n} repetitions no difference "
                       f"can reach p < {alpha}: this comparison cannot flag "
                       f"anything; rerun with REPS={MIN_REPS} or more")
        elif min(m, n) < MIN_REPS:
            out.append(f"WARNING: only {min(m, n)} repetitions on one side; "
                       f"{MIN_REPS} or more are needed to trust the intervals")
    return out


def fmt_pct(x):
    return "   n/a" if x is None or x != x else f"{100 * x:+6.1f}%"


def format_text(report):
    lines = [f"base: {report['base']}", f"new:  {report['new']}",
             f"threshold {100 * report['threshold']:.1f}%, alpha {report['alpha']}"]
    lines += report["warnings"]
    lines.append(f"{'series':<34}{'thr':>4} {'metric':<12}{'base':>12}{'new':>12}"
                 f"{'change':>9} {'95% CI':>17}{'p':>8}  verdict")
    for r in report["rows"]:
        ci = f"[{fmt_pct(r['ci95'][0])},{fmt_pct(r['ci95'][1])}]"
        verdict = "REGRESSION" if r["regression"] else ""
        lines.append(f"{r['series']:<34}{r['threads']:>4} {r['metric']:<12}"
                     f"{r['base_median']:>12.4g}{r['new_median']:>12.4g}"
                     f"{fmt_pct(r['change']):>9} {ci:>17}{r['p_value']:>8.3f}  {verdict}")
    n = sum(r["regression"] for r in report["rows"])
    lines.append(f"{n} regression(s) in {len(report['rows'])} comparisons")
    return "\n".join(lines)


def load_side(spec, results_dir):
    """One side of a comparison: comma-separated sets or variants, their
    repetitions pooled (several boots capture the between-boot noise that
    one boot's repetitions miss)."""
    dirs = [resolve(s, results_dir) for s in spec.split(",") if s]
    if not dirs:
        raise InputError(f"no result set in '{spec}'")
    points, manifests = [], []
    for d in dirs:
        p, m = load(d)
        points += p
        manifests.append(m)
    kinds = {json.dumps(settings(m), sort_keys=True) for m in manifests}
    if len(kinds) > 1:
        raise InputError(f"the sets of '{spec}' were measured with different settings")
    return dirs, points, manifests[0]


def regress(base_spec, new_spec, results_dir, metrics=tuple(METRICS),
            threshold=0.05, alpha=0.05):
    base_dirs, base_points, base_manifest = load_side(base_spec, results_dir)
    new_dirs, new_points, new_manifest = load_side(new_spec, results_dir)
    rows = compare(samples(base_points), samples(new_points), metrics,
                   threshold, alpha)
    if not rows:
        raise InputError("the two sets share no series and thread count")
    return {
        "base": ",".join(map(str, base_dirs)), "new": ",".join(map(str, new_dirs)),
        "threshold": threshold,
        "alpha": alpha, "metrics": list(metrics), "rows": rows,
        "warnings": warnings_for(rows, settings(base_manifest),
                                 settings(new_manifest), alpha),
        "regressions": sum(r["regression"] for r in rows),
    }


def tally(report_dir):
    """Flags over all comparisons of the JSON reports in a folder."""
    rows = [r for f in sorted(Path(report_dir).glob("*.json"))
            for r in json.loads(f.read_text())["rows"]]
    lines = [f"{sum(r['regression'] for r in rows)} of {len(rows)} comparisons flagged"]
    for metric in METRICS:
        sub = [r for r in rows if r["metric"] == metric]
        if sub:
            lines.append(f"  {metric}: {sum(r['regression'] for r in sub)} of {len(sub)}")
    return "\n".join(lines)


def percent(text):
    """A threshold: a finite percentage >= 0 (nan would compare false with
    every change and hide every regression)."""
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage >= 0")
    return value


def probability(text):
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a probability in (0, 1)")
    return value


def main(argv):
    if len(argv) == 3 and argv[1] == "--tally":
        print(tally(argv[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--threshold", type=percent, default=5.0,
                        help="percent change for the worse that counts (5)")
    parser.add_argument("--alpha", type=probability, default=0.05)
    parser.add_argument("--metrics", default=",".join(METRICS))
    parser.add_argument("--json", help="also write the report here")
    args = parser.parse_args(argv[1:])
    metrics = tuple(args.metrics.split(","))
    unknown = set(metrics) - set(METRICS)
    if unknown:
        parser.error(f"unknown metric(s) {', '.join(sorted(unknown))}; "
                     f"known: {', '.join(METRICS)}")
    results_dir = os.environ.get("RESULTS_DIR") or LAB_ROOT / "results"
    try:
        report = regress(args.base, args.new, results_dir, metrics,
                         args.threshold / 100, args.alpha)
    except InputError as e:
        print(f"regress: {e}", file=sys.stderr)
        return 2
    print(format_text(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 1 if report["regressions"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
