#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A metric of NEW relative to BASE over interleaved rounds.

Usage: analysis/paired_ratio.py ROUNDS.txt BASE NEW [throughput|p99]
ROUNDS.txt is lab/interleave.sh's output. For every series (workload and
settings) and thread count, each round gives one ratio: NEW's median over BASE's, both from the
same round (throughput: acquisitions per second; p99: the 99th percentile of
lock latency, a log2 bucket bound, so its ratios are powers of two). Prints
the median ratio and its range over rounds.
"""
import json
import statistics
import sys
from pathlib import Path

from results import series_of
from sets import read_rounds

MIN_ROUNDS = 5
METRICS = {
    "throughput": lambda point: point["per_sec"],
    "p99": lambda point: point["latency_ns"]["p99"],
}


def per_point_medians(result_dir, metric="throughput"):
    """{(series, threads): median over the set's repetitions}."""
    value = METRICS[metric]
    points = json.loads((Path(result_dir) / "results.json").read_text())["points"]
    by_key = {}
    for p in points:
        if metric == "p99" and not p.get("latency_ns"):
            continue  # no latency sample in this point
        key = (series_of(p), p["threads"])
        by_key.setdefault(key, []).append(value(p))
    return {k: statistics.median(v) for k, v in by_key.items()}


def paired_ratios(rounds, base, new, metric="throughput"):
    """{(series, threads): [ratio per round]} from {round: {variant: dir}}."""
    ratios = {}
    for sets in rounds.values():
        if base not in sets or new not in sets:
            continue
        b = per_point_medians(sets[base], metric)
        n = per_point_medians(sets[new], metric)
        for key in sorted(b.keys() & n.keys()):
            ratios.setdefault(key, []).append(n[key] / b[key])
    return ratios


def main(argv):
    if len(argv) not in (4, 5) or (len(argv) == 5 and argv[4] not in METRICS):
        sys.exit(__doc__)
    metric = argv[4] if len(argv) == 5 else "throughput"
    ratios = paired_ratios(read_rounds(argv[1]), argv[2], argv[3], metric)
    print(f"{argv[3]} / {argv[2]}: {metric} ratio per round")
    print(f"{'series':<34} {'threads':>7} {'rounds':>6} {'median':>8} "
          f"{'min':>8} {'max':>8}")
    for (series, t), r in sorted(ratios.items()):
        print(f"{series:<34} {t:>7} {len(r):>6} {statistics.median(r):>8.4f} "
              f"{min(r):>8.4f} {max(r):>8.4f}")
        if len(r) < MIN_ROUNDS:
            print(f"warning: {series} {t} threads: only {len(r)} rounds; "
                  f"{MIN_ROUNDS} or more are needed to trust the spread")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
