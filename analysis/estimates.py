# SPDX-License-Identifier: GPL-2.0
"""The lab's one estimator: how a boot's repetitions become one estimate
per row (series, thread count, metric), the unit every comparison, table,
figure and sentence of the lab is made of (analysis/regress.py judges
them, analysis/compare.py and analysis/plots.py show them). Nothing the
lab says pools repetitions across boots.
"""
import collections
import statistics

import latency
from results import is_disturbed, series_of


def estimator(series, threads, metric):
    """How a boot's throughput repetitions become its estimate of a row
    (a boot's p99 is pooled_percentile(), over all its repetitions).

    One thread alone (uncontended, or contended at 1 thread): there is no
    interleaving to vary, a slower repetition is one the host disturbed,
    and the fastest (the minimum-time estimator) is the boot's best
    reading. On the committed reference it narrows the boot-to-boot
    spread of those rows in 39 of 40 (4 designs; log sd of the median row
    2.1-4.1% against 4.8-13.1% for the median), as it did on the one
    before (0.2-1.1% against 0.5-1.2%).

    2 or more threads: the mean, the boot's throughput over all its
    repetitions. Under TCG they fall into a fast and a slow mode (about
    2x apart) in which the lock behaves differently (README,
    "Regressions"): the fastest would judge one mode only, and the median
    of five flips between the modes as 2 or 3 of them land in the slow
    one. The mean counts both modes by how often they came; on the
    committed reference it cuts the median MDE of those rows at 5 pairs
    from 153-230% to 78-106%."""
    if metric != "throughput":
        raise ValueError(f"{metric}: a boot's p99 is pooled_percentile()")
    if series == "uncontended" or threads == 1:
        return max
    return statistics.fmean


def pooled_percentile(points, name="p99"):
    """A boot's latency percentile of a row (latency.PERCENTILES' name):
    over all its repetitions' timed acquisitions together (their HDR
    histograms summed), net of the boot's clock read; None when the boot
    timed too few for it.

    Pooling, not the median of each repetition's p99: a slow repetition
    times fewer acquisitions, so a filter of repetitions too thin for
    their own p99 left out mostly slow ones (48-87% of the C800
    repetitions at 2-4 threads on the reference). Sets from before the
    HDR histogram: the median of every repetition's value, thin or not."""
    hists = [p.get("latency_hdr_ns") for p in points]
    if all(hists) and len({h["sub_bits"] for h in hists}) == 1:
        counts = collections.Counter()
        for h in hists:
            for bucket, n in h["counts"]:
                counts[bucket] += n
        merged = {"latency_hdr_ns": {"sub_bits": hists[0]["sub_bits"],
                                     "counts": sorted(counts.items())}}
        offset = (points[0].get("latency_ns") or {}).get("timer_subtracted", 0)
        raw = latency.percentiles(latency.histogram(merged, "latency_hdr_ns"),
                                  {name: latency.PERCENTILES[name]})
        if raw is None or name in latency.thin(sum(counts.values())):
            return None
        return max(raw[name] - offset, 0)
    values = [(p.get("latency_ns") or {}).get(name) for p in points]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def position(point):
    """Where a repetition stands in a boot's sweep: its row and number."""
    return series_of(point), point["threads"], point.get("rep")


def disturbed_positions(boots):
    """The repetitions (series, threads, rep) that the host disturbed in
    any of the boots: compare() leaves each out of every boot, so that
    both sides lose the same repetitions (left out per boot, one side
    lost up to 7 where the other lost none)."""
    return {position(p) for points in boots for p in points if is_disturbed(p)}


def boot_estimates(points, left_out=frozenset()):
    """{(series, threads, metric): the boot's estimate from its
    repetitions}, without the repetitions at positions left_out."""
    reps = {}
    for p in points:
        if position(p) not in left_out:
            reps.setdefault((series_of(p), p["threads"]), []).append(p)
    out = {}
    for (series, threads), group in reps.items():
        out[(series, threads, "throughput")] = estimator(
            series, threads, "throughput")([p["per_sec"] for p in group])
        p99 = pooled_percentile(group)
        if p99 is not None:
            out[(series, threads, "latency_p99")] = p99
    return out
