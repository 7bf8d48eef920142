# SPDX-License-Identifier: GPL-2.0
"""Percentiles of the bench module's latency histograms.

Two layouts: `latency_hdr_ns` (bench-module/latency.c: every power of two
split into 2^sub_bits linear buckets, stored sparse as [bucket, count]
pairs), and `latency_log2_ns` from sets made before it (bucket k holds
[2^k, 2^(k+1)) ns). An HDR bucket is read as its midpoint (at most 1/32 of
the value away, 3.1%), a log2 bucket as its upper bound (never optimistic,
up to a factor of two off).

A timed acquisition contains one clock read; the module measures that in
the same boot (`timer_hdr_ns` in its meta record) and latency_ns() gives
percentiles net of its median, with half its p10-p90 spread as the
uncertainty that leaves (measured here under TCG, three quiet boots: a
median of 200-300 ns, uncertainty 16-70 ns, against an uncontended
lock+unlock pair of 130-150 ns; local_clock() reads cost 80-120 ns). A
percentile with fewer than
MIN_TAIL_SAMPLES samples expected beyond it is named as thin: p99 wants a
thousand samples, p99.9 ten thousand.
"""

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p99_9": 99.9,
               "max": 100.0}
MIN_TAIL_SAMPLES = 10


def bucket_upper_ns(k):
    """A sample in log2 bucket k is below this."""
    return 2 ** (k + 1)


def hdr_bucket(index, sub_bits):
    """(lowest ns, width in ns) of HDR bucket index; the inverse of
    latency_bucket() in bench-module/latency.c."""
    sub = 1 << sub_bits
    shift = max(index // sub - 1, 0)
    return (index - shift * sub) << shift, 1 << shift


def hdr_value(index, sub_bits):
    low, width = hdr_bucket(index, sub_bits)
    return low + (width - 1) / 2


def histogram(point_or_meta, key_hdr, key_log2=None):
    """[(ns, count)] in increasing ns, from whichever layout is there."""
    hdr = point_or_meta.get(key_hdr)
    if hdr:
        return [(hdr_value(i, hdr["sub_bits"]), n)
                for i, n in sorted(hdr["counts"]) if n]
    log2 = point_or_meta.get(key_log2) if key_log2 else None
    if log2:
        return [(bucket_upper_ns(k), n) for k, n in enumerate(log2) if n]
    return []


def percentiles(hist, wanted=None):
    """{name: ns} for the wanted percentiles (PERCENTILES) of [(ns, count)],
    or None when it is empty."""
    total = sum(n for _, n in hist)
    if not total:
        return None
    out = {}
    for name, pct in (wanted or PERCENTILES).items():
        # The smallest value at which the cumulative count reaches pct.
        need = pct / 100 * total
        seen = 0
        for value, count in hist:
            seen += count
            if seen >= need:
                out[name] = value
                break
    return out


def thin(total):
    """The percentiles with too few samples behind them at total samples."""
    return [name for name, pct in PERCENTILES.items()
            if pct < 100 and total * (1 - pct / 100) < MIN_TAIL_SAMPLES]


def timer_ns(meta):
    """p10, p50 and p90 of the back-to-back clock reads of the boot, or None
    (sets from before the module measured them)."""
    return percentiles(histogram(meta or {}, "timer_hdr_ns"),
                       {"p10": 10.0, "p50": 50.0, "p90": 90.0})


def latency_ns(point, meta=None):
    """The point's latency percentiles and mean, ns, net of the boot's
    median clock read; None when the point sampled none."""
    hist = histogram(point, "latency_hdr_ns", "latency_log2_ns")
    raw = percentiles(hist)
    if raw is None:
        return None
    timer = timer_ns(meta)
    offset = timer["p50"] if timer else 0
    out = {name: max(value - offset, 0) for name, value in raw.items()}
    total = sum(n for _, n in hist)
    if point.get("latency_sum_ns") is not None:
        out["mean"] = max(point["latency_sum_ns"] / total - offset, 0)
    out["samples"] = total
    out["timer_subtracted"] = offset
    # How far one clock read strays from the median: the uncertainty that
    # the subtraction leaves in every value.
    out["timer_uncertainty"] = (timer["p90"] - timer["p10"]) / 2 if timer else None
    out["thin"] = thin(total)
    return out
