# SPDX-License-Identifier: GPL-2.0
"""A comparison of make regress in words (analysis/regress.py makes it):
the notes above its table, the table, and the tally of many comparisons
(lab/calibrate_regress.sh). Nothing here judges; it says what was judged."""
import json
import statistics
import warnings
from pathlib import Path

import stats
import verdicts


def family_size(rows):
    """How many rows a comparison judged (Holm's family)."""
    return sum(r["judged"] for r in rows)


def unjudged_note(rows, alpha):
    """Why rows with a p are outside the family, and how many paired boots
    would bring them all in; None when every such row was judged."""
    unjudged = [r for r in rows if r["p_value"] is not None and not r["judged"]]
    if not unjudged:
        return None
    metrics = ", ".join(sorted({r["metric"] for r in unjudged}))
    note = (f"{len(unjudged)} row(s) not judged ({metrics}): their exact test "
            f"cannot reach alpha/{max(family_size(rows), 1)} with these boots")
    # Their floor must reach alpha over the family with them all in it.
    pairs = stats.pairs_for_exact(alpha / (family_size(rows) + len(unjudged)))
    if unjudged[0]["paired"] and pairs:
        note += f"; they can from {pairs} pairs"
    return note


def warnings_for(rows, base_settings, new_settings, threshold, alpha, comparable, metrics):
    """The notes above a comparison's table: settings that differ among
    COMPARABLE, nothing judged, rows outside the family, rows that could
    not have seen the threshold and the boots that would."""
    out = []
    differ = [k for k in comparable if base_settings[k] != new_settings[k]]
    if differ:
        out.append("settings differ (" + ", ".join(
            f"{k}: {base_settings[k]} vs {new_settings[k]}" for k in differ)
            + "): the comparison may not mean what it seems")
    if not family_size(rows):
        out.append(f"WARNING: nothing judged: a t test needs {stats.MIN_T_BOOTS} "
                   "boots a side (with fewer the boot-to-boot noise is unknown "
                   "or has one degree of freedom); give each side "
                   f"{stats.MIN_T_BOOTS} or more sets (VARIANT:N, or --rounds "
                   "with lab/interleave.sh's rounds)")
    unjudged = unjudged_note(rows, alpha)
    if unjudged:
        out.append(unjudged)
    blind = [r for r in rows if r["mde"] is not None and r["mde"] > threshold]
    if blind:
        out.append(f"{len(blind)} of {len(rows)} rows could not have detected "
                   f"a {100 * threshold:.0f}% change (MDE above the threshold: "
                   "they read 'cannot tell' unless slower): more boots narrow it; "
                   + boots_needed(blind, threshold, alpha, family_size(rows), metrics))
    return out


def boots_needed(blind, threshold, alpha, family, metrics):
    """What it would take, at the spread these boots showed and the same
    family: per metric, the boots a side (pairs) of the median and of the
    worst blind row."""
    def count(n):
        return "more than 1000" if n > 1000 else f"about {n}"

    unit = "pairs" if blind[0]["paired"] else "boots a side"
    parts = []
    for metric in metrics:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # SciPy at few df
            needed = sorted(stats.boots_for(r, threshold, alpha / family,
                                            higher_is_better=r["higher_is_better"])
                            for r in blind if r["metric"] == metric)
        if needed:
            parts.append(f"{metric} {count(needed[len(needed) // 2])} "
                         f"(median row), {count(needed[-1])} (worst)")
    return f"at this spread, {unit} for it: " + "; ".join(parts)


def fmt_pct(x):
    if x is None or x != x:
        return "   n/a"
    return f"{100 * x:+6.1f}%" if abs(x) < 10 else ("  >+999%" if x > 0 else "  <-999%")


def fmt_signed_mde(row):
    """The MDE as the change it detects: a drop of throughput (-81.4%,
    never +438%), a rise of latency."""
    if row["mde"] is None:
        return "-"
    sign = "-" if row["higher_is_better"] else "+"
    return sign + verdicts.fmt_mde(row["mde"])


def fmt_p(x):
    return "     -" if x is None else f"{x:6.4f}"


def format_text(report):
    lines = [f"base: {report['base']}", f"new:  {report['new']}",
             f"{report['design']}; threshold {100 * report['threshold']:.1f}%, "
             f"alpha {report['alpha']} family-wise (Holm over {report['tested']} "
             f"rows); MDE: the change for the worse caught with 80% power at "
             f"alpha/{max(report['tested'], 1)}",
             verdicts.counts_line(report["rows"], report["threshold"])]
    lines += report["warnings"]
    lines.append(f"{'series':<34}{'thr':>4} {'metric':<12}{'boots':>6}{'base':>11}"
                 f"{'new':>11}{'change':>9} {'95% CI':>17}{'p':>8}{'exact p':>8}"
                 f"{'Holm p':>8}{'MDE':>8}  verdict")
    for r in report["rows"]:
        ci = (f"[{fmt_pct(r['ci95'][0])},{fmt_pct(r['ci95'][1])}]"
              if r["ci95"] else "-")
        boots = "x".join(map(str, r["boots"]))
        p_t = r["p_value"] if r["t_test"] else None
        lines.append(f"{r['series']:<34}{r['threads']:>4} {r['metric']:<12}"
                     f"{boots:>6}{r['base']:>11.4g}{r['new']:>11.4g}"
                     f"{fmt_pct(r['change']):>9} {ci:>17}{fmt_p(p_t):>8}"
                     f"{fmt_p(r['p_exact']):>8}{fmt_p(r['p_holm']):>8}"
                     f"{fmt_signed_mde(r):>8}  {r['verdict']}: {r['why']}")
    lines.append(f"{report['regressions']} regression(s) in {len(report['rows'])} rows")
    return "\n".join(lines)


def median_mde(rows):
    """The median detectable effect of rows, formatted; None when no row
    had one (too few boots)."""
    mdes = [r["mde"] for r in rows if r.get("mde") is not None]
    return verdicts.fmt_mde(statistics.median(mdes)) if mdes else None


def tally(report_dir, metrics):
    """Flags over the JSON reports in a folder: how many comparisons
    flagged anything (the family-wise rate, the figure an A/A run is
    judged by), then rows per metric, and the median detectable effect;
    then each row: in how many comparisons it was flagged (a slowdown's
    power there), its median change and median detectable effect."""
    reports = [json.loads(f.read_text()) for f in sorted(Path(report_dir).glob("*.json"))]
    rows = [r for report in reports for r in report["rows"]]
    flagged = sum(report["regressions"] > 0 for report in reports)
    lines = [f"{flagged} of {len(reports)} comparisons flagged a regression",
             f"{sum(r['regression'] for r in rows)} of {len(rows)} rows flagged"]
    for metric in metrics:
        sub = [r for r in rows if r["metric"] == metric]
        if sub:
            mde = median_mde(sub)
            mde = f", median MDE {mde}" if mde else ""
            lines.append(f"  {metric}: {sum(r['regression'] for r in sub)} of "
                         f"{len(sub)}{mde}")
    by_row = {}
    for r in rows:
        by_row.setdefault((r["series"], r["threads"], r["metric"]), []).append(r)
    lines.append("rows: flagged in, median change, median MDE")
    for (series, threads, metric), same in by_row.items():
        change = fmt_pct(statistics.median(r["change"] for r in same)).strip()
        mde = median_mde(same) or "-"
        lines.append(f"  {series} {threads} {metric}: "
                     f"{sum(r['regression'] for r in same)} of {len(same)}, "
                     f"{change}, MDE {mde}")
    return "\n".join(lines)
