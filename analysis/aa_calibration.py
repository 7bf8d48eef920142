#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A/A calibration of make regress from boots that already ran.

Usage: analysis/aa_calibration.py [--per-side K] [--threshold PCT]
                                  [--alpha A] [--sample N] [--json FILE] SET...
SETs are result set folders (one boot each); they are grouped by variant.
Every split of a variant's boots into two disjoint groups of K (default 2)
is one A/A comparison, judged exactly as make regress judges (boots paired
in start order where the two groups interleave in time, unpaired where they
do not; Holm over the rows): any flag is a false alarm. Where a
variant has more such splits than --sample (default 500), that many are
drawn at random (a fixed seed: the same boots give the same answer). Prints the
family-wise false-alarm rate (comparisons that flagged anything) and the
median minimum detectable effect per row kind.

Splits share boots, so they are not independent comparisons: the rate is
an estimate from the boots at hand, not a binomial count. For independent
A/A comparisons, lab/calibrate_regress.sh runs new boots for each.
"""
import argparse
import itertools
import json
import math
import random
import statistics
import sys
from pathlib import Path

import regress
import verdicts
from sets import BadSet, interleaved, load_bench_set


def splits(boots, per_side):
    """Unordered pairs of disjoint groups of per_side boots, each group
    in start order."""
    seen = set()
    for base in itertools.combinations(boots, per_side):
        rest = [b for b in boots if b not in base]
        for new in itertools.combinations(rest, per_side):
            key = frozenset((base, new))
            if key not in seen:
                seen.add(key)
                yield list(base), list(new)


def sampled_splits(boots, per_side, count, seed=0):
    """At most count distinct splits: all of them when there are no more,
    else count drawn at random, each boot equally likely on either side."""
    n = len(boots)
    if n < 2 * per_side:
        return []
    total = math.comb(n, per_side) * math.comb(n - per_side, per_side) // 2
    if total <= count:
        return list(splits(boots, per_side))
    rng = random.Random(seed)
    seen, drawn = set(), []
    while len(drawn) < count:
        picked = rng.sample(boots, 2 * per_side)
        base, new = sorted(picked[:per_side]), sorted(picked[per_side:])
        key = frozenset((tuple(base), tuple(new)))
        if key not in seen:
            seen.add(key)
            drawn.append((base, new))
    return drawn


def row_kind(row):
    where = ("uncontended" if row["series"] == "uncontended"
             else f"{row['threads']} thread(s)")
    return f"{row['metric']}, {where}"


def calibrate(set_dirs, per_side=2, threshold=0.05, alpha=0.05, sample=500):
    by_variant, manifests = {}, []
    for d in sorted(map(Path, set_dirs), key=lambda d: d.name):
        results, manifest = load_bench_set(d)
        manifests.append(manifest)
        by_variant.setdefault(manifest.get("variant", "?"), []).append(
            (d.name, results["points"]))
    instruction_clock = regress.counts_instructions(manifests)
    comparisons = []
    for variant, boots in sorted(by_variant.items()):
        indexed = list(range(len(boots)))
        for base, new in sampled_splits(indexed, per_side, sample):
            # Paired as make regress pairs them: where they interleave.
            paired = interleaved([boots[i][0] for i in base], [boots[i][0] for i in new])
            rows = regress.compare([boots[i][1] for i in base], [boots[i][1] for i in new],
                                   paired, tuple(regress.METRICS), threshold, alpha,
                                   instruction_clock)
            comparisons.append({"variant": variant, "base": base, "new": new,
                                "paired": paired,
                                "flagged": [f"{r['series']} {r['threads']} {r['metric']}"
                                            for r in rows if r["regression"]],
                                "verdicts": verdicts.counts(rows),
                                "rows": rows})
    if not comparisons:
        raise ValueError(f"no variant has {2 * per_side} boots to split")
    return comparisons


def summary(comparisons, threshold=0.05):
    flagged = sum(bool(c["flagged"]) for c in comparisons)
    paired = sum(c["paired"] for c in comparisons)
    lines = [f"{flagged} of {len(comparisons)} A/A comparisons flagged a "
             f"regression ({100 * flagged / len(comparisons):.1f}%); "
             f"{paired} paired (their boots interleaved), "
             f"{len(comparisons) - paired} unpaired"]
    rows = [r for c in comparisons for r in c["rows"]]
    lines.append("  rows: " + verdicts.counts_line(rows, threshold))
    kinds = {}
    for c in comparisons:
        for r in c["rows"]:
            if r["mde"] is not None:
                kinds.setdefault(row_kind(r), []).append(r["mde"])
    for kind, mdes in sorted(kinds.items()):
        lines.append(f"  MDE {kind}: median {verdicts.fmt_mde(statistics.median(mdes))} "
                     f"(range {verdicts.fmt_mde(min(mdes))} to {verdicts.fmt_mde(max(mdes))})")
    for c in comparisons:
        if c["flagged"]:
            lines.append(f"  flagged: {c['variant']} boots {c['base']} vs "
                         f"{c['new']}: {'; '.join(c['flagged'])}")
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--per-side", type=int, default=2)
    parser.add_argument("--threshold", type=regress.percent, default=5.0)
    parser.add_argument("--alpha", type=regress.probability, default=0.05)
    parser.add_argument("--sample", type=int, default=500,
                        help="at most this many splits per variant (drawn at random)")
    parser.add_argument("--json", help="also write every comparison here")
    args = parser.parse_args(argv[1:])
    if args.per_side < 2:
        parser.error("--per-side must be 2 or more: one boot leaves the noise unknown")
    if args.sample < 1:
        parser.error("--sample must be 1 or more")
    try:
        comparisons = calibrate(args.sets, args.per_side, args.threshold / 100,
                                args.alpha, args.sample)
    except (BadSet, ValueError) as e:
        print(f"aa_calibration: {e}", file=sys.stderr)
        return 2
    print(summary(comparisons, args.threshold / 100))
    if args.json:
        Path(args.json).write_text(json.dumps(comparisons, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
