#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A metric of NEW relative to BASE over interleaved rounds.

Usage: analysis/paired_ratio.py ROUNDS.txt BASE NEW [throughput|latency_p99]
ROUNDS.txt is lab/interleave.sh's output. For every series (workload and
settings) and thread count, each round gives one ratio: NEW's median over
BASE's, both from the same round. The metrics are make regress's
(analysis/regress.py METRICS: acquisitions per second; the 99th percentile
of lock latency, left out where too few samples are behind it). Prints the
median ratio and its range over rounds.
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

from regress import METRICS
from results import series_of
from sets import read_rounds

MIN_ROUNDS = 5


def per_point_medians(result_dir, metric="throughput"):
    """{(series, threads): median over the set's repetitions}."""
    read = METRICS[metric].read
    points = json.loads((Path(result_dir) / "results.json").read_text())["points"]
    by_key = {}
    for p in points:
        value = read(p)
        if value is None:
            continue  # no latency sample, or too few, in this point
        by_key.setdefault((series_of(p), p["threads"]), []).append(value)
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rounds", help="lab/interleave.sh's rounds file")
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("metric", nargs="?", default="throughput", choices=list(METRICS))
    args = ap.parse_args(argv[1:])
    ratios = paired_ratios(read_rounds(args.rounds), args.base, args.new, args.metric)
    print(f"{args.new} / {args.base}: {args.metric} ratio per round")
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
