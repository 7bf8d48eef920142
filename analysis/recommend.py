# SPDX-License-Identifier: GPL-2.0
"""make compare's recommendation and the run's drift, both from the boot
by boot rows that make regress judges (regress.compare), never from
repetitions pooled across boots.

Speed is said per thread group (uncontended, then each thread count) in
the three verdicts (analysis/verdicts.py), so that every word of the
recommendation is a count of rows in the report's boot tables.
"""
import math
import statistics
from datetime import datetime, timezone

import numpy as np

import stats
import verdicts

# Rows of a group at or beyond this median MDE: this machine cannot tell,
# and the recommendation sends the run to a bigger one.
BUNDLE_HINT = ("run it with `make bundle` on a machine with more cores "
               "(README, \"Other machines\")")


def group_of(row):
    return "uncontended" if row["series"] == "uncontended" else (
        f"{row['threads']} thread{'s' if row['threads'] > 1 else ''}")


def group_order(name):
    return (0, 0) if name == "uncontended" else (1, int(name.split()[0]))


def is_faster(row, threshold, alpha):
    """Significant family-wise and better by more than the threshold: the
    mirror of SLOWER (the base would be slower than the new)."""
    return (row["p_holm"] is not None and row["p_holm"] < alpha
            and -stats.worse_of(row) > threshold)


def speed_by_group(rows, threshold, alpha):
    """{group: counts of its throughput rows' verdicts, faster, rows, the
    median MDE}, in the order uncontended, 1, 2, 4 ... threads."""
    out = {}
    for r in rows:
        if r["metric"] != "throughput":
            continue
        g = out.setdefault(group_of(r), {**{k: 0 for k in verdicts.KINDS},
                                         "faster": 0, "rows": 0, "mdes": []})
        g[r["verdict_kind"]] += 1
        g["faster"] += is_faster(r, threshold, alpha)
        g["rows"] += 1
        if r["mde"] is not None:
            g["mdes"].append(r["mde"])
    for g in out.values():
        mdes = g.pop("mdes")
        g["median_mde"] = statistics.median(mdes) if mdes else None
    return dict(sorted(out.items(), key=lambda kv: group_order(kv[0])))


def group_sentence(name, g, threshold):
    """One group's speed in the verdicts' words, e.g. '2 threads: cannot
    tell here (4 rows, median MDE 80.1%)'."""
    rows = f"{g['rows']} row{'s' if g['rows'] > 1 else ''}"
    mde = (f", median MDE {verdicts.fmt_mde(g['median_mde'])}"
           if g["median_mde"] is not None else ", no MDE: too few boots")
    if g[verdicts.SLOWER]:
        text = f"{name}: slower in {g[verdicts.SLOWER]} of {rows}"
    elif g[verdicts.NOT_SLOWER] == g["rows"]:
        text = f"{name}: {verdicts.word(verdicts.NOT_SLOWER, threshold)} ({rows})"
    elif g[verdicts.CANNOT_TELL] == g["rows"]:
        text = f"{name}: cannot tell here ({rows}{mde})"
    else:
        text = (f"{name}: {verdicts.word(verdicts.NOT_SLOWER, threshold)} in "
                f"{g[verdicts.NOT_SLOWER]} of {rows}, cannot tell in "
                f"{g[verdicts.CANNOT_TELL]}{mde}")
    if g["faster"]:
        text += f"; faster beyond {100 * threshold:g}% in {g['faster']}"
    return text


def rank(entry):
    """Among designs that pass the gates: fewest slower rows, then most
    faster, then most rows not slower, then the smaller mutex, then the
    smaller mutex.o text."""
    groups = entry["speed"].values()
    return (-sum(g[verdicts.SLOWER] for g in groups),
            sum(g["faster"] for g in groups),
            sum(g[verdicts.NOT_SLOWER] for g in groups),
            -(entry.get("sizeof_mutex") or 0),
            -(entry.get("mutex_text_bytes") or 0))


RANK_REASONS = ("fewer rows slower than the baseline", "more rows faster",
                "more rows not slower", "a smaller struct mutex",
                "less mutex.o text")


def decided_by(best, other):
    """Why best ranks above other, in words with both designs' figures."""
    for i, (a, b) in enumerate(zip(rank(best), rank(other))):
        if a != b:
            figures = (f" ({best['variant']} {abs(a)}, {other['variant']} {abs(b)}"
                       f"{' bytes' if i >= 3 else ''})")
            return RANK_REASONS[i] + figures
    return "nothing here tells them apart; listed first"


def recommendation(entries, baseline, threshold):
    """The recommendation's paragraph: the best design that passes both
    gates, its speed against the baseline group by group, and what
    decided between the designs that pass."""
    passing = [e for e in entries if e["gates"]]
    if not passing:
        return ["No variant passes both correctness gates with benchmark "
                "numbers here: run `make check VARIANT=x` for each."]
    best = max(passing, key=rank)
    lines = [f"**{best['variant']}**: passes both correctness gates (mutual "
             "exclusion, free-safety).", ""]
    if best["variant"] == baseline or not best["speed"]:
        lines.append(f"It is the baseline ({baseline}): no boot table compares it.")
    else:
        lines.append(f"Throughput against {baseline}, boot by boot (the tables "
                     "below, each row's verdict counted):")
        lines += [f"- {group_sentence(name, g, threshold)}"
                  for name, g in best["speed"].items()] + [""]
        blind = [name for name, g in best["speed"].items()
                 if g[verdicts.CANNOT_TELL] and g["median_mde"] is not None
                 and g["median_mde"] > threshold]
        if blind:
            lines.append(f"Where this machine cannot tell ({', '.join(blind)}): "
                         f"{BUNDLE_HINT}.")
    for other in passing:
        if other is not best:
            speed_tied = rank(other)[:3] == rank(best)[:3]
            lines.append(f"Chosen over {other['variant']} (also passing both gates"
                         + (", with the same verdict counts" if speed_tied else "")
                         + f"): {decided_by(best, other)}.")
    return lines


def start_of(name):
    """A set's UTC start from its folder name (YYYYmmddTHHMMSSZ-host)."""
    try:
        return datetime.strptime(name[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def drift(estimates_by_variant):
    """The run's drift, from the boots' own estimates: per thread group
    ('1 thread' with uncontended, '2-4 threads'), the slope of a row's log
    estimate against the boot's start, fitted within each design and row
    (their levels removed), as the change per 10 minutes; and each
    design's mean start against the run's (minutes), the lever that
    slope has on it. None without start times or fewer than 3 boots."""
    samples = {"1 thread": [], "2+ threads": []}
    starts = {}
    for variant, boots in estimates_by_variant.items():
        times = [start_of(name) for name, _ in boots]
        if None in times:
            return None
        starts[variant] = times
        if len(boots) < 2:
            continue  # one boot has no slope of its own
        # Sorted: the same boots sum in the same order, to the last digit.
        for key in sorted(set().union(*(est for _, est in boots))):
            series, threads, metric = key
            if metric != "throughput":
                continue
            have = [(t, est[key]) for t, (_, est) in zip(times, boots) if key in est]
            if len(have) < 2:
                continue
            group = "1 thread" if series == "uncontended" or threads == 1 else "2+ threads"
            samples[group].append(have)
    everyone = [t for ts in starts.values() for t in ts]
    if len(everyone) < 3:
        return None
    origin = min(everyone)
    minutes = lambda t: (t - origin).total_seconds() / 60  # noqa: E731
    mean_all = statistics.fmean(minutes(t) for t in everyone)
    out = {"per_10_min": {}, "span_min": minutes(max(everyone)), "mean_start_min": {
        v: statistics.fmean(minutes(t) for t in ts) - mean_all for v, ts in starts.items()}}
    for group, rows in samples.items():
        xy = 0.0
        xx = 0.0
        for have in rows:
            x = np.array([minutes(t) for t, _ in have])
            y = np.log([v for _, v in have])
            x, y = x - x.mean(), y - y.mean()
            xy += float(x @ y)
            xx += float(x @ x)
        if xx > 0:
            out["per_10_min"][group] = math.expm1(10 * xy / xx)
    return out


def drift_lines(found, order):
    """The report's drift paragraph."""
    if not found or not found["per_10_min"]:
        return ["Drift: unknown (too few boots, or set names without their start)."]
    slopes = ", ".join(f"{100 * v:+.2f}% per 10 minutes at {g}"
                       for g, v in found["per_10_min"].items())
    if len(found["mean_start_min"]) == 1:
        return [f"Drift of the machine over these boots (each row's throughput "
                f"against its boot's start): {slopes}"
                + (f"; their starts span {found['span_min']:.1f} minutes."
                   if "span_min" in found else ".")]
    worst = max(abs(v) for v in found["per_10_min"].values())
    starts = found["mean_start_min"]
    lever = max(abs(x) for x in starts.values())
    order_text = {"counterbalanced": "counterbalanced rounds (A B ... B A): every "
                  "design's mean position in its rounds is the same, so a linear "
                  "drift cancels",
                  "fixed": "the same order in every round: the last design of a round "
                  "carries the drift"}.get(order, "the order of the boots is not recorded")
    span = (f"; the boots' starts span {found['span_min']:.1f} minutes"
            if "span_min" in found else "")
    return [f"Drift of the machine over this run (each row's throughput against "
            f"its boot's start, within each design): {slopes}{span}. Rounds: "
            f"{order_text}. Each design's mean start against the run's: "
            + ", ".join(f"{v} {m:+.1f} min" for v, m in starts.items())
            + f"; at the drift above that moves a design by at most "
            f"{100 * worst * lever / 10:.2f}%."]


def round_order(estimates_by_variant):
    """How the run ordered its rounds, read from the boots' starts:
    'fixed' (A B C, A B C), 'counterbalanced' (A B C, C B A, ...), or
    None (not rounds of every design, or another order)."""
    timeline = sorted((start_of(name), variant)
                      for variant, boots in estimates_by_variant.items()
                      for name, _ in boots)
    k = len(estimates_by_variant)
    if k < 2 or any(t is None for t, _ in timeline) or len(timeline) % k:
        return None
    rounds = [tuple(v for _, v in timeline[i:i + k]) for i in range(0, len(timeline), k)]
    if any(len(set(r)) != k for r in rounds) or len(rounds) < 2:
        return None
    if all(r == rounds[0] for r in rounds):
        return "fixed"
    if all(r == (rounds[0] if i % 2 == 0 else rounds[0][::-1])
           for i, r in enumerate(rounds)):
        return "counterbalanced"
    return None
