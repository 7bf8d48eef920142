# SPDX-License-Identifier: GPL-2.0
"""Percentiles of a log2 latency histogram (bucket k holds [2^k, 2^(k+1)) ns,
as the bench module counts them)."""

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p99_9": 99.9,
               "max": 100.0}


def bucket_upper_ns(k):
    """A sample in bucket k is below this; reported, so that a percentile
    is never optimistic by up to a factor of two."""
    return 2 ** (k + 1)


def percentiles(hist):
    """{name: ns upper bound} for PERCENTILES, or None for an empty one."""
    total = sum(hist)
    if not total:
        return None
    out = {}
    for name, pct in PERCENTILES.items():
        # The smallest bucket at which the cumulative count reaches pct.
        need = pct / 100 * total
        seen = 0
        for k, count in enumerate(hist):
            seen += count
            if count and seen >= need:
                out[name] = bucket_upper_ns(k)
                break
    return out
