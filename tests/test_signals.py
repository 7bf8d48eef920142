# SPDX-License-Identifier: GPL-2.0
"""A job stopped by a signal: python3 lab passes it on and waits for the
job to finish its set; the runner survives the second signal that Ctrl-C
brings a moment after the first."""
import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import LAB_ROOT
from test_qemu_runner import alive, start_runner, wait_for

# A stand-in for a job's script (lab/bench.sh): on a stopping signal it
# takes a while to finish its set, then exits as the shell does.
JOB = r'''
trap 'echo "got $1" >"$2"; sleep 0.5; echo finished >>"$2"; exit 143' TERM
trap 'echo "got $1" >"$2"; sleep 0.5; echo finished >>"$2"; exit 130' INT
echo $$ >"$3"
while :; do sleep 0.05; done
'''
# The lab's job runner, as python3 lab runs every verb's job.
LAB = r'''
import importlib.util, sys
sys.path.insert(0, sys.argv[1] + "/lab")
spec = importlib.util.spec_from_file_location("lab_main", sys.argv[1] + "/lab/__main__.py")
lab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lab)
sys.exit(lab.run_job(["bash", "-c", sys.argv[2], "job", "x", sys.argv[3], sys.argv[4]], None))
'''


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_the_lab_passes_a_signal_on_and_waits_for_the_job(tmp_path, sig, status):
    """SIGTERM to python3 lab (as make passes it on) used to kill it at
    once, orphaning the job, its runner and QEMU."""
    log, pidfile = tmp_path / "job.log", tmp_path / "job.pid"
    lab = subprocess.Popen([sys.executable, "-c", LAB, str(LAB_ROOT), JOB, str(log),
                            str(pidfile)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                       signal.SIG_DFL))
    assert wait_for(pidfile.exists), lab.communicate(timeout=10)
    job = int(pidfile.read_text())
    lab.send_signal(sig)
    _, err = lab.communicate(timeout=30)
    assert lab.returncode == status, err
    assert log.read_text().splitlines() == ["got x", "finished"]
    assert "Traceback" not in err and not alive(job)


def test_a_second_signal_in_the_runner_does_not_cut_its_run_short(tmp_path):
    """Ctrl-C: SIGINT from the terminal, then boot_guest's SIGTERM. The
    second one, raised while the first was handled, crashed the runner
    (3 of 4 tries): no run.json, the set 'not-run'."""
    proc, pidfile = start_runner(tmp_path, "hang")
    assert wait_for(pidfile.exists), proc.communicate(timeout=10)
    qemu = int(pidfile.read_text())
    # Back to back: the second arrives while the first is being handled.
    os.kill(proc.pid, signal.SIGINT)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    # 130 for the first signal; a later one that arrives after the run is
    # written (the fake QEMU stops at once) may end the runner itself.
    assert proc.returncode in (130, -signal.SIGTERM, -signal.SIGINT), err
    assert "Traceback" not in err
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["outcome"] == "interrupted" and run["interrupted_by"] == "SIGINT"
    assert wait_for(lambda: not alive(qemu))
    assert os.path.exists(tmp_path / "out" / "results.raw")
