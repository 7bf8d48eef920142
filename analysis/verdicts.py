# SPDX-License-Identifier: GPL-2.0
"""What a comparison's rows may say: three verdicts, never a bare "ok".

Each row (NEW's boots against BASE's, analysis/stats.py) gets one of

- SLOWER: its change for the worse is beyond the threshold and its
  two-sided test rejects "no change" family-wise (Holm over the rows
  whose test can reach its level, Tarone's rule). A significant slowdown
  is evidence whatever the row's power, so a row can be slower with an
  MDE above the threshold.
- NOT_SLOWER ("not slower than T%"): the non-inferiority test (the
  one-sided half of TOST, stats.not_worse_p) rejects "worse by T or
  more" family-wise (Holm over the same family), and the row could have
  seen a change of T (MDE at most T). A row that clears the threshold
  without that power is more lucky than shown, and reads CANNOT_TELL.
- CANNOT_TELL: neither; the row says why: too few boots, an exact test
  that cannot reach its level, or the MDE and the boots a side it would
  need; a significant change whose interval straddles the threshold says
  so ("slower by 1.3-8.1%, maybe less than 5%").

A comparison's verdict is SLOWER if any row is, NOTHING_JUDGED if no row
had a test, CANNOT_TELL if any row cannot tell, NOT_SLOWER otherwise.
"""
import math
import warnings

import stats

SLOWER, NOT_SLOWER, CANNOT_TELL = "slower", "not slower", "cannot tell"
NOTHING_JUDGED = "nothing judged"
KINDS = (SLOWER, NOT_SLOWER, CANNOT_TELL)
# The lab command's exit statuses (python3 lab regress); make turns any
# non-zero status into its own 2.
EXIT_OK, EXIT_SLOWER, EXIT_BAD_INPUT, EXIT_NOT_JUDGED, EXIT_CANNOT_TELL = 0, 1, 2, 3, 4
# An exception the lab did not expect: a bug, never "slower" (Python's own
# status for an uncaught exception is 1, the status of a regression).
EXIT_INTERNAL_ERROR = 5


def word(kind, threshold):
    """A verdict as it is printed: NOT_SLOWER carries its threshold."""
    return f"not slower than {100 * threshold:g}%" if kind == NOT_SLOWER else kind


def smallest_p(row):
    """The smallest p a row's test could give, from its boot counts alone:
    none for a row without two boots a side, 0 for a t test, the exact
    test's floor where the exact test judges the row."""
    if row["p_value"] is None:
        return math.inf
    if row.get("noiseless") or (row["test"] == "p_value" and row["t_test"]):
        return 0.0
    return stats.smallest_exact_p(row["boots"], row["paired"])


def row_p(row):
    """The p that judges a row: its t test's, or the exact test's where the
    row's metric asks for it or the t test was not made."""
    if row["test"] == "p_value" and (row["t_test"] or row.get("noiseless")):
        return row["p_value"]
    return row["p_exact"]


def judge(rows, threshold, alpha):
    """Holm over the family (stats.tarone_family) for both questions, "did
    it change?" and "is it not worse by the threshold?"; then each row's
    verdict, its MDE (at Holm's strictest level) and a reason."""
    family = set(stats.tarone_family([smallest_p(r) for r in rows], alpha))
    changed, p_holm = stats.holm(
        [row_p(r) if i in family else None for i, r in enumerate(rows)], alpha)
    not_worse, p_holm_not_worse = stats.holm(
        [r["p_not_worse"] if i in family else None for i, r in enumerate(rows)], alpha)
    row_alpha = alpha / max(len(family), 1)
    for i, r in enumerate(rows):
        r["judged"] = i in family
        with warnings.catch_warnings():
            # Tiny alphas at 2 degrees of freedom trip SciPy's noncentral t.
            warnings.simplefilter("ignore", RuntimeWarning)
            r["mde"] = (stats.mde(r, row_alpha, r["higher_is_better"])
                        if r["judged"] else None)
        r["p_holm"], r["p_holm_not_worse"] = p_holm[i], p_holm_not_worse[i]
        r["regression"] = bool(changed[i] and stats.worse_of(r) > threshold)
        powered = r["mde"] is not None and r["mde"] <= threshold
        r["verdict_kind"] = (SLOWER if r["regression"]
                             else NOT_SLOWER if not_worse[i] and powered
                             else CANNOT_TELL)
        r["verdict"] = word(r["verdict_kind"], threshold)
        r["why"] = reason(r, threshold, row_alpha, changed[i])


def interval_text(row):
    """'slower by 1.3-8.1%' / 'faster by ...' from the row's 95% interval
    (a change for the worse as a positive fraction), or None."""
    if not row["ci95"]:
        return None
    low, high = row["ci95"]
    if not row["higher_is_better"]:
        low, high = -high, -low  # latency: a rise is worse
    # As worse: the larger fraction first when both bounds are worse.
    if high < 0:
        return f"slower by {100 * -high:.1f}-{100 * -low:.1f}%"
    if low > 0:
        return f"faster by {100 * low:.1f}-{100 * high:.1f}%"
    return None


def reason(row, threshold, row_alpha, changed):
    """Why a row reads what it reads, in a few words."""
    limit = f"{100 * threshold:g}%"
    seen = interval_text(row)
    if row["verdict_kind"] == SLOWER:
        if seen is None:
            # No t interval (boots that all moved alike, judged exactly).
            return f"slower by {100 * stats.worse_of(row):.1f}% in every boot (exact test)"
        maybe_less = min(abs(x) for x in row["ci95"]) < threshold
        return seen + (f", maybe less than {limit}" if maybe_less else "")
    if row["verdict_kind"] == NOT_SLOWER:
        return f"within {limit} (MDE {fmt_mde(row['mde'])})"
    if row["p_value"] is None:
        return "one boot a side: no noise known"
    if not row["judged"]:
        if not row["t_test"] and row["test"] == "p_value":
            return (f"{min(row['boots'])} boots a side: no interval "
                    f"(a t test needs {stats.MIN_T_BOOTS})")
        text = (f"{min(row['boots'])} boots a side: its exact test cannot "
                "reach the family's level")
        # A t interval that excludes no change is shown, not judged by.
        return text + (f"; the t interval alone: {seen}" if seen else "")
    parts = []
    if changed and seen:
        parts.append(seen + (f", maybe less than {limit}" if seen.startswith("slower")
                             else ""))
    if row["mde"] is not None:
        parts.append(f"MDE {fmt_mde(row['mde'])}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            need = stats.boots_for(row, threshold, row_alpha,
                                   higher_is_better=row["higher_is_better"])
        if need and row["mde"] > threshold:
            unit = "pairs" if row["paired"] else "boots a side"
            parts.append(f"{'over 1000' if need > 1000 else need} {unit} for {limit}")
    return "; ".join(parts) or "interval reaches past the threshold"


def fmt_mde(x):
    """An MDE as the change it detects for the worse (a drop of
    throughput, a rise of latency)."""
    return ">999%" if x > 9.99 else f"{100 * x:.1f}%"


def counts(rows):
    """{verdict kind: how many rows read it}."""
    return {kind: sum(r["verdict_kind"] == kind for r in rows) for kind in KINDS}


def overall(rows):
    """The comparison's verdict kind."""
    if any(r["verdict_kind"] == SLOWER for r in rows):
        return SLOWER
    if not any(r["judged"] for r in rows):
        return NOTHING_JUDGED
    if any(r["verdict_kind"] == CANNOT_TELL for r in rows):
        return CANNOT_TELL
    return NOT_SLOWER


def exit_status(kind, strict=False):
    """The lab command's status for a comparison's verdict: CANNOT_TELL
    fails only under strict (STRICT=1)."""
    return {SLOWER: EXIT_SLOWER, NOTHING_JUDGED: EXIT_NOT_JUDGED,
            CANNOT_TELL: EXIT_CANNOT_TELL if strict else EXIT_OK,
            NOT_SLOWER: EXIT_OK}[kind]


def counts_line(rows, threshold):
    c = counts(rows)
    return (f"verdicts: {c[SLOWER]} slower, {c[NOT_SLOWER]} "
            f"{word(NOT_SLOWER, threshold)}, {c[CANNOT_TELL]} cannot tell "
            f"(of {len(rows)} rows)")
