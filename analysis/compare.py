#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Compare mutex designs: plots and a report to choose one.

Usage: analysis/compare.py OUT_DIR RESULT_SET... [--baseline VARIANT]
                           [--checks-dir RESULTS_DIR] [--baseline-from RESULTS_DIR]
Each result set is one boot. Every figure, table and sentence of the
report comes from one estimate per boot and row (make regress's:
analysis/estimates.py), and its intervals from the boots: each design
against the baseline (default owner-field) as make regress judges it,
with the three verdicts (analysis/verdicts.py); the recommendation counts
those verdicts (analysis/recommend.py). Writes OUT_DIR/report.md and its
plots (PNG and SVG): throughput, latency percentiles, fairness and how
locks were acquired against threads, one panel per series (workload and
settings: critical section C and think time W in loops, pinned or not).
Correctness verdicts come from the newest `make check` set of each variant
under --checks-dir, when there is one.
"""
import argparse
import json
import statistics
import sys
import traceback
from pathlib import Path

from plots import plot_fairness, plot_latency, plot_throughput, plot_ways
from regress import COMPARABLE, settings
import recommend
import estimates
import regress
import regress_report
import stats
import verdicts
from results import fmt
from verdicts import EXIT_INTERNAL_ERROR
from sets import (BadSet, interleaved, is_complete, load_bench_set, machine,
                  newest_sets, read_json)


class MixedSettings(Exception):
    pass


def settings_of(path):
    """What must match for repetitions of two sets to be pooled."""
    return settings(read_json(Path(path) / "manifest.json"))


def newest_alike(results_dir, variant, like):
    """The newest complete bench set of variant measured like the set
    `like`, on the same machine."""
    want = settings_of(like)
    where = machine(read_json(Path(like) / "manifest.json"))
    found = newest_sets(results_dir, "bench", variant, accept=lambda path: (
        is_complete(path) and settings_of(path) == want
        and machine(read_json(path / "manifest.json")) == where
        and path.resolve() != Path(like).resolve()))
    return found[-1] if found else None


def load_sets(paths, mix_machines=False):
    """{variant: {"points": [...], "boots": [(set name, points)],
    "manifests": [...]}}, the boots in start order once estimates() sorts
    them;
    MixedSettings when they were measured differently, or on different
    machines unless mix_machines."""
    variants = {}
    seen = {}
    machines = {}
    for path in map(Path, paths):
        results, manifest = load_bench_set(path)
        machines.setdefault(machine(manifest), []).append(str(path))
        if len(machines) > 1 and not mix_machines:
            raise MixedSettings("sets that ran on different machines ("
                                + "; ".join(f"{k}: {' '.join(v)}" for k, v in machines.items())
                                + "); MIX_MACHINES=1 compares them anyway, labelled")
        measured = settings(manifest)
        seen.setdefault(json.dumps(measured, sort_keys=True), []).append(str(path))
        if len(seen) > 1:
            raise MixedSettings("sets measured with different settings ("
                                + ", ".join(COMPARABLE) + "): "
                                + "; ".join(f"{k}: {' '.join(v)}"
                                            for k, v in seen.items()))
        entry = variants.setdefault(manifest["variant"],
                                    {"points": [], "manifests": [], "loop_ps": [],
                                     "atomic_pair_ps": [], "boots": []})
        entry["points"] += results["points"]
        entry["boots"].append((path.name, results["points"]))
        entry["manifests"].append(manifest)
        entry["loop_ps"].append((results.get("meta") or {}).get("loop_ps"))
        entry["atomic_pair_ps"].append((results.get("meta") or {}).get("atomic_pair_ps"))
    return variants


def machine_line(variants):
    ran_on = {v: sorted({machine(m) for m in d["manifests"]}) for v, d in variants.items()}
    if len({m for ms in ran_on.values() for m in ms}) > 1:
        return "MIXED MACHINES: " + "; ".join(f"{v} on {' + '.join(ms)}"
                                              for v, ms in ran_on.items())
    m = next(iter(variants.values()))["manifests"][0]
    host = m.get("host", {})
    accel = m.get("accel", "?")
    line = (f"{accel.upper()}, {m.get('vcpus')} vCPUs, host {host.get('cpu_model', '?')}"
            f" x{host.get('cpus', '?')}")
    if accel == "tcg":
        line += ": emulated CPUs, compare designs relative to each other only"
    return line


def per_boot_estimates(variants, left_out):
    """{variant: [(set name, estimates.boot_estimates)] in start order}:
    the one estimate per boot and row that every figure uses."""
    return {v: [(name, estimates.boot_estimates(points, left_out))
                for name, points in sorted(d["boots"], key=lambda b: b[0])]
            for v, d in variants.items()}


def design_figures(variants, boot_estimates):
    """{variant: {uncontended ns per pair (mean over boots, 95% interval
    over boots), the same boots' floor (two fast-path atomics, ns) and
    the pair's ratio to it, sizeof, text bytes}}."""
    out = {}
    for variant, data in variants.items():
        m = data["manifests"][0]
        unc = [est[("uncontended", 1, "throughput")] for _, est in boot_estimates[variant]
               if ("uncontended", 1, "throughput") in est]
        ns = None
        if unc:
            centre, low, high = stats.boot_mean_ci(unc)
            ns = (1e9 / centre, high and 1e9 / high, low and 1e9 / low)
        floors = [ps / 1000 for ps in data["atomic_pair_ps"] if ps]
        floor = statistics.median(floors) if floors else None
        out[variant] = {"uncontended_ns": ns, "uncontended_boots": len(unc),
                        "atomic_floor_ns": floor,
                        "over_floor": ns[0] / floor if ns and floor else None,
                        "sizeof_mutex": m.get("sizeof_mutex"),
                        "mutex_text_bytes": m.get("mutex_text_bytes")}
    return out


def newest_verdict(checks_dir, variant):
    if checks_dir is None:
        return None
    found = newest_sets(checks_dir, "check", variant)
    if not found:
        return None
    newest = found[-1]
    verdict = json.loads((newest / "verdict.json").read_text())
    # Sets judged before the methods were named have none.
    methods = {m: v.get("control_ok") for m, v in
               (verdict.get("methods") or {}).items()}
    return {"set": str(newest), **verdict["verdict"],
            "detection_methods": methods}


def newest_model_verdicts(results_dir):
    """(set, {design: {property: verdict}}) of the newest `make verify` set
    under results_dir; (None, {}) when there is none."""
    if results_dir is None:
        return None, {}
    found = newest_sets(results_dir, "verify")
    if not found:
        return None, {}
    designs = json.loads((found[-1] / "verdict.json").read_text())["designs"]
    return str(found[-1]), {
        d: {p: v["verdict"] for p, v in dv["properties"].items()}
        for d, dv in designs.items()}


def model_summary(properties):
    """One cell: "all hold", or the properties that fail."""
    if not properties:
        return "not verified"
    failing = [p.replace("_", " ") for p, v in properties.items() if v != "holds"]
    return "all hold" if not failing else "fails: " + ", ".join(failing)


def design_rows(variants, baseline, boots, figures, checks, models, threshold,
                alpha):
    """Rows of the design table, correctness first, then each design's
    throughput verdicts against the baseline by thread group."""
    rows = []
    for variant in variants:
        v = checks.get(variant) or {}
        rows.append({
            "variant": variant,
            "mutual_exclusion": v.get("mutual_exclusion", "not checked"),
            "free_safe": v.get("free_safe", "not checked"),
            "detection_methods": v.get("detection_methods") or {},
            "model": model_summary((models or {}).get(variant)),
            "gates": v.get("mutual_exclusion") == "ok" and v.get("free_safe") == "yes",
            "speed": recommend.speed_by_group(boots.get(variant) or [], threshold, alpha),
            **figures[variant]})
    return rows


def against_baseline(variants, baseline, threshold=0.05, alpha=0.05):
    """{variant: make regress's rows against the baseline}, exactly as
    make regress gives them for the same sets: paired where the two
    designs' boots ran interleaved (sets.interleaved), unpaired otherwise,
    the repetitions either side's host disturbed left out of both."""
    def in_order(v):
        return sorted(variants[v]["boots"], key=lambda b: b[0])

    out = {}
    for variant in variants:
        if variant == baseline:
            continue
        base, new = in_order(baseline), in_order(variant)
        paired = interleaved([str(n) for n, _ in base], [str(n) for n, _ in new])
        out[variant] = regress.compare(
            [p for _, p in base], [p for _, p in new], paired,
            tuple(regress.METRICS), threshold, alpha,
            regress.counts_instructions(variants[baseline]["manifests"]
                                        + variants[variant]["manifests"]))
    return out


def boot_table(variant, baseline, rows, threshold):
    tested = regress_report.family_size(rows)
    lines = [f"### {variant} against {baseline}", "",
             f"{rows[0]['boots'][0]} against {rows[0]['boots'][1]} boots"
             f"{', paired by round' if rows[0]['paired'] else ', unpaired (Welch)'}; "
             f"Holm over {tested} rows at 0.05; MDE: the change for the worse "
             f"this run would have caught with 80% power (at 0.05/{max(tested, 1)}): "
             "a drop of throughput, a rise of latency.", "",
             verdicts.counts_line(rows, threshold) + ".", "",
             "| series | threads | metric | change | 95% CI | Holm p | MDE | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ci = (f"{100 * r['ci95'][0]:+.1f}% to {100 * r['ci95'][1]:+.1f}%"
              if r["ci95"] else "-")
        holm = "-" if r["p_holm"] is None else f"{r['p_holm']:.3g}"
        lines.append(f"| {r['series']} | {r['threads']} | {r['metric']} | "
                     f"{100 * r['change']:+.1f}% | {ci} | {holm} | "
                     f"{regress_report.fmt_signed_mde(r)} | **{r['verdict']}**: {r['why']} |")
    return lines + [""]


def speed_cell(row, group, threshold):
    g = row["speed"].get(group)
    if not g:
        return "-"
    return (f"{g[verdicts.SLOWER]} / {g[verdicts.NOT_SLOWER]} / {g[verdicts.CANNOT_TELL]}"
            + (f" (MDE {verdicts.fmt_mde(g['median_mde'])})"
               if g["median_mde"] is not None else ""))


def design_table(rows, baseline, threshold):
    groups = sorted({g for r in rows for g in r["speed"]}, key=recommend.group_order)
    lines = ["| variant | mutual exclusion | free-safe | SPIN model | "
             + "".join(f"{g}: slower / not slower / cannot tell | " for g in groups)
             + "uncontended ns/pair (95% CI over boots) | floor: 2 atomics, ns "
             "| pair / floor | sizeof | mutex.o text |",
             "|---|---|---|---|" + "---|" * len(groups) + "---|---|---|---|---|"]
    for r in rows:
        ns = r["uncontended_ns"]
        if ns and ns[1] is not None:
            nstxt = f"{ns[0]:.1f} ({ns[1]:.1f}-{ns[2]:.1f})"
        elif ns:
            nstxt = f"{ns[0]:.1f} (no interval: {r['uncontended_boots']} boot(s))"
        else:
            nstxt = "-"
        cells = "".join(f"{speed_cell(r, g, threshold) if r['variant'] != baseline else 'baseline'} | "
                        for g in groups)
        lines.append(f"| {r['variant']} | {r['mutual_exclusion']} | {r['free_safe']} | "
                     f"{r.get('model', 'not verified')} | {cells}{nstxt} | "
                     f"{fmt(r['atomic_floor_ns'], '.1f')} | {fmt(r['over_floor'], '.2f')} | "
                     f"{fmt(r['sizeof_mutex'], 'd')} | {fmt(r['mutex_text_bytes'], 'd')} |")
    return lines


def verdict_summary(boots, threshold):
    """The report's first lines: every design's verdict counts."""
    if not boots:
        return ["Only one design: no comparison, no verdicts."]
    return [f"- {variant} against the baseline: "
            f"{verdicts.counts_line(rows, threshold)}" for variant, rows in boots.items()]


def write_report(out_dir, variants, baseline, plots, rows, note, boots, drift,
                 threshold=0.05):
    lines = ["# Mutex designs compared", "", f"Machine: {note}.", "",
             "Variants: " + ", ".join(
                 f"{v} ({len(d['manifests'])} boot(s), "
                 f"{len(d['points'])} points)" for v, d in variants.items()), ""]
    lines += verdict_summary(boots, threshold) + [""]
    lines += ["## Recommendation", ""]
    lines += recommend.recommendation(rows, baseline, threshold) + [""]
    lines += design_table(rows, baseline, threshold)
    lines += ["", "Correctness comes first: a design that fails a gate is not "
              "recommended whatever its speed. Mutual exclusion and free-safety "
              "are `make check`'s verdicts from booted kernels; the SPIN model "
              "column is `make verify`'s, every interleaving of the design's "
              "lock-word protocol for 2 and 3 tasks. Speed is each group's "
              f"throughput rows against {baseline}, counted by verdict (the boot "
              "tables below; the MDE is the group's median). The floor is one "
              "acquire and one release compare-and-exchange on a private word, "
              "timed in the same boots (the fast path's atomics without a "
              "mutex): pair / floor is what the design adds to them.", ""]
    lines += [f"- {r['variant']}: free-safety looked for by " + (", ".join(
        f"{m} (control {'seen' if ok else 'NOT seen'})"
        for m, ok in r["detection_methods"].items()) or "no named method "
        "(a set judged before methods were recorded)")
        for r in rows if r["free_safe"] != "not checked"]
    lines += [""] + recommend.drift_lines(drift, drift and drift.get("order")) + [""]
    if boots:
        lines += ["## Against the baseline, boot by boot", "",
                  "Each boot (result set) gives one estimate per row from its "
                  "repetitions (the lab's one estimator, analysis/estimates.py, "
                  "which `make regress` uses); the boots are compared as `make regress` "
                  "does (analysis/stats.py), and each row reads one of three "
                  "verdicts (analysis/verdicts.py): **slower** (beyond "
                  f"{100 * threshold:g}% and significant after Holm's adjustment), "
                  f"**not slower than {100 * threshold:g}%** (its non-inferiority "
                  "test passes after Holm's adjustment, with an MDE within the "
                  "threshold), or **cannot tell** (neither; the reason follows). "
                  "A t interval needs 3 boots a side.", ""]
        for variant, boot_rows in boots.items():
            if not boot_rows:
                lines += [f"### {variant} against {baseline}", "",
                          "No series and thread count in common.", ""]
                continue
            lines += boot_table(variant, baseline, boot_rows, threshold)
    for title, name in plots:
        lines += [f"## {title}", "", f"![{title}]({name})", ""]
    (out_dir / "report.md").write_text("\n".join(lines))


def compare(out_dir, paths, baseline="owner-field", checks_dir=None,
            mix_machines=False, threshold=0.05, alpha=0.05, recorded=None):
    """The report; recorded: an earlier comparison.json whose correctness
    and model verdicts stand in for checks_dir's (a committed reference
    keeps its verdicts, not its check sets)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    variants = load_sets(paths, mix_machines)
    if baseline not in variants:
        baseline = next(iter(variants))
    note = machine_line(variants)
    # The figures of single designs leave out the repetitions disturbed in
    # any design's boots; each comparison, those of its own two (regress).
    left_out = estimates.disturbed_positions(
        [points for d in variants.values() for _, points in d["boots"]])
    per_boot = per_boot_estimates(variants, left_out)
    boots = against_baseline(variants, baseline, threshold, alpha)
    plots = [("Throughput", plot_throughput(variants, per_boot, boots, baseline,
                                            out_dir, note)),
             ("Latency", plot_latency(variants, left_out, out_dir, note)),
             ("Fairness", plot_fairness(variants, out_dir, note)),
             ("How locks were acquired", plot_ways(variants, out_dir, note))]
    if recorded:
        checks = {v: recorded["verdicts"].get(v) for v in variants}
        model_set = recorded["model_verdicts"]["set"]
        models = recorded["model_verdicts"]["designs"]
    else:
        checks = {v: newest_verdict(checks_dir, v) for v in variants}
        model_set, models = newest_model_verdicts(checks_dir)
    rows = design_rows(variants, baseline, boots,
                       design_figures(variants, per_boot), checks, models,
                       threshold, alpha)
    drift = recommend.drift(per_boot)
    if drift:
        drift["order"] = recommend.round_order(per_boot)
    write_report(out_dir, variants, baseline, plots, rows, note, boots, drift,
                 threshold)
    passing = [r for r in rows if r["gates"]]
    (out_dir / "comparison.json").write_text(json.dumps(
        {"baseline": baseline, "sets": [str(p) for p in paths], "rows": rows,
         "recommended": max(passing, key=recommend.rank)["variant"] if passing else None,
         "verdicts": checks,
         "against_baseline": boots,
         "verdict_counts": {v: verdicts.counts(r) for v, r in boots.items()},
         "left_out_reps": sorted(map(list, left_out)),
         "drift": drift,
         "model_verdicts": {"set": model_set, "designs": models}},
        indent=1) + "\n")
    return out_dir / "report.md"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--baseline", default="owner-field")
    parser.add_argument("--checks-dir")
    parser.add_argument("--verdicts-from", metavar="COMPARISON_JSON",
                        help="the correctness and model verdicts of an earlier "
                        "report (a committed reference's) instead of --checks-dir's")
    parser.add_argument("--mix-machines", action="store_true",
                        help="compare sets that ran on different machines, labelled")
    parser.add_argument("--baseline-from", metavar="RESULTS_DIR",
                        help="add the newest baseline set measured like the "
                        "first set, if RESULTS_DIR has one")
    args = parser.parse_args(argv[1:])
    missing = [s for s in args.sets if not (Path(s) / "results.json").is_file()]
    if missing:
        print(f"compare: not result sets: {' '.join(missing)}", file=sys.stderr)
        return 2
    if args.baseline_from:
        extra = newest_alike(args.baseline_from, args.baseline, args.sets[0])
        if extra:
            args.sets.append(str(extra))
    try:
        recorded = read_json(args.verdicts_from) if args.verdicts_from else None
        print(compare(args.out_dir, args.sets, args.baseline, args.checks_dir,
                      args.mix_machines, recorded=recorded))
    except MixedSettings as e:
        print(f"compare: {e}; compare them separately", file=sys.stderr)
        return 2
    except BadSet as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        # A full disk: matplotlib and the report's writes. What was there
        # (the run's rounds, its sets) stays; the caller prints no folder.
        print(f"compare: cannot write {e.filename or args.out_dir}: "
              f"{e.strerror or e} (is the disk full?)", file=sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - a bug: its own status, not bad input
        traceback.print_exc()
        print("compare: internal error (the traceback above is the lab's bug)",
              file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
