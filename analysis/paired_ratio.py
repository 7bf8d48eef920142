#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Throughput of NEW relative to BASE over interleaved rounds.

Usage: analysis/paired_ratio.py ROUNDS.txt BASE NEW
ROUNDS.txt is lab/interleave.sh's output. For every thread count, each round
gives one ratio: NEW's median throughput over BASE's, both from the same
round. Prints the median ratio and its range over rounds.
"""
import json
import statistics
import sys
from pathlib import Path

MIN_ROUNDS = 5


def per_thread_medians(result_dir):
    points = json.loads((Path(result_dir) / "results.json").read_text())["points"]
    by_threads = {}
    for p in points:
        # Older sets have contended points only, without the field.
        if p.get("workload", "contended") == "contended":
            by_threads.setdefault(p["threads"], []).append(p["per_sec"])
    return {t: statistics.median(v) for t, v in by_threads.items()}


def paired_ratios(rounds, base, new):
    """{threads: [ratio per round]} from {round: {variant: dir}}."""
    ratios = {}
    for sets in rounds.values():
        if base not in sets or new not in sets:
            continue
        b, n = per_thread_medians(sets[base]), per_thread_medians(sets[new])
        for t in sorted(b.keys() & n.keys()):
            ratios.setdefault(t, []).append(n[t] / b[t])
    return ratios


def read_rounds(path):
    rounds = {}
    for line in Path(path).read_text().splitlines():
        rnd, variant, folder = line.split(maxsplit=2)
        rounds.setdefault(rnd, {})[variant] = folder
    return rounds


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__)
    ratios = paired_ratios(read_rounds(argv[1]), argv[2], argv[3])
    print(f"{argv[3]} / {argv[2]}: contended throughput ratio per round")
    print(f"{'threads':>7} {'rounds':>6} {'median':>8} {'min':>8} {'max':>8}")
    for t, r in sorted(ratios.items()):
        print(f"{t:>7} {len(r):>6} {statistics.median(r):>8.4f} "
              f"{min(r):>8.4f} {max(r):>8.4f}")
        if len(r) < MIN_ROUNDS:
            print(f"warning: {t} threads: only {len(r)} rounds; "
                  f"{MIN_ROUNDS} or more are needed to trust the spread")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
