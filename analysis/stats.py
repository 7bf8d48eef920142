# SPDX-License-Identifier: GPL-2.0
"""Small-sample statistics for benchmark repetitions, without SciPy.

Repetitions of a lock benchmark are few (5 by default) and not normally
distributed (a noisy host adds a long tail), so the lab compares them with
rank statistics and a bootstrap, as google benchmark's compare.py does.
"""
import math
import random
import statistics
from functools import lru_cache

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20131204  # fixed: the same data give the same interval


def _ranks(values):
    """Mid-ranks (1-based) of values, ties sharing their average rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


@lru_cache(maxsize=None)
def _u_counts(m, n):
    """Number of arrangements giving each U, for samples of m and n."""
    if m == 0 or n == 0:
        return (1,)
    # The largest value is in the first sample (it beats all n) or not.
    with_first = _u_counts(m - 1, n)
    without = _u_counts(m, n - 1)
    counts = [0] * (m * n + 1)
    for u, c in enumerate(with_first):
        counts[u + n] += c
    for u, c in enumerate(without):
        counts[u] += c
    return tuple(counts)


def mann_whitney_u(a, b):
    """Two-sided Mann-Whitney U test of a against b: (U of a, p-value).

    Exact when there are no ties and both samples are small, else the
    normal approximation with tie and continuity corrections.
    """
    m, n = len(a), len(b)
    if m == 0 or n == 0:
        raise ValueError("both samples need values")
    ranks = _ranks(list(a) + list(b))
    u = sum(ranks[:m]) - m * (m + 1) / 2
    tied = len(set(a) | set(b)) < m + n
    if not tied and m * n <= 400:
        counts = _u_counts(m, n)
        total = sum(counts)
        low = min(u, m * n - u)
        tail = sum(counts[:int(low) + 1]) / total
        return u, min(1.0, 2 * tail)
    groups = {}
    for r in ranks:
        groups[r] = groups.get(r, 0) + 1
    ties = sum(t ** 3 - t for t in groups.values())
    size = m + n
    variance = m * n / 12 * ((size + 1) - ties / (size * (size - 1)))
    if variance == 0:
        return u, 1.0
    z = (abs(u - m * n / 2) - 0.5) / math.sqrt(variance)
    return u, min(1.0, math.erfc(max(z, 0) / math.sqrt(2)))


def min_p_value(m, n):
    """The smallest two-sided p-value samples of m and n can reach."""
    return min(1.0, 2 / math.comb(m + n, m))


def _percentile_interval(values, level):
    values = sorted(values)
    tail = (1 - level) / 2
    return (values[int(tail * (len(values) - 1))],
            values[int((1 - tail) * (len(values) - 1))])


def bootstrap_median_ci(values, level=0.95):
    """Percentile interval of the median of values."""
    rng = random.Random(BOOTSTRAP_SEED)
    return _percentile_interval(
        [statistics.median(rng.choices(values, k=len(values)))
         for _ in range(BOOTSTRAP_SAMPLES)], level)


def bootstrap_change_ci(base, new, level=0.95):
    """Percentile interval of median(new) / median(base) - 1."""
    rng = random.Random(BOOTSTRAP_SEED)
    changes = []
    for _ in range(BOOTSTRAP_SAMPLES):
        b = statistics.median(rng.choices(base, k=len(base)))
        n = statistics.median(rng.choices(new, k=len(new)))
        changes.append(n / b - 1)
    return _percentile_interval(changes, level)
