# SPDX-License-Identifier: GPL-2.0
"""The verdict as an exit status: `python3 lab regress` gives each its
own, `make regress` fails exactly when it does (GNU make turns every
failure into its own 2), and both print the verdict last."""
import os
import subprocess

import pytest

from conftest import LAB_ROOT
from test_regress import joined, write_boots

PYTHON = "/usr/bin/python3"


def sides(tmp_path, new_rates, boots=4, **kw):
    base = write_boots(tmp_path, "a", {1: 1e6, 2: 2e6}, boots=boots, **kw)
    new = write_boots(tmp_path, "b", new_rates, boots=boots, first=2, **kw)
    return joined(base), joined(new)


def run(command, base, new, **env):
    return subprocess.run(command, cwd=LAB_ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "BASE": base, "NEW": new,
                                            **env})


CASES = {
    # a 10% drop at 2 threads: slower
    "slower": ({1: 1e6, 2: 1.8e6}, {}, 1, "slower"),
    # the same speed, p99 rows untold at 4 pairs: cannot tell, not a failure
    "cannot tell": ({1: 1e6, 2: 2e6}, {}, 0, "cannot tell"),
    # ... unless STRICT=1
    "strict": ({1: 1e6, 2: 2e6}, {"STRICT": "1"}, 4, "cannot tell"),
    # throughput alone, the same speed: every row not slower
    "not slower": ({1: 1e6, 2: 2e6}, {"METRICS_ONLY": "throughput"}, 0,
                   "not slower than 5%"),
}


@pytest.mark.parametrize("case", CASES)
def test_the_lab_command_exits_with_the_verdict_and_make_fails_with_it(tmp_path, case):
    rates, env, status, last = CASES[case]
    base, new = sides(tmp_path, rates)
    if env.pop("METRICS_ONLY", None):
        command = [PYTHON, "analysis/regress.py", "--metrics", "throughput", base, new]
    else:
        command = [PYTHON, "lab", "regress"]
    r = run(command, base, new, **env)
    assert r.returncode == status, r.stderr
    assert r.stdout.splitlines()[-1] == last
    if command[1] == "lab":
        m = run(["make", "-s", "regress"], base, new, **env)
        assert (m.returncode != 0) == (status != 0), m.stderr
        assert m.stdout.splitlines()[-1] == last


def test_bad_input_and_nothing_judged_have_their_own_statuses(tmp_path):
    r = run([PYTHON, "lab", "regress"], str(tmp_path / "none"), str(tmp_path / "none"))
    assert r.returncode == 2 and r.stdout.splitlines()[-1] == "bad input"
    assert "neither a result set" in r.stderr
    base, new = sides(tmp_path, {1: 1e6, 2: 1e6}, boots=2)
    r = run([PYTHON, "lab", "regress"], base, new)
    # Half the throughput at 2 threads, but 2 boots a side: no t test.
    assert r.returncode == 3 and r.stdout.splitlines()[-1] == "nothing judged"
    m = run(["make", "-s", "regress"], base, new)
    assert m.returncode == 2


def test_a_crash_is_not_the_regression_status(tmp_path, capsys, monkeypatch):
    """A bug of the lab: its traceback and status 5, never 1 (Python's own
    status for an uncaught exception, the status of a regression)."""
    import regress

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    base, new = sides(tmp_path, {1: 1e6, 2: 2e6})
    monkeypatch.setattr(regress, "regress", broken)
    assert regress.main(["regress", base, new]) == 5
    out, err = capsys.readouterr()
    assert "ZeroDivisionError: a bug" in err and out.splitlines()[-1] == "internal error"
    # A set the schema refuses is bad input, named, not a crash.
    monkeypatch.undo()
    first = tmp_path / "b" / "20261201T010000Z-vm" / "results.json"
    first.write_text('{"points": ["not a point"]}')
    r = run([PYTHON, "lab", "regress"], base, new)
    assert r.returncode == 2 and str(first) in r.stderr
