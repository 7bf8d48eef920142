# SPDX-License-Identifier: GPL-2.0
"""Statistics of benchmark comparisons, with the boot as the unit.

Repetitions inside one boot share that boot's luck (where the guest's
memory landed, what the host was doing): on the lab's reference they
correlate up to 0.71, so pooling them as independent claims far more
confidence than the data hold. Every test here therefore takes one
estimate per boot and compares boots, on the log scale, where a slowdown
is a ratio and boot-to-boot noise is close to symmetric:

- paired boots (interleaved rounds, the i-th of each side): a one-sample t
  test of the log-ratios, whose interval is the interval of the ratio;
- unpaired boots: Welch's t test of the log estimates;
- beside either, an exact permutation test of the same statistic
  (sign flips, or all relabellings), which needs no normality and handles
  ties; it is the p-value where the t statistic is undefined (all
  log-ratios equal);
- Holm's step-down over the rows of one comparison (family-wise error,
  whatever the dependence between rows, which share boots), the family
  chosen by Tarone's rule: a row whose test cannot give a p small enough
  (an exact test with few boots) is left out and spends none of alpha;
- the minimum detectable effect: the ratio a row would flag with 80%
  power at the strictest level Holm applies (alpha / rows judged).
SciPy and statsmodels (Debian's python3-scipy, python3-statsmodels) do the
arithmetic.
"""
import math
import random
import statistics

import numpy as np
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestIndPower, TTestPower
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20131204  # fixed: the same data give the same interval
POWER = 0.8
# Beyond this many arrangements the permutation test samples them.
EXACT_PERMUTATIONS = 200000


def _change(log_ratio):
    return math.expm1(log_ratio)


def _arrangements(boots, paired):
    """How many ways the permutation test relabels boots [base, new]:
    sign flips of the pairs, or splits of all boots into the two sides."""
    m, n = boots
    return 2 ** m if paired else math.comb(m + n, m)


def smallest_exact_p(boots, paired):
    """The smallest two-sided p the permutation test can give with these
    boot counts, whatever they measured: the observed arrangement and its
    mirror image over all arrangements (or over the resamples plus the
    observed one, where they are sampled)."""
    return 2 / min(_arrangements(boots, paired), EXACT_PERMUTATIONS + 1)


def pairs_for_exact(level):
    """The fewest pairs whose exact test can give a p at or below level;
    None where no count can (below the sampled test's floor)."""
    if smallest_exact_p([EXACT_PERMUTATIONS, EXACT_PERMUTATIONS], True) > level:
        return None
    pairs = 2
    while smallest_exact_p([pairs, pairs], True) > level:
        pairs += 1
    return pairs


def _permutation_p(base_logs, new_logs, paired):
    """Exact two-sided permutation p of the mean (log) difference."""
    def mean_difference(b, n, axis):
        return np.mean(n, axis=axis) - np.mean(b, axis=axis)

    arrangements = _arrangements((len(base_logs), len(new_logs)), paired)
    result = sps.permutation_test(
        (np.asarray(base_logs), np.asarray(new_logs)), mean_difference,
        permutation_type="samples" if paired else "independent",
        vectorized=True, alternative="two-sided",
        n_resamples=min(arrangements, EXACT_PERMUTATIONS),
        random_state=BOOTSTRAP_SEED)
    return float(result.pvalue)


def boot_comparison(base, new, paired, noiseless_when_equal=False):
    """NEW's boots against BASE's: a dict with the change of the ratio of
    geometric means, its 95% interval, the t test's p, the exact
    permutation p, and what the spread allows to detect (see mde()).

    base and new hold one positive estimate per boot; paired means the
    i-th boots of the two sides ran in the same round. With fewer than two
    boots on a side (or pairs) nothing is known of the boot-to-boot noise:
    the interval and p-values are None.

    Boots that all moved by the same ratio leave the t test no spread.
    Where that is quantization (a p99 in one bucket) nothing is known of
    the noise, and the exact test answers. noiseless_when_equal says it is
    a clock that counts instructions (ACCEL=icount): there boots agree
    because the measurement has no noise to give, and the t test's limit
    holds: p 0 for any change, the interval the change itself, the MDE 0."""
    if paired and len(base) != len(new):
        raise ValueError("paired boots need the same count on both sides")
    if min(base + new) <= 0:
        raise ValueError("estimates must be positive")
    b, n = np.log(base), np.log(new)
    out = {"paired": paired, "boots": [len(b), len(n)],
           "change": _change(float(np.mean(n) - np.mean(b))),
           "ci95": None, "p_value": None, "p_exact": None, "spread": None,
           "df": None}
    if paired:
        d = n - b
        if len(d) < 2:
            return out
        out["spread"] = float(np.std(d, ddof=1))
        out["df"] = len(d) - 1
        described = DescrStatsW(d)
        if out["spread"] > 0:
            out["ci95"] = [_change(x) for x in described.tconfint_mean(0.05)]
            out["p_value"] = float(described.ttest_mean(0)[1])
    else:
        if min(len(b), len(n)) < 2:
            return out
        means = CompareMeans(DescrStatsW(n), DescrStatsW(b))
        # The pooled spread of one boot, for the detectable effect.
        out["spread"] = float(math.sqrt((np.var(b, ddof=1) + np.var(n, ddof=1)) / 2))
        if out["spread"] > 0:
            _, p, df = means.ttest_ind(usevar="unequal")
            out["ci95"] = [_change(x) for x in means.tconfint_diff(0.05, usevar="unequal")]
            out["p_value"], out["df"] = float(p), float(df)
    out["p_exact"] = _permutation_p(b, n, paired)
    if out["spread"] == 0 and noiseless_when_equal:
        out["noiseless"] = True
        out["ci95"] = [out["change"], out["change"]]
        out["p_value"] = 0.0 if out["change"] else 1.0
    if out["p_value"] is None:
        # Every boot moved by the same ratio: no spread for t, and the
        # permutation test is the honest answer.
        out["p_value"] = out["p_exact"]
    return out


def mde(comparison, alpha):
    """The smallest change (a ratio minus one) that the comparison would
    detect with POWER at two-sided level alpha, given the spread between
    its boots; None when the spread is unknown (fewer than two boots, or
    boots that all measured the same value: quantized data say nothing of
    their noise)."""
    spread = comparison["spread"]
    m, n = comparison["boots"]
    if comparison.get("noiseless"):
        return 0.0
    if not spread:
        return None
    if comparison["paired"]:
        effect = TTestPower().solve_power(nobs=m, alpha=alpha, power=POWER)
        return _change(effect * spread)
    effect = TTestIndPower().solve_power(nobs1=m, ratio=n / m, alpha=alpha,
                                         power=POWER)
    return _change(effect * spread)


def boots_for(comparison, change, alpha, most=1000):
    """How many boots a side (pairs, when paired) the comparison would
    need to detect change (a ratio minus one) with POWER at level alpha,
    if its boots spread as these did; None when the spread is unknown,
    most + 1 beyond most."""
    spread = comparison["spread"]
    if not spread or change <= 0:
        return None
    effect = math.log1p(change) / spread
    m, n = comparison["boots"]

    def enough(boots):
        if comparison["paired"]:
            power = TTestPower().power(effect_size=effect, nobs=boots, alpha=alpha)
        else:
            power = TTestIndPower().power(effect_size=effect, nobs1=boots,
                                          ratio=n / m, alpha=alpha)
        return power >= POWER

    if not enough(most):
        return most + 1
    # Bisection: enough(high) holds; low is 1, below the least count of 2.
    low, high = 1, most
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    return high


def tarone_family(smallest_p, alpha):
    """Which hypotheses to test, from the smallest p each could give
    (Tarone 1990, for discrete tests): the least K such that at most K
    of them can reach alpha / K; those are the family, the rest can never
    be rejected at that level and spend none of alpha. Valid for any
    dependence when the smallest p values do not depend on the data (here
    they depend on boot counts only). Returns the indices in the family."""
    for k in range(1, len(smallest_p) + 1):
        family = [i for i, p in enumerate(smallest_p) if p <= alpha / k]
        if len(family) <= k:
            return family
    return []  # no hypotheses: k = their count always returns above


def holm(p_values, alpha):
    """(reject, adjusted p) per p-value, by Holm's step-down; None stays
    None (a row that could not be tested) and counts for nothing."""
    tested = [i for i, p in enumerate(p_values) if p is not None]
    reject = [False] * len(p_values)
    adjusted = [None] * len(p_values)
    if tested:
        r, adj, _, _ = multipletests([p_values[i] for i in tested], alpha=alpha,
                                     method="holm")
        for i, ri, ai in zip(tested, r, adj):
            reject[i], adjusted[i] = bool(ri), float(ai)
    return reject, adjusted


def _percentile_interval(values, level):
    values = sorted(values)
    tail = (1 - level) / 2
    return (values[int(tail * (len(values) - 1))],
            values[int((1 - tail) * (len(values) - 1))])


def bootstrap_median_ci(values, level=0.95):
    """Percentile interval of the median of values (plot bands)."""
    rng = random.Random(BOOTSTRAP_SEED)
    return _percentile_interval(
        [statistics.median(rng.choices(values, k=len(values)))
         for _ in range(BOOTSTRAP_SAMPLES)], level)
