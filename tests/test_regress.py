# SPDX-License-Identifier: GPL-2.0
"""The statistics and the regression verdict, on synthetic result sets."""
import json

import pytest

import regress
import stats


def test_mann_whitney_exact_tails():
    # Fully separated samples: the most extreme arrangement of C(m+n, m).
    assert stats.mann_whitney_u([1, 2, 3], [4, 5, 6]) == (0, pytest.approx(0.1))
    u, p = stats.mann_whitney_u([6, 7, 8, 9, 10], [1, 2, 3, 4, 5])
    assert u == 25 and p == pytest.approx(2 / 252)
    # One swap away from the extreme: 2 arrangements per tail of 252.
    assert stats.mann_whitney_u([1, 2, 3, 4, 6], [5, 7, 8, 9, 10])[1] == \
        pytest.approx(4 / 252)


def test_mann_whitney_ties_and_identical_samples():
    assert stats.mann_whitney_u([1, 1, 1], [1, 1, 1])[1] == 1.0
    _, p = stats.mann_whitney_u([1, 2, 2, 3, 3], [3, 4, 4, 5, 6])
    assert 0.01 < p < 0.1


def test_min_p_value_says_when_nothing_can_be_significant():
    assert stats.min_p_value(3, 3) == pytest.approx(0.1)
    assert stats.min_p_value(5, 5) < 0.05


def test_bootstrap_interval_brackets_the_change():
    low, high = stats.bootstrap_change_ci([100, 101, 99, 100, 102],
                                          [90, 91, 89, 90, 92])
    assert low < -0.09 < high < 0


def write_set(root, variant, stamp, per_sec, p99=4096, reps=5, cs_loops=50,
              duration_ms=1000):
    path = root / variant / stamp
    path.mkdir(parents=True)
    points = []
    for threads, rate in per_sec.items():
        for rep in range(reps):
            points.append({"workload": "contended", "threads": threads,
                           "rep": rep + 1, "cs_loops": cs_loops, "think_loops": 0,
                           "per_sec": rate * (1 + 0.004 * (rep - reps // 2)),
                           "latency_ns": {"p50": 1024, "p99": p99}})
    (path / "results.json").write_text(json.dumps({"points": points}))
    (path / "manifest.json").write_text(json.dumps(
        {"outcome": "ok", "vcpus": 2, "accel": "tcg",
         "parameters": {"cs_loops": str(cs_loops),
                        "duration_ms": str(duration_ms)}}))
    return path


def verdicts(report):
    return {(r["threads"], r["metric"]): r["regression"] for r in report["rows"]}


def test_a_ten_percent_drop_is_a_regression(tmp_path):
    base = write_set(tmp_path, "a", "1", {1: 1e6, 2: 2e6})
    new = write_set(tmp_path, "b", "1", {1: 1e6, 2: 1.8e6})
    report = regress.regress(str(base), str(new), tmp_path)
    assert verdicts(report) == {(1, "throughput"): False, (2, "throughput"): True,
                                (1, "latency_p99"): False, (2, "latency_p99"): False}
    assert regress.main(["regress", str(base), str(new)]) == 1


def test_identical_sets_and_gains_are_not_regressions(tmp_path, capsys):
    base = write_set(tmp_path, "a", "1", {1: 1e6, 2: 2e6})
    same = write_set(tmp_path, "a", "2", {1: 1e6, 2: 2e6})
    faster = write_set(tmp_path, "a", "3", {1: 1.2e6, 2: 2.4e6}, p99=2048)
    assert regress.regress(str(base), str(same), tmp_path)["regressions"] == 0
    assert regress.regress(str(base), str(faster), tmp_path)["regressions"] == 0
    out_json = tmp_path / "r.json"
    assert regress.main(["regress", str(base), str(faster), "--json",
                         str(out_json)]) == 0
    assert json.loads(out_json.read_text())["rows"][0]["change"] > 0.19
    assert "0 regression(s)" in capsys.readouterr().out


def test_latency_growth_beyond_threshold_is_a_regression(tmp_path):
    base = write_set(tmp_path, "a", "1", {2: 2e6}, p99=4096)
    new = write_set(tmp_path, "a", "2", {2: 2e6}, p99=8192)
    assert verdicts(regress.regress(str(base), str(new), tmp_path)) == {
        (2, "throughput"): False, (2, "latency_p99"): True}


def test_threshold_is_settable(tmp_path):
    base = write_set(tmp_path, "a", "1", {2: 2e6})
    new = write_set(tmp_path, "a", "2", {2: 1.8e6})
    assert regress.main(["regress", "--threshold", "15", str(base), str(new)]) == 0


def test_variant_name_means_its_newest_set(tmp_path):
    write_set(tmp_path, "owner-field", "20261203T100000Z-vm", {2: 2e6})
    newest = write_set(tmp_path, "owner-field", "20261203T110000Z-vm", {2: 1e6})
    assert regress.resolve("owner-field", tmp_path) == newest
    with pytest.raises(regress.InputError):
        regress.resolve("no-such-variant", tmp_path)


def test_too_few_repetitions_warn_loudly(tmp_path):
    base = write_set(tmp_path, "a", "1", {2: 2e6}, reps=3)
    new = write_set(tmp_path, "a", "2", {2: 1e6}, reps=3, duration_ms=300)
    report = regress.regress(str(base), str(new), tmp_path)
    # Halved, but 3 against 3 cannot reach p < 0.05: said, not flagged.
    assert report["regressions"] == 0
    assert any("cannot flag anything" in w for w in report["warnings"])
    assert any("duration_ms: 1000 vs 300" in w for w in report["warnings"])
    # Another critical section is another series: nothing to compare.
    other = write_set(tmp_path, "a", "3", {2: 1e6}, cs_loops=1200)
    with pytest.raises(regress.InputError, match="share no series"):
        regress.regress(str(base), str(other), tmp_path)


def test_bad_input_exits_2(tmp_path, capsys):
    assert regress.main(["regress", str(tmp_path / "x"), str(tmp_path / "y")]) == 2
    assert "neither a result set" in capsys.readouterr().err


@pytest.mark.parametrize("option, value", [
    ("--threshold", "nan"), ("--threshold", "-1"), ("--threshold", "inf"),
    ("--threshold", "x"), ("--alpha", "2"), ("--alpha", "0"), ("--alpha", "nan")])
def test_bad_threshold_or_alpha_exits_2_before_any_set_is_read(tmp_path, capsys, option, value):
    """THRESHOLD=nan used to hide a 20% regression and exit 0."""
    base = write_set(tmp_path, "a", "1", {1: 1e6})
    new = write_set(tmp_path, "b", "1", {1: 0.8e6})
    assert regress.main(["regress", str(base), str(new)]) == 1
    with pytest.raises(SystemExit) as e:
        regress.main(["regress", str(base), str(new), option, value])
    assert e.value.code == 2
    assert option in capsys.readouterr().err


def test_tally_counts_flags_per_metric(tmp_path, capsys):
    base = write_set(tmp_path, "a", "1", {1: 1e6, 2: 2e6})
    new = write_set(tmp_path, "a", "2", {1: 1e6, 2: 1.8e6})
    reports = tmp_path / "reports"
    reports.mkdir()
    for pair in (1, 2):
        regress.main(["regress", "--json", str(reports / f"pair{pair}.json"),
                      str(base), str(new if pair == 1 else base)])
    capsys.readouterr()
    assert regress.main(["regress", "--tally", str(reports)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "1 of 8 comparisons flagged", "  throughput: 1 of 4", "  latency_p99: 0 of 4"]


def test_several_sets_per_side_pool_their_repetitions(tmp_path):
    base = [write_set(tmp_path, "a", str(i), {2: 2e6}) for i in (1, 2)]
    new = [write_set(tmp_path, "b", str(i), {2: 1.8e6}) for i in (1, 2)]
    report = regress.regress(",".join(map(str, base)), ",".join(map(str, new)),
                             tmp_path)
    row = report["rows"][0]
    assert (row["base_reps"], row["new_reps"], row["regression"]) == (10, 10, True)
    mixed = write_set(tmp_path, "a", "3", {2: 2e6}, cs_loops=1200)
    with pytest.raises(regress.InputError, match="different settings"):
        regress.regress(f"{base[0]},{mixed}", str(new[0]), tmp_path)


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
    assert regress.resolve("a", tmp_path) == good
    with pytest.raises(regress.InputError, match="not a complete result set"):
        regress.resolve(str(crashed), tmp_path)
