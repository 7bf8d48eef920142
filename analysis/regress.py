#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Is NEW slower than BASE? Per row (series, thread count, metric), boots
as the unit, with family-wise control, and one of three verdicts a row.

Usage: analysis/regress.py [--threshold PCT] [--alpha A] [--json FILE]
                           [--metrics throughput,latency_p99] [--strict] BASE NEW
       analysis/regress.py --rounds ROUNDS.txt [...] BASE_VARIANT NEW_VARIANT
       analysis/regress.py --tally DIR
BASE and NEW are result set folders separated by commas, or VARIANT or
VARIANT:N, the newest (N) complete sets of that variant under $RESULTS_DIR
(default results/). Each set is one boot. With --rounds, the sets of the
two variants come from lab/interleave.sh's rounds file and are paired by
round; otherwise the sides are paired in start order where their boots
ran interleaved (sets.interleaved()), and compared unpaired (Welch) where
they did not.

Every row takes one estimate per boot from its repetitions
(analysis/estimates.py: the fastest for throughput with one thread alone,
the mean with more; the pooled percentile for p99) and compares the boots (analysis/stats.py): the
change of the geometric mean, its 95% interval (from 3 boots a side), a t
test on the logs and an exact permutation test beside it. Throughput is
judged by the t test, p99 by the exact test (METRICS); Holm's adjustment
runs over the rows whose test can reach its level (Tarone's rule: p99
needs 8 to 12 pairs, by the rows), and each judged row gets its minimum
detectable effect (80% power at alpha / rows judged, Holm's strictest
level) and a verdict (analysis/verdicts.py): slower, not slower than the
threshold (default 5%), or cannot tell. Under ACCEL=icount (every set), a
throughput row whose boots agree exactly has no noise
(stats.boot_comparison). The last line printed is the comparison's
verdict; the exit status 1 slower, 2 bad input, 3 nothing judged (fewer
than 3 boots a side), 4 cannot tell with --strict, 5 an internal error,
0 otherwise.
--tally counts the flags in the JSON reports in DIR (lab/calibrate_regress.sh).
What a comparison says in words is analysis/regress_report.py's.
"""
import argparse
import collections
import json
import math
import os
import statistics
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lab"))
import settings as lab_settings  # noqa: E402
import stats  # noqa: E402
import verdicts  # noqa: E402
from estimates import boot_estimates, disturbed_positions  # noqa: E402
from sets import (BadSet, interleaved, load_bench_set, machine,  # noqa: E402
                  newest_sets, read_rounds, write_atomic)
import confirm  # noqa: E402
from regress_report import family_size, format_text, tally, warnings_for  # noqa: E402

LAB_ROOT = Path(__file__).resolve().parent.parent
EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_NOT_JUDGED = (
    verdicts.EXIT_SLOWER, verdicts.EXIT_BAD_INPUT, verdicts.EXIT_NOT_JUDGED)
# test: which p judges a row, the t test's or the exact permutation test's
# (a boot's p99 is heavy-tailed: the t test at 3 degrees of freedom puts
# an A/A p99 row far out in its tail, where the exact test of 4 pairs
# cannot go below 0.125; README, "Regressions").
Metric = collections.namedtuple("Metric", "higher_is_better test")
METRICS = {
    "throughput": Metric(True, "p_value"),
    "latency_p99": Metric(False, "p_exact"),
}
# Settings that must match for a comparison to mean anything: those
# lab/settings.toml marks comparable.
COMPARABLE = lab_settings.comparable()


class InputError(Exception):
    pass


def resolve(spec, results_dir):
    """Result set folders: a folder, or VARIANT[:N], the newest N (1)
    complete sets of a variant."""
    path = Path(spec)
    if any(os.path.lexists(path / name) for name in ("results.json", "manifest.json")):
        _, manifest = load(path)  # a set that cannot be read says why
        if manifest.get("outcome") != "ok":
            raise InputError(f"{spec}: not a complete result set (outcome "
                             f"{manifest.get('outcome')!r}: crashed or interrupted; "
                             "see its manifest)")
        return [path]
    variant, _, count = spec.partition(":")
    if count and not (count.isdigit() and int(count) > 0):
        raise InputError(f"{spec}: VARIANT:N needs a positive count N")
    found = newest_sets(results_dir, "bench", variant, int(count or 1))
    if not found:
        raise InputError(f"{spec}: neither a result set nor a variant with "
                         f"complete result sets in {results_dir}")
    if count and len(found) < int(count):
        raise InputError(f"{spec}: only {len(found)} complete set(s) of "
                         f"{variant} in {results_dir}")
    return found


def load(path):
    try:
        results, manifest = load_bench_set(path)
    except BadSet as e:
        raise InputError(str(e)) from None
    return results["points"], manifest


def judge_sets(base_sets, new_sets, threshold, alpha):
    """Rows comparing two lists of one-boot sets, paired in order, on every
    metric (analysis/confirm.py's reruns)."""
    loaded = [[load(path) for path in paths] for paths in (base_sets, new_sets)]
    return compare([points for points, _ in loaded[0]],
                   [points for points, _ in loaded[1]], True, tuple(METRICS),
                   threshold, alpha,
                   counts_instructions([m for side in loaded for _, m in side]))


def counts_instructions(manifests):
    """Whether every set ran under ACCEL=icount, whose clock counts the
    guest's instructions: boots that agree exactly there have no noise to
    show (stats.boot_comparison)."""
    return bool(manifests) and all(m.get("accel") == "icount" for m in manifests)


def settings(manifest):
    params = {k.lower(): str(v) for k, v in manifest.get("parameters", {}).items()}
    for key in ("vcpus", "accel"):
        if key in manifest:
            params[key] = str(manifest[key])
    return {k: params.get(k) for k in COMPARABLE}


def compare(base_boots, new_boots, paired, metrics, threshold, alpha,
            instruction_clock=False, left_out=None):
    """One row per (series, threads, metric) that both sides measured,
    each with its verdict (verdicts.judge).

    base_boots and new_boots hold each boot's points (a set's results);
    paired: the i-th boots of the two sides belong together;
    instruction_clock: every boot ran under ACCEL=icount (throughput rows
    whose boots agree exactly are then noiseless; a p99 stays quantized).
    A repetition the host disturbed in any boot is left out of all
    (disturbed_positions), or those of left_out where the caller gives
    them (make compare: the same for every design)."""
    if left_out is None:
        left_out = disturbed_positions(base_boots + new_boots)
    base_boots = [boot_estimates(points, left_out) for points in base_boots]
    new_boots = [boot_estimates(points, left_out) for points in new_boots]
    order = list(METRICS)
    keys = set().union(*base_boots) & set().union(*new_boots)
    rows = []
    for key in sorted(keys, key=lambda k: (k[0], k[1], order.index(k[2]))):
        series, threads, metric = key
        if metric not in metrics:
            continue
        if paired:
            pairs = [(b[key], n[key]) for b, n in zip(base_boots, new_boots)
                     if key in b and key in n]
            b, n = [x for x, _ in pairs], [y for _, y in pairs]
        else:
            b = [boot[key] for boot in base_boots if key in boot]
            n = [boot[key] for boot in new_boots if key in boot]
        if not b or not n or min(b + n) <= 0:
            continue
        spec = METRICS[metric]
        noiseless_clock = instruction_clock and metric == "throughput"
        row = {"series": series, "threads": threads, "metric": metric,
               "base": math.exp(statistics.fmean(map(math.log, b))),
               "new": math.exp(statistics.fmean(map(math.log, n))),
               "higher_is_better": spec.higher_is_better}
        row.update(stats.boot_comparison(b, n, paired, noiseless_clock),
                   test=spec.test)
        exact = spec.test == "p_exact" or not (row["t_test"] or row.get("noiseless"))
        row["p_not_worse"] = stats.not_worse_p(
            b, n, paired, threshold, spec.higher_is_better, exact=exact,
            noiseless=bool(row.get("noiseless")))
        rows.append(row)
    verdicts.judge(rows, threshold, alpha)
    return rows


def check_alike(spec, manifests):
    kinds = {json.dumps(settings(m), sort_keys=True) for m in manifests}
    if len(kinds) > 1:
        raise InputError(f"the sets of '{spec}' were measured with different settings")


def load_boots(dirs, spec):
    """[each set's points], the first set's manifest."""
    boots, manifests = [], []
    for d in dirs:
        points, manifest = load(d)
        boots.append(points)
        manifests.append(manifest)
    check_alike(spec, manifests)
    return boots, manifests[0]


def sides(base_spec, new_spec, results_dir, rounds_file=None):
    """(base set folders, new set folders, paired): paired by round with a
    rounds file; else in start order where the two sides' boots ran
    interleaved (sets.interleaved), unpaired where they did not.

    Pairing is decided by how the boots ran, never by which way gives
    the smaller p (choosing after seeing both would raise the false
    alarms). Where they ran in rounds, the pairs are kept even if rounds
    correlate only weakly (where Welch would be a little stronger): pairing is what keeps a step in
    the host's speed, not only a linear drift, from landing on one side."""
    if rounds_file:
        try:
            rounds = read_rounds(rounds_file)
        except BadSet as e:
            raise InputError(str(e)) from None
        both = [r for r in rounds.values() if base_spec in r and new_spec in r]
        if not both:
            raise InputError(f"{rounds_file}: no round has both {base_spec} "
                             f"and {new_spec}")
        return [r[base_spec] for r in both], [r[new_spec] for r in both], True
    base = [d for s in base_spec.split(",") if s for d in resolve(s, results_dir)]
    new = [d for s in new_spec.split(",") if s for d in resolve(s, results_dir)]
    if not base or not new:
        raise InputError("each side needs a result set")
    # Folder names begin with the UTC start.
    by_start = lambda d: Path(d).name  # noqa: E731
    base, new = sorted(base, key=by_start), sorted(new, key=by_start)
    return base, new, interleaved([d.name for d in base], [d.name for d in new])


def machines_of(base_dirs, new_dirs, mix):
    """A warning when the sets ran on more than one machine (an imported
    run, say) and mix allows it; InputError when it does not."""
    seen = {side: sorted({machine(load(d)[1]) for d in dirs})
            for side, dirs in (("base", base_dirs), ("new", new_dirs))}
    if len(set(seen["base"]) | set(seen["new"])) == 1:
        return []
    where = f"base on {' + '.join(seen['base'])}, new on {' + '.join(seen['new'])}"
    if not mix:
        raise InputError(f"the sets ran on different machines ({where}): times from "
                         "two machines are two experiments; MIX_MACHINES=1 "
                         "compares them anyway, labelled")
    return [f"MIXED MACHINES ({where}): a change may be the machine's"]


def regress(base_spec, new_spec, results_dir, metrics=tuple(METRICS),
            threshold=0.05, alpha=0.05, rounds_file=None, mix_machines=False):
    base_dirs, new_dirs, paired = sides(base_spec, new_spec, results_dir,
                                        rounds_file)
    mixed = machines_of(base_dirs, new_dirs, mix_machines)
    base_boots, base_manifest = load_boots(base_dirs, base_spec)
    new_boots, new_manifest = load_boots(new_dirs, new_spec)
    left_out = disturbed_positions(base_boots + new_boots)
    rows = compare(base_boots, new_boots, paired, metrics, threshold, alpha,
                   counts_instructions([base_manifest, new_manifest]))
    if not rows and left_out:
        raise InputError(f"nothing left to compare: {len(left_out)} repetition(s) "
                         "were left out as disturbed (other processes kept the "
                         "host busy; see host-load.json in the sets): rerun on "
                         "a quiet host")
    if not rows:
        raise InputError("the two sides share no series and thread count")
    tested = family_size(rows)
    notes = mixed + warnings_for(rows, settings(base_manifest),
                                 settings(new_manifest), threshold, alpha,
                                 COMPARABLE, tuple(METRICS))
    with_p99 = {(r["series"], r["threads"]) for r in rows if r["metric"] == "latency_p99"}
    without = {(r["series"], r["threads"]) for r in rows} - with_p99
    if "latency_p99" in metrics and without:
        notes.append(f"{len(without)} row(s) have no p99: a boot timed fewer than "
                     "1000 acquisitions there in all its repetitions together (a "
                     "longer DURATION_MS or a smaller LATENCY_EVERY gives it samples)")
    if left_out:
        notes.append(f"{len(left_out)} repetition(s) left out of every boot of both "
                     "sides: other processes kept the host busy during one of them "
                     "(host-load.json of the sets)")
    return {
        "base": ",".join(map(str, base_dirs)), "new": ",".join(map(str, new_dirs)),
        "design": (f"{len(base_dirs)} paired boots per side" if paired else
                   f"{len(base_dirs)} vs {len(new_dirs)} boots, unpaired (Welch)"),
        "paired": paired, "threshold": threshold, "alpha": alpha,
        "metrics": list(metrics), "tested": tested, "rows": rows,
        "warnings": notes,
        "regressions": sum(r["regression"] for r in rows),
        "verdicts": verdicts.counts(rows),
        "verdict": verdicts.overall(rows),
        "left_out_reps": sorted(map(list, left_out)),
        # What a confirming rerun needs of each side (analysis/confirm.py).
        "sides": {side: {"variant": m.get("variant"),
                         "parameters": m.get("parameters", {})}
                  for side, m in (("base", base_manifest), ("new", new_manifest))},
    }


def plan(base_spec, new_spec, results_dir, rounds_file, metrics, threshold,
         alpha, confirm_rounds):
    """What make regress would compare, every set found and loaded."""
    base_dirs, new_dirs, paired = sides(base_spec, new_spec, results_dir, rounds_file)
    for spec, dirs in ((base_spec, base_dirs), (new_spec, new_dirs)):
        check_alike(spec, [load(d)[1] for d in dirs])
    lines = [f"plan: make regress, {len(base_dirs)} base and {len(new_dirs)} new "
             f"boot(s), {'paired' if paired else 'unpaired'} (dry run: nothing compared)",
             f"  metrics {', '.join(metrics)}; a row counts beyond {threshold:g}% "
             f"at family-wise alpha {alpha:g}"
             + (f"; flagged rows rerun {confirm_rounds} times a side" if confirm_rounds else "")]
    lines += [f"  base: {d}" for d in base_dirs] + [f"  new: {d}" for d in new_dirs]
    return "\n".join(lines)


def percent(text):
    """A threshold: a finite percentage >= 0 (nan would compare false with
    every change and hide every regression)."""
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage >= 0")
    return value


def probability(text):
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a probability in (0, 1)")
    return value


def apply_confirmation(report):
    """After confirm.confirm(): a flagged row its reruns did not flag again
    cannot tell; the report's counts and verdict follow."""
    for r in report["rows"]:
        if "confirmation" not in r:
            continue
        if r["regression"]:
            r["verdict"] = f"{verdicts.SLOWER} (confirmed)"
        else:
            r["verdict_kind"] = r["verdict"] = verdicts.CANNOT_TELL
            r["why"] = "flagged, not flagged again by its confirming boots"
    report["verdicts"] = verdicts.counts(report["rows"])
    report["verdict"] = verdicts.overall(report["rows"])


def judge_and_print(args, metrics, results_dir):
    """The comparison's exit status; its text on stdout, the verdict last."""
    try:
        if args.dry_run:
            print(plan(args.base, args.new, results_dir, args.rounds, metrics,
                       args.threshold, args.alpha, args.confirm))
            return verdicts.EXIT_OK
        report = regress(args.base, args.new, results_dir, metrics,
                         args.threshold / 100, args.alpha, args.rounds,
                         args.mix_machines)
        if args.confirm and report["regressions"]:
            print(format_text(report))
            print(f"regress: confirming {report['regressions']} flagged row(s) with "
                  f"{args.confirm} new boot(s) a side", flush=True)
            confirm.confirm(report, args.confirm,
                            Path(results_dir) / "confirm", judge_sets)
            apply_confirmation(report)
    except (InputError, confirm.ConfirmError) as e:
        print(f"regress: {e}", file=sys.stderr)
        print("bad input")
        return verdicts.EXIT_BAD_INPUT
    if args.json:
        try:
            write_atomic(args.json, json.dumps(report, indent=1) + "\n")
        except OSError as e:
            # Before the report: no "0 regression(s)" above an error.
            print(f"regress: cannot write {args.json}: {e.strerror or e} "
                  "(is the disk full?)", file=sys.stderr)
            print("bad input")
            return verdicts.EXIT_BAD_INPUT
    print(format_text(report))
    print(verdicts.word(report["verdict"], report["threshold"]))
    return verdicts.exit_status(report["verdict"], args.strict)


def main(argv):
    if len(argv) == 3 and argv[1] == "--tally":
        print(tally(argv[2], tuple(METRICS)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--threshold", type=percent, default=5.0,
                        help="percent change for the worse that counts (5)")
    parser.add_argument("--alpha", type=probability, default=0.05,
                        help="family-wise error rate over all rows (0.05)")
    parser.add_argument("--rounds", metavar="ROUNDS.txt",
                        help="pair BASE's and NEW's sets by round (variant names)")
    parser.add_argument("--metrics", default=",".join(METRICS))
    parser.add_argument("--json", help="also write the report here")
    parser.add_argument("--mix-machines", action="store_true",
                        help="compare sets that ran on different machines, labelled")
    parser.add_argument("--dry-run", action="store_true",
                        help="find and check both sides' sets, print them; compare nothing")
    parser.add_argument("--confirm", type=int, default=0, metavar="ROUNDS",
                        help="rerun each flagged row's point ROUNDS times a "
                        "side, interleaved; only a row flagged again counts")
    parser.add_argument("--strict", action="store_true",
                        help="exit 4 when a row cannot tell (and none is slower)")
    args = parser.parse_args(argv[1:])
    if args.confirm < 0 or args.confirm == 1:
        parser.error("--confirm takes 0 (no rerun) or 2 or more rounds")
    metrics = tuple(args.metrics.split(","))
    unknown = set(metrics) - set(METRICS)
    if unknown:
        parser.error(f"unknown metric(s) {', '.join(sorted(unknown))}; "
                     f"known: {', '.join(METRICS)}")
    results_dir = os.environ.get("RESULTS_DIR") or lab_settings.default("RESULTS_DIR", "regress")
    try:
        return judge_and_print(args, metrics, results_dir)
    except Exception:  # noqa: BLE001 - a bug must not read as "slower" (1)
        traceback.print_exc()
        print("regress: internal error (the traceback above is the lab's bug)",
              file=sys.stderr)
        print("internal error")
        return verdicts.EXIT_INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main(sys.argv))
