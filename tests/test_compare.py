# SPDX-License-Identifier: GPL-2.0
"""The comparison report and its plots, on synthetic result sets."""
import json
import math
from pathlib import Path

import pytest

import compare
import regress
from conftest import LAB_ROOT
from results import series_of


def point(workload, threads, rep, per_sec):
    total = int(per_sec)
    return {"workload": workload, "threads": threads, "rep": rep,
            "cs_loops": 50, "think_loops": 0,
            "per_sec": per_sec, "total": total,
            "acquisitions": [total // threads] * threads,
            "latency_ns": {"p50": 1024, "p99": 4096, "p99_9": 8192},
            "lock_events": {"mutex_slowpath": total // 10,
                            "mutex_opt_lock": total // 20, "mutex_handoff": 1}}


def write_set(root, variant, stamp, scale, sizeof, cs_loops="50", meta=None):
    path = root / variant / stamp
    path.mkdir(parents=True)
    points = [point("uncontended", 1, r, 3e6 * scale) for r in range(5)]
    points += [point("contended", t, r, 1e6 * scale / t * (1 + 0.01 * r))
               for t in (1, 2, 4) for r in range(5)]
    (path / "results.json").write_text(json.dumps({"points": points, "meta": meta}))
    (path / "manifest.json").write_text(json.dumps(
        {"variant": variant, "outcome": "ok", "accel": "tcg", "vcpus": 2,
         "sizeof_mutex": sizeof,
         "parameters": {"cs_loops": cs_loops},
         "mutex_text_bytes": 5000, "host": {"cpu_model": "test", "cpus": 2}}))
    return path


def write_verdict(root, variant, free_safe, methods=None):
    path = root / variant / "check-20261203T000000Z-vm"
    path.mkdir(parents=True)
    (path / "verdict.json").write_text(json.dumps(
        {"verdict": {"mutual_exclusion": "ok", "free_safe": free_safe},
         **({"methods": methods} if methods else {})}))


def test_report_plots_and_recommendation(tmp_path):
    sets = [write_set(tmp_path, "owner-field", "1", 1.0, 32),
            write_set(tmp_path, "owner-field", "2", 1.0, 32),
            write_set(tmp_path, "tri-state", "1", 0.97, 24),
            write_set(tmp_path, "legacy", "1", 1.2, 40)]
    write_verdict(tmp_path, "owner-field", "no")
    write_verdict(tmp_path, "tri-state", "yes",
                  {"kasan_release_window": {"control_ok": True},
                   "hw_watchpoint": {"control_ok": False}})
    write_verdict(tmp_path, "legacy", "no")
    out = tmp_path / "out"
    report = compare.compare(out, sets, checks_dir=tmp_path)
    text = report.read_text()
    assert ("- tri-state: free-safety looked for by kasan_release_window "
            "(control seen), hw_watchpoint (control NOT seen)") in text
    assert "- legacy: free-safety looked for by no named method" in text
    for name in ("throughput", "latency", "fairness", "acquisition"):
        assert (out / f"{name}.png").stat().st_size > 0
        assert f"]({name}.png)" in text
    svg = (out / "throughput.svg").read_text()
    assert all(v in svg for v in ("owner-field", "tri-state", "legacy"))
    assert "TCG" in svg and "relative to each other only" in svg
    summary = json.loads((out / "comparison.json").read_text())
    # legacy is fastest but not free-safe: correctness gates come first.
    assert summary["recommended"] == "tri-state"
    rows = {r["variant"]: r for r in summary["rows"]}
    assert rows["owner-field"]["free_safe"] == "no"
    assert "**tri-state**" in text and "| legacy | ok | no |" in text
    # One tri-state boot against two: nothing told, and the report says
    # so rather than ranking a 3% difference (the pooled ratio said 0.97).
    assert "worst_contended_ratio" not in rows["tri-state"]
    assert rows["tri-state"]["speed"]["2 threads"] == {
        "slower": 0, "not slower": 0, "cannot tell": 1, "faster": 0, "rows": 1,
        "median_mde": None}
    assert "- 2 threads: cannot tell here (1 row, no MDE: too few boots)" in text
    assert " ok " not in text.replace("| ok |", "")
    # Every figure has a title.
    for name, title in (("throughput", "Throughput: one estimate per boot"),
                        ("latency", "Lock latency: each boot"),
                        ("fairness", "Fairness: Jain"),
                        ("acquisition", "How locks were acquired: shares")):
        assert title in (out / f"{name}.svg").read_text()


def test_no_verdicts_means_no_recommendation(tmp_path):
    sets = [write_set(tmp_path, "owner-field", "1", 1.0, 32),
            write_set(tmp_path, "count-only", "1", 1.0, 24)]
    report = compare.compare(tmp_path / "out", sets)
    assert "No variant passes both correctness gates" in report.read_text()
    assert "| count-only | not checked | not checked |" in report.read_text()


def test_sets_measured_differently_are_not_pooled(tmp_path, capsys):
    sets = [write_set(tmp_path, "owner-field", "1", 1.0, 32),
            write_set(tmp_path, "tri-state", "1", 1.0, 24, cs_loops="1200")]
    assert compare.main(["compare", str(tmp_path / "out"), *map(str, sets)]) == 2
    assert "cs_loops" in capsys.readouterr().err


def test_baseline_from_picks_the_newest_set_measured_alike(tmp_path):
    older = write_set(tmp_path, "owner-field", "20261201T000000Z-vm", 1.0, 32)
    write_set(tmp_path, "owner-field", "20261202T000000Z-vm", 1.0, 32,
              cs_loops="1200")
    new = write_set(tmp_path, "tri-state", "20261203T000000Z-vm", 1.0, 24)
    assert compare.newest_alike(tmp_path, "owner-field", new) == older
    assert compare.newest_alike(tmp_path, "count-only", new) is None
    assert compare.main(["compare", "--baseline-from", str(tmp_path),
                         str(tmp_path / "out"), str(new)]) == 0
    summary = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert summary["baseline"] == "owner-field" and len(summary["sets"]) == 2


def close_to(made, committed, rel=1e-9):
    """Equal, floats to rel. numpy picks its SIMD loops by what the CPU
    offers, so the same sums can differ in their last digits between machines:
    a CI machine without AVX-512 read changes 3e-15 away from the committed
    reference (2026-12-07), both hosts named "AMD EPYC"."""
    if isinstance(made, float) or isinstance(committed, float):
        return (isinstance(made, (int, float)) and isinstance(committed, (int, float))
                and math.isclose(made, committed, rel_tol=rel, abs_tol=1e-12))
    if isinstance(made, dict) and isinstance(committed, dict):
        return made.keys() == committed.keys() and all(
            close_to(made[k], committed[k], rel) for k in made)
    if isinstance(made, list) and isinstance(committed, list):
        return len(made) == len(committed) and all(
            close_to(a, b, rel) for a, b in zip(made, committed))
    return made == committed


def test_close_to_tells_rounding_from_a_change():
    assert close_to({"change": [-0.022672831640732007, "x", 5]},
                    {"change": [-0.022672831640735476, "x", 5]})
    assert not close_to({"change": -0.0226728}, {"change": -0.0226729})
    assert not close_to({"change": [1.0]}, {"change": [1.0, 2.0]})
    assert not close_to({"verdict": "ok"}, {"verdict": "regression"})
    assert not close_to({"p": None}, {"p": 0.5})


def test_reference_report_regenerates_from_its_runs(tmp_path):
    """The committed reference numbers come from its committed runs."""
    for ref in sorted((LAB_ROOT / "results" / "reference").glob("*/comparison.json")):
        committed = json.loads(ref.read_text())
        # The copies, in the order the report pooled the runs.
        runs = [ref.parent / "sets" / Path(s).parent.name / Path(s).name
                for s in committed["sets"]]
        assert all((r / "results.json").is_file() for r in runs)
        # Its correctness verdicts are those it recorded (its check sets
        # are not committed).
        compare.compare(tmp_path / ref.parent.name, runs, recorded=committed)
        again = json.loads((tmp_path / ref.parent.name / "comparison.json").read_text())
        keys = ("variant", "speed", "gates", "uncontended_ns", "sizeof_mutex",
                "mutex_text_bytes")
        assert close_to([{k: r[k] for k in keys} for r in again["rows"]],
                        [{k: r[k] for k in keys} for r in committed["rows"]])
        # The boot-by-boot rows follow make regress's estimator: a change of
        # it must remake them (as on 2026-12-07), not leave old verdicts.
        assert close_to(again["against_baseline"], committed["against_baseline"])
        assert again["recommended"] == committed["recommended"]
        assert again["verdict_counts"] == committed["verdict_counts"]


REFERENCES = sorted((LAB_ROOT / "results" / "reference").glob("*/rounds.txt"))
# What decides a default run's rows: the series, thread counts, repetitions
# and how long a point runs.
SWEEP = ("workloads", "threads", "cs_loops", "think_loops", "pin", "shards",
         "duration_ms", "reps")


def test_the_newest_reference_measured_the_default_sweep():
    """make regress against the reference must share a default run's rows;
    a change of these defaults needs a new reference (results/reference/)."""
    manifests = [json.loads(m.read_text()) for m in
                 sorted(REFERENCES[-1].parent.glob("sets/*/*/manifest.json"))]
    assert manifests
    for m in manifests:
        defaults = regress.lab_settings.resolve("bench", {"VCPUS": str(m["vcpus"])})
        measured = {k: m["parameters"][k] for k in SWEEP}
        assert measured == {k: defaults[k.upper()] for k in SWEEP}, m["variant"]


def test_the_reference_rounds_pair_its_committed_runs(tmp_path):
    """rounds.txt names the committed copies: make regress pairs them by
    round, every design against owner-field, on every row of the sweep."""
    rounds = REFERENCES[-1]
    designs = {line.split()[1] for line in rounds.read_text().splitlines()}
    assert {"owner-field", "tri-state", "count-only", "legacy"} <= designs
    first = next(rounds.parent.glob("sets/owner-field/*/results.json"))
    measured = {(series_of(p), p["threads"])
                for p in json.loads(first.read_text())["points"]}
    for design in sorted(designs - {"owner-field"}):
        report = regress.regress("owner-field", design, tmp_path / "none",
                                 rounds_file=rounds)
        assert report["paired"], design
        throughput = [r for r in report["rows"] if r["metric"] == "throughput"]
        assert {(r["series"], r["threads"]) for r in throughput} == measured, design
        assert all(r["boots"] == [5, 5] for r in throughput), design


def write_model_verdict(root, stamp, designs):
    path = root / "verify" / stamp
    path.mkdir(parents=True)
    (path / "verdict.json").write_text(json.dumps({"designs": {
        d: {"properties": {p: {"verdict": v} for p, v in props.items()}}
        for d, props in designs.items()}}))


def test_report_shows_the_newest_model_verdicts_beside_the_boot_verdicts(tmp_path):
    sets = [write_set(tmp_path, "owner-field", "1", 1.0, 32),
            write_set(tmp_path, "tri-state", "1", 0.97, 24)]
    write_verdict(tmp_path, "owner-field", "no")
    write_verdict(tmp_path, "tri-state", "yes")
    write_model_verdict(tmp_path, "20261201T000000Z-vm", {
        "owner-field": {"mutual_exclusion": "holds", "no_access_after_free": "holds"}})
    write_model_verdict(tmp_path, "20261204T000000Z-vm", {
        "owner-field": {"mutual_exclusion": "holds", "no_access_after_free": "fails"},
        "tri-state": {"mutual_exclusion": "holds", "no_access_after_free": "holds"}})
    report = compare.compare(tmp_path / "out", sets, checks_dir=tmp_path).read_text()
    rows = {line.split(" | ")[0].strip("| "): line for line in report.splitlines()
            if line.startswith("| ") and " | " in line}
    assert "| SPIN model |" in report
    assert "| no | fails: no access after free |" in rows["owner-field"]
    assert "| yes | all hold |" in rows["tri-state"]
    summary = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert summary["model_verdicts"]["set"].endswith("20261204T000000Z-vm")


def test_no_model_set_says_not_verified(tmp_path):
    sets = [write_set(tmp_path, "owner-field", "1", 1.0, 32)]
    report = compare.compare(tmp_path / "out", sets, checks_dir=tmp_path).read_text()
    assert "| not verified |" in report


def test_a_truncated_set_is_named_not_a_traceback(tmp_path, capsys):
    good = write_set(tmp_path, "owner-field", "1", 1.0, 32)
    bad = write_set(tmp_path, "tri-state", "1", 1.0, 24)
    (bad / "manifest.json").write_text('{"variant": "tri')
    assert compare.main(["compare", str(tmp_path / "out"), str(good), str(bad)]) == 2
    assert "manifest.json is unreadable or truncated" in capsys.readouterr().err


def test_report_sets_the_uncontended_pair_against_two_atomics(tmp_path):
    """The floor comes from the same boots; sets without it show '-'."""
    sets = [write_set(tmp_path, "owner-field", str(i), 1.0, 32,
                      meta={"atomic_pair_ps": ps}) for i, ps in ((1, 100000), (2, 120000))]
    sets += [write_set(tmp_path, "tri-state", "1", 1.0, 32)]
    report = compare.compare(tmp_path / "out", sets).read_text()
    figures = json.loads((tmp_path / "out" / "comparison.json").read_text())["rows"]
    owner = next(r for r in figures if r["variant"] == "owner-field")
    # 3e6 pairs/s: 333.3 ns a pair, against a 110 ns floor.
    assert owner["atomic_floor_ns"] == 110
    assert owner["over_floor"] == pytest.approx(1e9 / 3e6 / 110)
    # Two boots give no interval, and the report says so.
    assert "| 333.3 (no interval: 2 boot(s)) | 110.0 | 3.03 |" in report
    assert "| 333.3 (no interval: 1 boot(s)) | - | - |" in report
    # Boot by boot: 2 owner-field boots against 1 tri-state boot.
    assert "### tri-state against owner-field" in report
    assert "2 against 1 boots, unpaired (Welch)" in report


def test_the_report_is_make_regress_row_for_row(tmp_path):
    """One estimator: the report's boot table is what make regress says
    of the same sets, to the digit, and the recommendation counts it."""
    ref = REFERENCES[-1].parent
    runs = sorted(ref.glob("sets/*/*"))
    report = compare.compare(tmp_path / "out", runs).read_text()
    summary = json.loads((tmp_path / "out" / "comparison.json").read_text())
    for design in ("tri-state", "count-only"):
        rows = regress.regress("owner-field", design, tmp_path / "none",
                               rounds_file=REFERENCES[-1])["rows"]
        assert close_to(summary["against_baseline"][design], rows, rel=0)
        line = next(r for r in report.splitlines()
                    if r.startswith(f"- {design} against the baseline"))
        counts = summary["verdict_counts"][design]
        assert f"{counts['cannot tell']} cannot tell (of {len(rows)} rows)" in line
    assert "| ok |" not in report.replace("| ok | yes |", "").replace("| ok | no |", "")


def test_a_baseline_alone_draws_no_ratio_to_itself(tmp_path):
    sets = [write_set(tmp_path, "owner-field", f"2026120{i}T000000Z-vm", 1.0, 32)
            for i in (1, 2, 3)]
    compare.compare(tmp_path / "out", sets)
    svg = (tmp_path / "out" / "throughput.svg").read_text()
    assert "/ owner-field" not in svg and "Throughput: one estimate per boot" in svg
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Only one design: no comparison, no verdicts." in report


def test_a_latency_below_the_clock_resolution_is_drawn_as_such():
    from plots import boot_latency
    points = [{"workload": "contended", "threads": 2, "rep": r, "cs_loops": 50,
               "think_loops": 0, "per_sec": 1.0,
               "latency_ns": {"p50": 0, "p99": 900, "timer_uncertainty": 40}}
              for r in range(3)]
    got = boot_latency({"a": {"boots": [("1", points)]}}, set(),
                       "contended/C50/W0/unpinned", "p50")
    # 0 after the clock read is subtracted: at or below the resolution.
    assert got == {"a": {2: (0, 40)}}


@pytest.mark.parametrize("ticks, scale", [([1, 2, 4], "linear"),
                                          ([1, 2, 4, 8, 16, 32, 64, 128, 256], "log")])
def test_thread_axes_stay_readable_up_to_128_vcpus(ticks, scale):
    import matplotlib.pyplot as plt
    from plots import thread_axis
    fig, ax = plt.subplots()
    ax.plot(ticks, ticks)
    thread_axis(ax, ticks)
    assert ax.get_xscale() == scale
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(t) for t in ticks]
    plt.close(fig)


@pytest.mark.parametrize("accel, flagged", [("icount", True), ("tcg", False)])
def test_against_baseline_knows_an_instruction_clock(accel, flagged):
    """make compare under ACCEL=icount: boots that agree exactly are
    noiseless there (analysis/stats.py), as in make regress."""
    def variant(rate):
        return {"boots": [(str(i), [{"workload": "uncontended", "threads": 1, "rep": 1,
                                     "per_sec": rate}]) for i in (1, 2)],
                "manifests": [{"accel": accel}] * 2}
    rows = compare.against_baseline(
        {"owner-field": variant(9.481e6), "slow": variant(8.89e6)}, "owner-field")["slow"]
    assert rows[0]["regression"] is flagged
