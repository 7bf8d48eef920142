#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Compare mutex designs: plots and a report to choose one.

Usage: analysis/compare.py OUT_DIR RESULT_SET... [--baseline VARIANT]
                           [--checks-dir RESULTS_DIR] [--baseline-from RESULTS_DIR]
Pools the repetitions of every result set of a variant (the rounds of an
interleaved run), then writes OUT_DIR/report.md and its plots (PNG and SVG):
throughput, latency percentiles, fairness and how locks were acquired against
threads, one panel per series (workload and settings: critical section C and
think time W in loops, pinned or not), each variant against the baseline
(default owner-field). Correctness
verdicts come from the newest `make check` set of each variant under
--checks-dir, when there is one.
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

from plots import median_ci, plot_fairness, plot_latency, plot_throughput, plot_ways
from regress import COMPARABLE, boot_estimates, settings
import regress
from results import fmt, is_disturbed
from sets import BadSet, is_complete, load_bench_set, machine, newest_sets, read_json


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
    """{variant: {"points": [...], "manifests": [...]}} pooled over sets;
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
        entry["boots"].append((path.name, boot_estimates(results["points"])))
        entry["disturbed"] = (entry.get("disturbed", 0)
                              + sum(is_disturbed(p) for p in results["points"]))
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


def design_figures(variants):
    """{variant: {uncontended (median, low, high) ns, the same boots' floor
    (two fast-path atomics, ns) and the pair's ratio to it, sizeof, text
    bytes}}."""
    out = {}
    for variant, data in variants.items():
        m = data["manifests"][0]
        unc = [p["per_sec"] for p in data["points"] if p["workload"] == "uncontended"]
        ns = None
        if unc:
            med, low, high = median_ci(unc)
            ns = (1e9 / med, 1e9 / high, 1e9 / low)
        floors = [ps / 1000 for ps in data["atomic_pair_ps"] if ps]
        floor = statistics.median(floors) if floors else None
        out[variant] = {"uncontended_ns": ns, "atomic_floor_ns": floor,
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


def contended_against(bands, variant, baseline):
    """Median throughput ratios to the baseline at every contended series
    and thread count, and at how many of them the two 95% bands overlap."""
    ratios, overlap = [], 0
    for (series, v), mine in bands.items():
        base = bands.get((series, baseline), {})
        if v != variant or not series.startswith("contended/"):
            continue
        for t in sorted(mine.keys() & base.keys()):
            ratios.append(mine[t][0] / base[t][0])
            overlap += mine[t][1] <= base[t][2] and base[t][1] <= mine[t][2]
    return ratios, overlap, len(ratios)


def recommend(variants, baseline, bands, figures, verdicts, models=None):
    """Rows of the recommendation table, correctness first."""
    rows = []
    for variant in variants:
        v = verdicts.get(variant) or {}
        ratios, overlap, points = contended_against(bands, variant, baseline)
        rows.append({
            "variant": variant,
            "mutual_exclusion": v.get("mutual_exclusion", "not checked"),
            "free_safe": v.get("free_safe", "not checked"),
            "detection_methods": v.get("detection_methods") or {},
            "model": model_summary((models or {}).get(variant)),
            "gates": v.get("mutual_exclusion") == "ok" and v.get("free_safe") == "yes",
            "worst_contended_ratio": min(ratios) if ratios else None,
            "bands_overlapping": f"{overlap}/{points}",
            "within_noise": points > 0 and overlap == points,
            **figures[variant]})
    passing = [r for r in rows if r["gates"] and r["worst_contended_ratio"] is not None]
    best = max(passing, key=lambda r: (r["worst_contended_ratio"],
                                       -(r["sizeof_mutex"] or 0)), default=None)
    return rows, best


def against_baseline(variants, baseline, threshold=0.05, alpha=0.05):
    """{variant: make regress's rows against the baseline}, boots as the
    unit, paired in start order when the counts match (interleaved rounds)."""
    def in_order(v):
        return [est for _, est in sorted(variants[v]["boots"], key=lambda b: b[0])]

    out = {}
    for variant in variants:
        if variant == baseline:
            continue
        base, new = in_order(baseline), in_order(variant)
        out[variant] = regress.compare(
            base, new, len(base) == len(new), tuple(regress.METRICS), threshold,
            alpha, regress.counts_instructions(variants[baseline]["manifests"]
                                               + variants[variant]["manifests"]))
    return out


def boot_table(variant, baseline, rows, disturbed):
    tested = regress.family_size(rows)
    lines = [f"### {variant} against {baseline}", "",
             f"{rows[0]['boots'][0]} against {rows[0]['boots'][1]} boots"
             f"{', paired by round' if rows[0]['paired'] else ', unpaired'}; "
             f"Holm over {tested} rows at 0.05; MDE: the change this run "
             f"would have caught with 80% power (at 0.05/{max(tested, 1)}). "
             f"Repetitions left out as disturbed (another process kept the "
             f"host busy): {disturbed[0]} of {baseline}, {disturbed[1]} of "
             f"{variant}.", "",
             "| series | threads | metric | change | 95% CI | Holm p | MDE | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ci = (f"{100 * r['ci95'][0]:+.1f}% to {100 * r['ci95'][1]:+.1f}%"
              if r["ci95"] else "-")
        holm = "-" if r["p_holm"] is None else f"{r['p_holm']:.3g}"
        mde = "-" if r["mde"] is None else regress.fmt_mde(r["mde"])
        lines.append(f"| {r['series']} | {r['threads']} | {r['metric']} | "
                     f"{100 * r['change']:+.1f}% | {ci} | {holm} | {mde} | "
                     f"{r['verdict'] or 'ok'} |")
    return lines + [""]


def write_report(out_dir, variants, baseline, plots, rows, best, note, boots=None):
    lines = ["# Mutex designs compared", "", f"Machine: {note}.", "",
             "Variants: " + ", ".join(
                 f"{v} ({len(d['manifests'])} result set(s), "
                 f"{len(d['points'])} points)" for v, d in variants.items()), ""]
    lines += ["## Recommendation", ""]
    if best:
        noise = (f" Its 95% bands overlap {baseline}'s at every contended "
                 "series and thread count: the speed differences are within this run's noise, and "
                 "the gates and the size decide." if best["within_noise"] else "")
        lines.append(f"**{best['variant']}**: passes both correctness gates "
                     f"(mutual exclusion, free-safety) and keeps at least "
                     f"{best['worst_contended_ratio']:.3f}x of {baseline}'s "
                     "median contended throughput at every contended series "
                     "and thread count; "
                     f"`sizeof(struct mutex)` {best['sizeof_mutex']}.{noise}")
    else:
        lines.append("No variant passes both correctness gates with benchmark "
                     "numbers here: run `make check VARIANT=x` for each.")
    lines += ["", "| variant | mutual exclusion | free-safe | SPIN model | "
              f"worst contended / {baseline} (median) | 95% bands overlapping "
              f"{baseline}'s | uncontended ns/pair (95% CI) | floor: 2 atomics, ns "
              "| pair / floor | sizeof | mutex.o text |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ns = r["uncontended_ns"]
        nstxt = f"{ns[0]:.1f} ({ns[1]:.1f}-{ns[2]:.1f})" if ns else "-"
        lines.append(f"| {r['variant']} | {r['mutual_exclusion']} | {r['free_safe']} | "
                     f"{r.get('model', 'not verified')} | "
                     f"{fmt(r['worst_contended_ratio'], '.3f')} | "
                     f"{r['bands_overlapping']} | {nstxt} | "
                     f"{fmt(r['atomic_floor_ns'], '.1f')} | {fmt(r['over_floor'], '.2f')} | "
                     f"{fmt(r['sizeof_mutex'], 'd')} | {fmt(r['mutex_text_bytes'], 'd')} |")
    lines += ["", "Correctness comes first: a design that fails a gate is not "
              "recommended whatever its speed. Mutual exclusion and free-safety "
              "are `make check`'s verdicts from booted kernels; the SPIN model "
              "column is `make verify`'s, every interleaving of the design's "
              "lock-word protocol for 2 and 3 tasks. The floor is one acquire "
              "and one release compare-and-exchange on a private word, timed in "
              "the same boots (the fast path's atomics without a mutex): "
              "pair / floor is what the design adds to them.", ""]
    lines += [f"- {r['variant']}: free-safety looked for by " + (", ".join(
        f"{m} (control {'seen' if ok else 'NOT seen'})"
        for m, ok in r["detection_methods"].items()) or "no named method "
        "(a set judged before methods were recorded)")
        for r in rows if r["free_safe"] != "not checked"]
    lines.append("")
    if boots:
        lines += ["## Against the baseline, boot by boot", "",
                  "Each boot (result set) gives one estimate per row from its "
                  "repetitions (`make regress`'s estimator: analysis/regress.py "
                  "estimator()); the boots are compared as `make regress` "
                  "does (analysis/stats.py): a change counts when it is beyond "
                  "5% and significant after Holm's adjustment. With fewer than "
                  "2 boots a side nothing can be judged (`-`).", ""]
        for variant, boot_rows in boots.items():
            if not boot_rows:
                lines += [f"### {variant} against {baseline}", "",
                          "No series and thread count in common.", ""]
                continue
            lines += boot_table(variant, baseline, boot_rows,
                                (variants[baseline].get("disturbed", 0),
                                 variants[variant].get("disturbed", 0)))
    for title, name in plots:
        lines += [f"## {title}", "", f"![{title}]({name})", ""]
    (out_dir / "report.md").write_text("\n".join(lines))


def compare(out_dir, paths, baseline="owner-field", checks_dir=None,
            mix_machines=False):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    variants = load_sets(paths, mix_machines)
    if baseline not in variants:
        baseline = next(iter(variants))
    note = machine_line(variants)
    throughput, bands = plot_throughput(variants, baseline, out_dir, note)
    plots = [("Throughput", throughput),
             ("Latency", plot_latency(variants, out_dir, note)),
             ("Fairness", plot_fairness(variants, out_dir, note)),
             ("How locks were acquired", plot_ways(variants, out_dir, note))]
    verdicts = {v: newest_verdict(checks_dir, v) for v in variants}
    model_set, models = newest_model_verdicts(checks_dir)
    rows, best = recommend(variants, baseline, bands, design_figures(variants),
                           verdicts, models)
    boots = against_baseline(variants, baseline)
    write_report(out_dir, variants, baseline, plots, rows, best, note, boots)
    (out_dir / "comparison.json").write_text(json.dumps(
        {"baseline": baseline, "sets": [str(p) for p in paths], "rows": rows,
         "recommended": best and best["variant"], "verdicts": verdicts,
         "against_baseline": boots,
         "model_verdicts": {"set": model_set, "designs": models}},
        indent=1) + "\n")
    return out_dir / "report.md"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--baseline", default="owner-field")
    parser.add_argument("--checks-dir")
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
        print(compare(args.out_dir, args.sets, args.baseline, args.checks_dir,
                      args.mix_machines))
    except MixedSettings as e:
        print(f"compare: {e}; compare them separately", file=sys.stderr)
        return 2
    except BadSet as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
