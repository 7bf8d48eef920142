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
  power at the strictest level Holm applies (alpha / rows judged), from
  the same t distribution the test uses (Welch's degrees of freedom for
  unpaired boots);
- a one-sided non-inferiority test beside the two-sided one: is the
  change for the worse smaller than a threshold? (the equivalence half
  of TOST that says "not slower than 5%", where the two-sided test can
  only say "no evidence of a change").
A t interval needs MIN_T_BOOTS boots a side (pairs): with two, one degree
of freedom, boots that happen to agree give an interval a tenth of a
percent wide for a change of -20% (README, "Regressions": the A/A false
alarms at 2 boots a side); there the exact test alone
speaks, and its floor (0.5 at 2 pairs) says nothing can be told.
SciPy and statsmodels (Debian's python3-scipy, python3-statsmodels) do the
arithmetic.
"""
import math

import numpy as np
from scipy import stats as sps
from scipy.optimize import brentq
from statsmodels.stats.multitest import multipletests

# Fixed: the same boots give the same sampled permutation p.
PERMUTATION_SEED = 20131204
POWER = 0.8
# Fewest boots a side (pairs) for a t test and its interval: two give one
# degree of freedom, and intervals as narrow as chance makes them.
MIN_T_BOOTS = 3
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
        random_state=PERMUTATION_SEED)
    return float(result.pvalue)


def boot_comparison(base, new, paired, noiseless_when_equal=False):
    """NEW's boots against BASE's: a dict with the change of the ratio of
    geometric means, its 95% interval, the t test's p, the exact
    permutation p, and what the spread allows to detect (see mde()).

    base and new hold one positive estimate per boot; paired means the
    i-th boots of the two sides ran in the same round. With fewer than
    MIN_T_BOOTS boots on a side (or pairs) the t test is not made: no
    interval, and the exact test's p stands for the row (t_test False).
    The spread is still given from two boots, for boots_for()'s estimate
    of what a real comparison would need.

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
           "spreads": None, "df": None, "t_test": False}
    if min(len(b), len(n)) < 2:
        return out
    out.update(_spreads(b, n, paired))
    se, df = _standard_error(out)
    out["p_exact"] = _permutation_p(b, n, paired)
    if out["spread"] == 0 and noiseless_when_equal:
        out["noiseless"] = True
        out["ci95"] = [out["change"], out["change"]]
        out["p_value"] = 0.0 if out["change"] else 1.0
        return out
    if min(len(b), len(n)) >= MIN_T_BOOTS and se > 0:
        log_change = float(np.mean(n) - np.mean(b))
        half = float(sps.t.isf(0.025, df)) * se
        out.update(t_test=True, df=df,
                   ci95=[_change(log_change - half), _change(log_change + half)],
                   p_value=float(2 * sps.t.sf(abs(log_change) / se, df)))
    else:
        # Too few boots for a t interval, or every boot moved by the same
        # ratio: the permutation test is the honest answer.
        out["p_value"] = out["p_exact"]
    return out


def _spreads(b, n, paired):
    """The boots' spread, from their logs b and n: of the paired log-ratios,
    or each side's (spreads) and their pooled value (spread, shown beside
    the change)."""
    if paired:
        return {"spread": float(np.std(n - b, ddof=1))}
    spreads = [float(np.std(b, ddof=1)), float(np.std(n, ddof=1))]
    return {"spreads": spreads,
            "spread": float(math.sqrt(sum(x * x for x in spreads) / 2))}


def _standard_error(comparison, boots=None):
    """(standard error of the mean log change, degrees of freedom) of a
    comparison's t test, at its own boot counts or at boots [m, n]:
    paired, the one-sample t of the log-ratios; unpaired, Welch's, with
    the Welch-Satterthwaite degrees of freedom."""
    m, n = boots or comparison["boots"]
    if comparison["paired"]:
        return comparison["spread"] / math.sqrt(m), m - 1
    sb, sn = comparison.get("spreads") or [comparison["spread"]] * 2
    vb, vn = sb * sb / m, sn * sn / n
    if vb + vn == 0:
        return 0.0, m + n - 2
    df = (vb + vn) ** 2 / (vb * vb / (m - 1) + vn * vn / (n - 1))
    return math.sqrt(vb + vn), df


def _power(effect, se, df, alpha):
    """Power of the two-sided t test at level alpha against a true log
    change effect, the noncentral t (as statsmodels' TTestPower)."""
    critical = sps.t.isf(alpha / 2, df)
    shift = effect / se
    return float(sps.nct.sf(critical, df, shift) + sps.nct.cdf(-critical, df, shift))


def _detectable_log_change(se, df, alpha):
    """The least log change the t test detects with POWER."""
    high = se
    while _power(high, se, df, alpha) < POWER:
        high *= 2
    return brentq(lambda e: _power(e, se, df, alpha) - POWER, 0.0, high,
                  xtol=1e-12 * high)


def worse_change(log_change, higher_is_better):
    """A log change for the worse as the change a reader sees, a positive
    fraction: for throughput the drop (a log change of 1.68 is 81% lower,
    not 438%), for latency the rise."""
    return -math.expm1(-log_change) if higher_is_better else math.expm1(log_change)


def worse_log_change(change, higher_is_better):
    """The inverse of worse_change(): the log change of a change for the
    worse (a positive fraction); infinite for a drop of all throughput."""
    if higher_is_better:
        return -math.log1p(-change) if change < 1 else math.inf
    return math.log1p(change)


def worse_of(row):
    """A row's change as a change for the worse: positive is worse
    (throughput lower, latency higher), negative better."""
    return -row["change"] if row["higher_is_better"] else row["change"]


def mde(comparison, alpha, higher_is_better=True):
    """The smallest change for the worse (a positive fraction: a drop for
    throughput, a rise for latency) that the comparison would detect with
    POWER at two-sided level alpha, given the spread between its boots, by
    the same t test that judges it; None when the t test was not made
    (fewer than MIN_T_BOOTS boots a side, or boots that all measured the
    same value: quantized data say nothing of their noise)."""
    if comparison.get("noiseless"):
        return 0.0
    if not comparison.get("t_test"):
        return None
    se, df = _standard_error(comparison)
    return worse_change(_detectable_log_change(se, df, alpha), higher_is_better)


def boots_for(comparison, change, alpha, most=1000, higher_is_better=True):
    """How many boots a side (pairs, when paired) the comparison would
    need to detect change (a positive fraction for the worse) with POWER
    at level alpha, if its boots spread as these did; None when the
    spread is unknown, most + 1 beyond most."""
    effect = worse_log_change(change, higher_is_better)
    if not comparison["spread"] or change <= 0 or effect == math.inf:
        return None
    m, n = comparison["boots"]

    def enough(boots):
        other = boots if comparison["paired"] else max(2, round(boots * n / m))
        se, df = _standard_error(comparison, [boots, other])
        return _power(effect, se, df, alpha) >= POWER

    if not enough(most):
        return most + 1
    # Bisection: enough(high) holds; low is MIN_T_BOOTS - 1, below the
    # least count that gives a t test.
    low, high = MIN_T_BOOTS - 1, most
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    return high


def not_worse_p(base, new, paired, margin, higher_is_better, exact=False,
                noiseless=False):
    """One-sided p of "NEW is worse than BASE by margin or more" (a
    positive fraction: a drop for throughput, a rise for latency), the
    non-inferiority half of TOST; small means NEW is not that much worse.
    exact: by the permutation test of the shifted log changes (sign flips
    or relabellings), as boot_comparison's p_exact; otherwise the t test
    (None with fewer than MIN_T_BOOTS boots a side, or no spread); None
    for either with a single boot on a side."""
    sign = 1.0 if higher_is_better else -1.0
    # In units of "gain" (positive is better), the worst tolerated gain.
    bound = -worse_log_change(margin, higher_is_better)
    b = sign * np.log(base)
    n = sign * np.log(new)
    if min(len(b), len(n)) < 2:
        return None
    if bound == -math.inf:
        return 0.0
    if exact:
        result = sps.permutation_test(
            (b + bound, n), lambda x, y, axis: np.mean(y, axis=axis) - np.mean(x, axis=axis),
            permutation_type="samples" if paired else "independent",
            vectorized=True, alternative="greater",
            n_resamples=min(_arrangements((len(b), len(n)), paired), EXACT_PERMUTATIONS),
            random_state=PERMUTATION_SEED)
        return float(result.pvalue)
    gain = float(np.mean(n) - np.mean(b))
    if noiseless:
        return 0.0 if gain > bound else 1.0
    if min(len(b), len(n)) < MIN_T_BOOTS:
        return None
    se, df = _standard_error({"paired": paired, "boots": [len(b), len(n)],
                              **_spreads(b, n, paired)})
    if se == 0:
        return None
    return float(sps.t.sf((gain - bound) / se, df))


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


def boot_mean_ci(values, level=0.95):
    """(geometric mean, low, high) of one estimate per boot: the t
    interval of the mean log over the boots, the interval every figure of
    the lab's report uses; low and high are None with fewer than
    MIN_T_BOOTS boots (no interval narrower than the boots allow)."""
    logs = np.log(values)
    centre = float(np.exp(np.mean(logs)))
    if len(logs) < MIN_T_BOOTS:
        return centre, None, None
    half = float(sps.t.isf((1 - level) / 2, len(logs) - 1) * np.std(logs, ddof=1)
                 / math.sqrt(len(logs)))
    return centre, centre * math.exp(-half), centre * math.exp(half)
