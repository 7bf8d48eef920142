# SPDX-License-Identifier: GPL-2.0
"""The regression verdict (analysis/regress.py) on synthetic result sets;
the statistics under it are tests/test_stats.py's."""
import json
import math

import numpy as np
import pytest
from scipy import stats as sps

import latency
import estimates
import regress
import stats
import verdicts

# Boot-to-boot factors of a quiet host: about 1% apart, as on the reference
# of 2026-12-03 (the current one, from a noisier host: 1-16% in its 1-thread rows).
BOOT_NOISE = [1.0, 1.012, 0.991, 1.004, 0.995, 1.009, 0.988, 1.002]

def write_set(root, variant, stamp, per_sec, p99=4096, reps=5, cs_loops=50,
              duration_ms=1000, boot=1.0, accel="tcg"):
    """A result set: one boot, whose every point is scaled by boot."""
    path = root / variant / stamp
    path.mkdir(parents=True)
    points = []
    for threads, rate in per_sec.items():
        for rep in range(reps):
            points.append({"workload": "contended", "threads": threads,
                           "rep": rep + 1, "cs_loops": cs_loops, "think_loops": 0,
                           "per_sec": boot * rate * (1 + 0.004 * (rep - reps // 2)),
                           "latency_ns": {"p50": 1024, "p99": p99}})
    (path / "results.json").write_text(json.dumps({"points": points}))
    (path / "manifest.json").write_text(json.dumps(
        {"variant": variant, "outcome": "ok", "vcpus": 2, "accel": accel,
         "parameters": {"cs_loops": str(cs_loops),
                        "duration_ms": str(duration_ms)}}))
    return path


def write_boots(root, variant, per_sec, boots=4, first=0, **kw):
    """boots sets of variant, with boot-to-boot noise (from BOOT_NOISE[first]
    on), named as an interleaved run names them: the k-th boot of every
    variant on day k, variant "a" at 00:00, "b" at 01:00, ... so that two
    variants' boots alternate in time."""
    hour = ord(variant[0]) - ord("a")
    return [write_set(root, variant, f"202612{k + 1:02d}T{hour:02d}0000Z-vm", per_sec,
                      boot=BOOT_NOISE[(first + k) % len(BOOT_NOISE)], **kw)
            for k in range(boots)]


def joined(paths):
    return ",".join(map(str, paths))


def flags(report):
    return {(r["threads"], r["metric"]): r["regression"] for r in report["rows"]}


def test_a_ten_percent_drop_is_a_regression(tmp_path):
    base = write_boots(tmp_path, "a", {1: 1e6, 2: 2e6})
    new = write_boots(tmp_path, "b", {1: 1e6, 2: 1.8e6}, first=1)
    report = regress.regress(joined(base), joined(new), tmp_path)
    # The p99 rows, judged by the exact test, cannot reach 0.05/2 with 4
    # pairs: outside the family, shown but not judged.
    assert report["paired"] and report["tested"] == 2
    assert flags(report) == {(1, "throughput"): False, (2, "throughput"): True,
                                (1, "latency_p99"): False, (2, "latency_p99"): False}
    assert {r["verdict"] for r in report["rows"] if r["metric"] == "latency_p99"} == {
        "cannot tell"}
    assert [r["verdict"] for r in report["rows"] if r["metric"] == "throughput"] == [
        "not slower than 5%", "slower"]
    # With all 4 rows in, 2 / 2**n <= 0.05 / 4 from 8 pairs.
    assert any("2 row(s) not judged (latency_p99)" in w and "from 8 pairs" in w
               for w in report["warnings"])
    assert regress.main(["regress", joined(base), joined(new)]) == 1


def test_identical_designs_and_gains_are_not_regressions(tmp_path, capsys):
    base = write_boots(tmp_path, "a", {1: 1e6, 2: 2e6})
    same = write_boots(tmp_path, "b", {1: 1e6, 2: 2e6}, first=3)
    faster = write_boots(tmp_path, "c", {1: 1.2e6, 2: 2.4e6}, p99=2048, first=5)
    assert regress.regress(joined(base), joined(same), tmp_path)["regressions"] == 0
    assert regress.regress(joined(base), joined(faster), tmp_path)["regressions"] == 0
    out_json = tmp_path / "r.json"
    assert regress.main(["regress", joined(base), joined(faster), "--json",
                         str(out_json)]) == 0
    assert json.loads(out_json.read_text())["rows"][0]["change"] > 0.19
    out = capsys.readouterr().out
    assert "0 regression(s)" in out
    # The p99 rows (4 pairs) cannot be told: the comparison cannot tell.
    assert out.splitlines()[-1] == "cannot tell"


def test_a_change_within_the_noise_or_the_threshold_is_not_flagged(tmp_path):
    """Significant but small, or large but noisy: neither is a regression."""
    base = write_boots(tmp_path, "a", {2: 2e6})
    small = write_boots(tmp_path, "b", {2: 1.94e6}, first=2)
    report = regress.regress(joined(base), joined(small), tmp_path)
    row = report["rows"][0]
    assert row["p_holm"] < 0.05 and not row["regression"]
    # -3% with an interval well inside 5%: shown not slower than 5%.
    assert row["verdict"] == "not slower than 5%" and row["p_holm_not_worse"] < 0.05
    noisy = [write_set(tmp_path, "c", f"2026120{i}T000000Z-vm", {2: 2e6}, boot=f)
             for i, f in enumerate((0.7, 1.1, 0.8, 0.95))]
    report = regress.regress(joined(base), joined(noisy), tmp_path)
    row = report["rows"][0]
    assert row["change"] < -0.05 and row["verdict"] == "cannot tell"
    assert row["mde"] > 0.05 and "MDE" in row["why"]
    # ... and the report says how many pairs a 5% change would take.
    (note,) = [w for w in report["warnings"] if "could not have detected" in w]
    pairs = stats.boots_for(row, 0.05, 0.05 / report["tested"])
    assert f"pairs for it: throughput about {pairs} (median row)" in note


P99_DOUBLED = (8192, 8000, 8300, 8100, 8250, 8050, 8150)


def test_a_slowdown_every_boot_shows_alike_is_said_without_an_interval():
    """p99 doubled in every one of 8 pairs: no spread for a t interval, the
    exact test judges it (2/256), and the reason says so."""
    base, new = [4096.0] * 8, [8192.0] * 8
    row = {"series": "contended/C16/W0/unpinned", "threads": 2, "metric": "latency_p99",
           "higher_is_better": False, "test": "p_exact", "base": 4096, "new": 8192,
           **stats.boot_comparison(base, new, True),
           "p_not_worse": stats.not_worse_p(base, new, True, 0.05, False, exact=True)}
    verdicts.judge([row], 0.05, 0.05)
    assert row["ci95"] is None and row["verdict"] == "slower"
    assert row["why"] == "slower by 100.0% in every boot (exact test)"


def test_latency_growth_beyond_threshold_is_a_regression(tmp_path):
    """7 pairs: the exact test's floor, 2/128, is below 0.05/2."""
    base = write_boots(tmp_path, "a", {2: 2e6}, p99=4096, boots=7)
    new = [write_set(tmp_path, "b", f"2026120{i}T000000Z-vm", {2: 2e6}, p99=p99)
           for i, p99 in enumerate(P99_DOUBLED)]
    report = regress.regress(joined(base), joined(new), tmp_path)
    assert report["tested"] == 2
    assert flags(report) == {(2, "throughput"): False, (2, "latency_p99"): True}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # SciPy, 3 df
def test_p99_that_agrees_in_few_boots_is_not_judged_by_the_t_test(tmp_path):
    """The A/A false alarm: four boots' p99 all 6-10% higher, tight enough
    for a t test at 3 df (p < 0.001), which the exact test of 4 pairs
    cannot support (p >= 0.125). Judged by t, this row was a regression."""
    base = write_boots(tmp_path, "a", {2: 2e6}, p99=4096)
    new = [write_set(tmp_path, "b", f"2026120{i}T000000Z-vm", {2: 2e6}, p99=p99)
           for i, p99 in enumerate((4400, 4500, 4450, 4420))]
    report = regress.regress(joined(base), joined(new), tmp_path)
    p99 = [r for r in report["rows"] if r["metric"] == "latency_p99"][0]
    assert p99["p_value"] < 0.001 and p99["p_exact"] == pytest.approx(0.125)
    assert not p99["regression"] and p99["verdict"] == "cannot tell"
    assert "exact test cannot reach" in p99["why"]
    assert p99["mde"] is None and report["regressions"] == 0
    # The throughput row alone is the family: its MDE is at alpha / 1.
    throughput = [r for r in report["rows"] if r["metric"] == "throughput"][0]
    assert report["tested"] == 1 and throughput["judged"]
    # The MDE is the t test's own at alpha / 1: simulated boots whose true
    # drop is the MDE reject at 0.05 about 80% of the time (scipy's t).
    rng = np.random.default_rng(3)
    effect = -math.log1p(-throughput["mde"])
    sd = throughput["spread"] / math.sqrt(2)
    hits = sum(sps.ttest_rel(rng.normal(-effect, sd, 4), rng.normal(0, sd, 4)).pvalue < 0.05
               for _ in range(400))
    assert 0.72 <= hits / 400 <= 0.88


def test_smallest_exact_p_is_what_the_permutation_test_gives_at_best():
    for boots, paired in (([4, 4], True), ([3, 4], False), ([5, 5], True)):
        b = [100.0 + i for i in range(boots[0])]
        n = [200.0 + i for i in range(boots[1])]
        assert stats.smallest_exact_p(boots, paired) == pytest.approx(
            stats.boot_comparison(b, n, paired)["p_exact"])
    assert stats.smallest_exact_p([30, 30], True) == pytest.approx(
        2 / (stats.EXACT_PERMUTATIONS + 1))
    # The fewest pairs whose floor reaches a level, and no fewer.
    for level in (0.05, 0.02, 0.05 / 4, 0.05 / 9, 0.05 / 53, 0.01):
        n = stats.pairs_for_exact(level)
        assert stats.smallest_exact_p([n, n], True) <= level
        assert stats.smallest_exact_p([n - 1, n - 1], True) > level
    assert stats.pairs_for_exact(1e-9) is None


def test_tarone_family_leaves_out_only_what_cannot_reach_its_level():
    # Two continuous tests and two discrete ones whose floor is 0.125.
    assert stats.tarone_family([0, 0, 0.125, 0.125], 0.05) == [0, 1]
    # A floor of 0.004 reaches 0.05/4 = 0.0125 with 4 in the family.
    assert stats.tarone_family([0, 0, 0.004, 0.004], 0.05) == [0, 1, 2, 3]
    # 0.02 passes 0.05/2 alone but not 0.05/3: the least K is 2 ... of 3
    # candidates at K=2, so K=3, where only the two continuous ones pass.
    assert stats.tarone_family([0, 0, 0.02], 0.05) == [0, 1]
    assert stats.tarone_family([0.02], 0.05) == [0]
    assert stats.tarone_family([math.inf, 0], 0.05) == [1]


def test_threshold_is_settable(tmp_path):
    base = write_boots(tmp_path, "a", {2: 2e6})
    new = write_boots(tmp_path, "b", {2: 1.8e6}, first=1)
    assert regress.main(["regress", joined(base), joined(new)]) == 1
    assert regress.main(["regress", "--threshold", "15", joined(base), joined(new)]) == 0


def test_holm_keeps_many_marginal_rows_from_flagging(tmp_path):
    """A 7% drop at p = 0.02 in each of 40 rows: alone, each would be a
    regression; 40 such rows are what chance gives 40 A/A rows."""
    threads = range(1, 41)
    base = [write_set(tmp_path, "a", f"2026120{i}T000000Z-vm",
                      {t: 1e6 for t in threads}) for i in range(3)]
    spread = 0.07 * math.sqrt(3) / 6.965  # t = 6.965 at 2 df: p = 0.02
    new = [write_set(tmp_path, "b", f"2026120{i}T000000Z-vm",
                     {t: 1e6 * math.exp(-0.07 + spread * (1 - i)) for t in threads})
           for i in range(3)]
    report = regress.regress(joined(base), joined(new), tmp_path,
                             metrics=("throughput",))
    assert report["tested"] == 40 and report["regressions"] == 0
    assert all(r["p_value"] == pytest.approx(0.02, abs=1e-3) for r in report["rows"])


def test_one_boot_per_side_is_reported_but_not_judged(tmp_path, capsys):
    base = write_set(tmp_path, "a", "1", {2: 2e6})
    new = write_set(tmp_path, "b", "1", {2: 1e6})
    report = regress.regress(str(base), str(new), tmp_path)
    assert report["tested"] == 0 and report["regressions"] == 0
    assert report["rows"][0]["change"] == pytest.approx(-0.5)
    assert any("nothing judged" in w for w in report["warnings"])
    assert regress.main(["regress", str(base), str(new)]) == regress.EXIT_NOT_JUDGED
    assert capsys.readouterr().out.splitlines()[-1] == "nothing judged"


def test_variant_names_mean_their_newest_complete_sets(tmp_path):
    old = write_set(tmp_path, "owner-field", "20261203T100000Z-vm", {2: 2e6})
    newest = write_set(tmp_path, "owner-field", "20261203T110000Z-vm", {2: 1e6})
    assert regress.resolve("owner-field", tmp_path) == [newest]
    assert regress.resolve("owner-field:2", tmp_path) == [old, newest]
    for spec, error in (("owner-field:3", "only 2 complete"),
                        ("owner-field:x", "positive count"),
                        ("no-such-variant", "neither a result set")):
        with pytest.raises(regress.InputError, match=error):
            regress.resolve(spec, tmp_path)


def test_rounds_pair_the_sets_of_an_interleaved_run(tmp_path):
    """Relative folders in the rounds file are read from its own folder,
    as in a committed reference."""
    ref = tmp_path / "ref"
    base = write_boots(ref / "sets", "a", {2: 2e6}, boots=3)
    new = write_boots(ref / "sets", "b", {2: 1.8e6}, boots=3, first=2)
    (ref / "rounds.txt").write_text("".join(
        f"{i + 1} a sets/a/{b.name}\n{i + 1} b sets/b/{n.name}\n"
        for i, (b, n) in enumerate(zip(base, new))))
    report = regress.regress("a", "b", tmp_path / "elsewhere",
                             rounds_file=ref / "rounds.txt")
    assert report["paired"] and report["rows"][0]["boots"] == [3, 3]
    assert report["rows"][0]["change"] == pytest.approx(-0.1, abs=0.01)
    assert report["regressions"] == 1
    with pytest.raises(regress.InputError, match="no round has both"):
        regress.regress("a", "c", tmp_path, rounds_file=ref / "rounds.txt")


def test_unequal_sides_are_compared_unpaired(tmp_path):
    base = write_boots(tmp_path, "a", {2: 2e6}, boots=5)
    new = write_boots(tmp_path, "b", {2: 1.8e6}, boots=3, first=2)
    report = regress.regress(joined(base), joined(new), tmp_path)
    assert not report["paired"] and "Welch" in report["design"]
    assert report["regressions"] == 1


def test_bad_input_exits_2(tmp_path, capsys):
    assert regress.main(["regress", str(tmp_path / "x"), str(tmp_path / "y")]) == 2
    assert "neither a result set" in capsys.readouterr().err


@pytest.mark.parametrize("option, value", [
    ("--threshold", "nan"), ("--threshold", "-1"), ("--threshold", "inf"),
    ("--threshold", "x"), ("--alpha", "2"), ("--alpha", "0"), ("--alpha", "nan")])
def test_bad_threshold_or_alpha_exits_2_before_any_set_is_read(tmp_path, capsys, option, value):
    """THRESHOLD=nan used to hide a 20% regression and exit 0."""
    base = joined(write_boots(tmp_path, "a", {1: 1e6}))
    new = joined(write_boots(tmp_path, "b", {1: 0.8e6}, first=2))
    assert regress.main(["regress", base, new]) == 1
    with pytest.raises(SystemExit) as e:
        regress.main(["regress", base, new, option, value])
    assert e.value.code == 2
    assert option in capsys.readouterr().err


def test_tally_counts_flags_per_metric(tmp_path, capsys):
    base = joined(write_boots(tmp_path, "a", {1: 1e6, 2: 2e6}))
    new = joined(write_boots(tmp_path, "b", {1: 1e6, 2: 1.8e6}, first=1))
    reports = tmp_path / "reports"
    reports.mkdir()
    for pair in (1, 2):
        regress.main(["regress", "--json", str(reports / f"pair{pair}.json"),
                      base, new if pair == 1 else base])
    capsys.readouterr()
    assert regress.main(["regress", "--tally", str(reports)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "1 of 2 comparisons flagged a regression", "1 of 8 rows flagged",
        "  throughput: 1 of 4, median MDE 4.4%", "  latency_p99: 0 of 4",
        "rows: flagged in, median change, median MDE",
        "  contended/C50/W0/unpinned 1 throughput: 0 of 2, -0.1%, MDE 4.4%",
        "  contended/C50/W0/unpinned 1 latency_p99: 0 of 2, +0.0%, MDE -",
        # The 10% slower row: flagged in the one comparison of the two
        # that had it (the median of about -10% and 0%).
        "  contended/C50/W0/unpinned 2 throughput: 1 of 2, -5.1%, MDE 4.4%",
        "  contended/C50/W0/unpinned 2 latency_p99: 0 of 2, +0.0%, MDE -"]


def test_the_sets_of_a_side_must_be_measured_alike(tmp_path):
    base = write_boots(tmp_path, "a", {2: 2e6}, boots=2)
    mixed = write_set(tmp_path, "a", "3", {2: 2e6}, cs_loops=1200)
    with pytest.raises(regress.InputError, match="different settings"):
        regress.regress(f"{base[0]},{mixed}", joined(base), tmp_path)
    other = write_boots(tmp_path, "c", {2: 1e6}, boots=2, cs_loops=1200)
    with pytest.raises(regress.InputError, match="share no series"):
        regress.regress(joined(base), joined(other), tmp_path)


def test_a_truncated_set_is_bad_input_not_a_regression(tmp_path, capsys):
    """It used to end in a traceback, whose exit status 1 means
    'regression'."""
    base = write_set(tmp_path, "a", "1", {1: 1e6})
    new = write_set(tmp_path, "b", "1", {1: 1e6})
    (new / "results.json").write_text('{"points": [{"workload": "cont')
    assert regress.main(["regress", str(base), str(new)]) == 2
    assert "truncated" in capsys.readouterr().err
    (new / "results.json").write_text("")
    assert regress.main(["regress", str(base), str(new)]) == 2


def test_the_newest_set_of_a_variant_is_the_newest_complete_one(tmp_path):
    """A crashed or interrupted run is kept, but not compared."""
    good = write_set(tmp_path, "a", "20261201T000000Z-vm", {1: 1e6})
    crashed = write_set(tmp_path, "a", "20261202T000000Z-vm", {1: 0.5e6})
    manifest = json.loads((crashed / "manifest.json").read_text())
    (crashed / "manifest.json").write_text(json.dumps({**manifest, "outcome": "crashed"}))
    truncated = write_set(tmp_path, "a", "20261203T000000Z-vm", {1: 0.5e6})
    (truncated / "results.json").write_text("")
    assert regress.resolve("a", tmp_path) == [good]
    with pytest.raises(regress.InputError, match="not a complete result set"):
        regress.resolve(str(crashed), tmp_path)


def hdr_point(threads, per_sec, samples, slow_share=0.0):
    """A repetition with an HDR histogram of samples (sub_bits 4): bucket
    80 (512 ns) but for slow_share of them in bucket 120 (~8 us)."""
    slow = round(samples * slow_share)
    return {"workload": "contended", "threads": threads, "rep": 1, "cs_loops": 50,
            "think_loops": 0, "per_sec": per_sec,
            "latency_hdr_ns": {"sub_bits": 4, "counts": [[80, samples - slow]]
                               + ([[120, slow]] if slow else [])},
            "latency_ns": {"timer_subtracted": 100}}


def test_a_boot_p99_pools_its_repetitions_and_keeps_the_slow_ones():
    """Five repetitions of 300 samples each: too thin for a p99 of their
    own (3 samples beyond it); the filter left them out, and a slow
    repetition times fewer. Pooled, 1500 samples give the boot's p99."""
    reps = [dict(hdr_point(2, 1e6, 300), rep=r) for r in range(1, 6)]
    slow = dict(hdr_point(2, 0.4e6, 120, slow_share=0.5), rep=6)
    got = estimates.boot_estimates(reps + [slow])
    # 60 slow samples of 1620 (3.7%): the boot's p99 is the slow bucket.
    assert got[("contended/C50/W0/unpinned", 2, "latency_p99")] == pytest.approx(
        latency.hdr_value(120, 4) - 100)
    # 5 x 150 = 750 samples: under 1000, no p99 for this boot.
    thin = [dict(hdr_point(2, 1e6, 150), rep=r) for r in range(1, 6)]
    assert ("contended/C50/W0/unpinned", 2, "latency_p99") not in estimates.boot_estimates(thin)


def test_a_thin_p99_is_left_out_and_said(tmp_path):
    def write(variant, k, samples):
        path = tmp_path / variant / f"202612{k + 1:02d}T{ord(variant) - 97:02d}0000Z-vm"
        path.mkdir(parents=True)
        points = [dict(hdr_point(2, 1e6 * BOOT_NOISE[k], samples), rep=r) for r in range(5)]
        (path / "results.json").write_text(json.dumps({"points": points}))
        (path / "manifest.json").write_text(json.dumps(
            {"variant": variant, "outcome": "ok", "vcpus": 2, "accel": "tcg",
             "parameters": {}}))
        return path
    base = [write("a", k, 1000) for k in range(4)]
    new = [write("b", k, 150) for k in range(4)]
    report = regress.regress(joined(base), joined(new), tmp_path)
    assert [r["metric"] for r in report["rows"]] == ["throughput"]
    assert any("1 row(s) have no p99" in w for w in report["warnings"])


def test_a_boot_reads_each_row_with_its_estimator():
    """One thread alone: the fastest repetition (a slower one is the
    host's doing). More threads: the mean, which counts a fast and a slow
    mode by how often they came, where the median of five flips from one
    mode to the other. p99 of sets without histograms: the median of
    every repetition's."""
    def point(workload, threads, per_sec, p99):
        return {"workload": workload, "threads": threads, "cs_loops": 16,
                "think_loops": 0, "per_sec": per_sec, "latency_ns": {"p99": p99}}
    reps = [(1.0, 900), (2.0, 500), (1.0, 700), (2.0, 300), (1.0, 100)]
    points = [point(w, t, rate, p99) for w, t in (("uncontended", 1),
                                                  ("contended", 1), ("contended", 2))
              for rate, p99 in reps]
    got = estimates.boot_estimates(points)
    assert got[("uncontended", 1, "throughput")] == 2.0
    assert got[("contended/C16/W0/unpinned", 1, "throughput")] == 2.0
    assert got[("contended/C16/W0/unpinned", 2, "throughput")] == pytest.approx(1.4)
    assert {v for (_, _, m), v in got.items() if m == "latency_p99"} == {500}
