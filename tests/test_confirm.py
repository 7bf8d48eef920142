# SPDX-License-Identifier: GPL-2.0
"""Flagged rows confirmed by rerunning just their points (a fake bench)."""
import json

import pytest

import confirm
import regress
from conftest import LAB_ROOT
from test_regress import joined, write_boots

FAKE_BENCH = LAB_ROOT / "tests" / "fake_bench.py"


def flagged_report(tmp_path, new_append):
    """A 10% drop at 2 threads over 4 boots a side; NEW's sets say which
    kernel command line they ran with."""
    base = write_boots(tmp_path, "a", {2: 2e6})
    new = write_boots(tmp_path, "b", {2: 1.8e6}, first=1)
    for path in new:
        manifest = json.loads((path / "manifest.json").read_text())
        manifest["parameters"]["guest_append"] = new_append
        (path / "manifest.json").write_text(json.dumps(manifest))
    report = regress.regress(joined(base), joined(new), tmp_path,
                             metrics=("throughput",))
    assert report["regressions"] == 1
    return report


def test_a_real_slowdown_is_confirmed(tmp_path):
    report = flagged_report(tmp_path, "slow=1")
    confirm.confirm(report, 3, tmp_path / "confirm", regress.judge_sets, bench=FAKE_BENCH)
    (row,) = report["rows"]
    assert row["regression"] and row["verdict"] == "REGRESSION (confirmed)"
    assert row["confirmation"]["boots"] == [3, 3]
    assert row["confirmation"]["change"] == pytest.approx(-0.1, abs=0.02)
    # Only the flagged point was rerun, each side with its own settings.
    reruns = sorted((tmp_path / "confirm").glob("*/*/results.json"))
    assert len(reruns) == 6
    point = json.loads(reruns[0].read_text())["points"][0]
    assert (point["workload"], point["threads"], point["cs_loops"]) == ("contended", 2, 50)


def test_a_fluke_is_not_confirmed(tmp_path):
    """The original boots were slow; the kernel is not."""
    report = flagged_report(tmp_path, "")
    confirm.confirm(report, 3, tmp_path / "confirm", regress.judge_sets, bench=FAKE_BENCH)
    assert report["regressions"] == 0
    assert report["rows"][0]["verdict"] == "not confirmed"


def test_a_failed_rerun_is_an_error_not_a_verdict(tmp_path):
    report = flagged_report(tmp_path, "slow=1")
    with pytest.raises(confirm.ConfirmError, match="run failed"):
        confirm.confirm(report, 2, tmp_path / "confirm", regress.judge_sets,
                        bench="/bin/false")


def test_confirm_needs_two_rounds(tmp_path, capsys):
    with pytest.raises(SystemExit):
        regress.main(["regress", "--confirm", "1", "a", "b"])
    assert "2 or more rounds" in capsys.readouterr().err


def test_point_settings_name_the_point():
    params = {"duration_ms": "1000", "reps": "5", "guest_append": "", "vcpus": "2"}
    env = confirm.point_settings("contended/C800/W160/pinned", 4, params)
    assert (env["WORKLOADS"], env["CS_LOOPS"], env["THINK_LOOPS"], env["PIN"],
            env["THREADS"]) == ("contended", "800", "160", "1", "4")
    assert env["DURATION_MS"] == "1000" and "GUEST_APPEND" not in env
    assert confirm.point_settings("uncontended", 1, params)["WORKLOADS"] == "uncontended"
