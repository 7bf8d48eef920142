# SPDX-License-Identifier: GPL-2.0
"""Fairness of one point's per-thread acquisition counts."""


def jain_index(counts):
    """Jain's fairness index: 1 when every thread got as much, 1/n when one
    thread got everything; None without acquisitions."""
    total = sum(counts)
    if not counts or total == 0:
        return None
    return total * total / (len(counts) * sum(c * c for c in counts))


def max_min_ratio(counts):
    """Most over fewest acquisitions of a thread; inf when one got none."""
    if not counts:
        return None
    low = min(counts)
    return float("inf") if low == 0 else max(counts) / low


def starved(counts):
    """locktorture's flag: the busiest thread got more than twice the least
    busy one (its "???" after Max/Min)."""
    return bool(counts) and max(counts) / 2 > min(counts)
