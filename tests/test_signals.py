# SPDX-License-Identifier: GPL-2.0
"""A job stopped by a signal: python3 lab passes it on and waits for the
job to finish its set; the runner survives the second signal that Ctrl-C
brings a moment after the first."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

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


def job_processes(tag):
    """The live processes whose environment holds TAG (a test's own
    RESULTS_DIR): make's job, its runner and QEMU inherit it."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and tag.encode() in (proc / "environ").read_bytes() \
                    and alive(int(proc.name)):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.kernel
@pytest.mark.parametrize("qemu, sig, to_group", [
    # A process manager stops make alone; make passes SIGTERM to its job.
    ("fake", signal.SIGTERM, False),
    # Ctrl-C: the terminal signals make's whole process group.
    ("real", signal.SIGINT, True),
])
def test_a_signal_to_make_bench_ends_its_set_as_interrupted(tmp_path, qemu, sig, to_group):
    """SIGTERM to make, 22 s into a real boot, left the job, runner and
    QEMU running 40 s more, a manifest saying ok and /tmp/mutexlab-set.*
    files behind."""
    results, tmp = tmp_path / "results", tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, VARIANT="owner-field", QUICK="1", PLOTS="0", CROSSCHECK="0",
               ACCEL="tcg", RESULTS_DIR=str(results), TMPDIR=str(tmp))
    if qemu == "fake":
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "qemu-system-x86_64").symlink_to(LAB_ROOT / "tests" / "fake_qemu.py")
        env.update(PATH=f"{bin_dir}:{env['PATH']}", FAKE_QEMU_SCENARIO="hang")
    out, err = tmp_path / "make.out", tmp_path / "make.err"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        # As from a terminal: a run of the tests from a script's `&` job or
        # under nohup would hand make SIGINT or SIGHUP ignored, for good.
        make = subprocess.Popen(["make", "-s", "-C", str(LAB_ROOT), "bench"], env=env,
                                stdout=stdout, stderr=stderr, start_new_session=True,
                                preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL)
                                                    for s in (signal.SIGINT, signal.SIGHUP)])
    # The module has begun to report (after a kernel build, when cold).
    measuring = lambda: any("KTAP" in raw.read_text()  # noqa: E731
                            for raw in results.glob("owner-field/*/results.raw"))
    if not wait_for(measuring, seconds=1200):
        os.killpg(make.pid, signal.SIGKILL)
        pytest.fail(f"the guest never started: {err.read_text()[-3000:]}")
    if to_group:
        os.killpg(make.pid, sig)
    else:
        make.send_signal(sig)
    make.wait(timeout=120)
    assert make.returncode != 0
    assert "Traceback" not in err.read_text(), err.read_text()[-3000:]
    (result_set,) = results.glob("owner-field/*")
    manifest = json.loads((result_set / "manifest.json").read_text())
    assert manifest["outcome"] == "interrupted", err.read_text()[-3000:]
    assert out.read_text().splitlines()[-1] == str(result_set)
    assert wait_for(lambda: not job_processes(f"RESULTS_DIR={results}"), seconds=30), \
        job_processes(f"RESULTS_DIR={results}")
    assert list(tmp.iterdir()) == []
