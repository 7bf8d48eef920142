# SPDX-License-Identifier: GPL-2.0
"""TEST_DEADLINE (tests/deadline.py): a test running into it is stopped
there, and none starts after it; each fails with the reason named."""
import os
import subprocess
import sys
import time

from conftest import LAB_ROOT

TESTS = '''
import time


def test_runs_into_the_deadline():
    time.sleep(60)


def test_comes_after_it():
    pass
'''


def run_tests(tmp_path, deadline):
    (tmp_path / "test_two.py").write_text(TESTS)
    env = dict(os.environ, TEST_DEADLINE=str(deadline),
               PYTHONPATH=str(LAB_ROOT / "tests"))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "deadline", "-p", "no:cacheprovider",
         "-o", "timeout=1800", "-rA", "test_two.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def outcomes(report):
    return {line.split()[1].split("::")[-1]: line.split()[0]
            for line in report.splitlines() if line.startswith(("PASSED", "FAILED", "ERROR"))}


def test_a_test_is_stopped_at_the_deadline_and_none_starts_after_it(tmp_path):
    r = run_tests(tmp_path, time.time() + 3)
    # A failure in its set-up: pytest reports it as an error.
    assert outcomes(r.stdout) == {"test_runs_into_the_deadline": "FAILED",
                                  "test_comes_after_it": "ERROR"}, r.stdout
    assert "Timeout" in r.stdout and "not started: TEST_DEADLINE passed" in r.stdout


def test_a_deadline_past_starts_nothing(tmp_path):
    r = run_tests(tmp_path, time.time() - 1)
    assert outcomes(r.stdout) == {"test_runs_into_the_deadline": "ERROR",
                                  "test_comes_after_it": "ERROR"}, r.stdout
    assert r.stdout.count("not started: TEST_DEADLINE passed") >= 2, r.stdout
