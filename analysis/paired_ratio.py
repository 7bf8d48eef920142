#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A metric of NEW relative to BASE over interleaved rounds.

Usage: analysis/paired_ratio.py ROUNDS.txt BASE NEW [throughput|latency_p99]
ROUNDS.txt is lab/interleave.sh's output. For every series (workload and
settings) and thread count, each round gives one ratio: NEW's over
BASE's estimates from the same round. The metrics and each boot's
estimate are make regress's (analysis/regress.py METRICS and
estimates.boot_estimates(): acquisitions per second; the 99th percentile of lock
latency over all of a boot's timed acquisitions, left out where too few
are behind it). Prints the median ratio and its range over rounds.
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

import estimates
from regress import METRICS
from sets import read_rounds

MIN_ROUNDS = 5


def boot_estimates(result_dir, metric="throughput"):
    """{(series, threads): the boot's estimate}, make regress's own
    (estimates.boot_estimates: the fastest or the mean repetition, the
    pooled p99)."""
    points = json.loads((Path(result_dir) / "results.json").read_text())["points"]
    return {(series, threads): value for (series, threads, m), value
            in estimates.boot_estimates(points).items() if m == metric}


def paired_ratios(rounds, base, new, metric="throughput"):
    """{(series, threads): [ratio per round]} from {round: {variant: dir}}."""
    ratios = {}
    for sets in rounds.values():
        if base not in sets or new not in sets:
            continue
        b = boot_estimates(sets[base], metric)
        n = boot_estimates(sets[new], metric)
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
