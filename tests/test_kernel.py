# SPDX-License-Identifier: GPL-2.0
"""The whole pipeline on real kernels: build, boot, result set, failures.

These build owner-field once (minutes on a cold cache, seconds warm) and boot
it a few times under QEMU with short runs.
"""
import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import LAB_ROOT, result_sets, run_make
from resultset import check_result_set

pytestmark = pytest.mark.kernel

SHORT_RUN = {"DURATION_MS": 200, "WARMUP_MS": 50, "REPS": 2}


def lab_shell(expr):
    """Evaluate a lab/lib.sh helper, e.g. tree_dir owner-field."""
    return subprocess.run(["bash", "-c", f"source lab/lib.sh && {expr}"],
                          cwd=LAB_ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="module")
def owner_field_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("owner-field")
    # The main job as a user runs it (every series, the cross-check), short.
    r = run_make("bench", tmp, VARIANT="owner-field", CROSSCHECK=1, **SHORT_RUN)
    return r, result_sets(tmp / "results", "owner-field")


def test_owner_field_bench_gives_a_complete_result_set(owner_field_run):
    r, sets = owner_field_run
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(sets) == 1
    assert check_result_set(sets[0]) == []
    manifest = json.loads((sets[0] / "manifest.json").read_text())
    assert manifest["accel"] in ("kvm", "tcg")
    assert manifest["guest_uname"].startswith("6.1.")
    config = (sets[0] / "kernel.config").read_text()
    assert "CONFIG_MUTEX_SPIN_ON_OWNER=y" in config.splitlines()
    assert "CONFIG_DEBUG_MUTEXES=y" not in config.splitlines()


def test_main_job_sweeps_every_setting(owner_field_run):
    _, sets = owner_field_run
    results = json.loads((sets[0] / "results.json").read_text())
    series = {row["series"] for row in results["summary"]}
    # Every combination of the default C, W and placement, as its own series.
    assert {s for s in series if s.startswith("contended/")} == {
        f"contended/C{c}/W{w}/{p}" for c in (16, 800) for w in (0, 160)
        for p in ("pinned", "unpinned")}


def test_main_job_cross_checks_against_perf_and_locktorture(owner_field_run):
    _, sets = owner_field_run
    manifest = json.loads((sets[0] / "manifest.json").read_text())
    cross = sets[0] / "crosscheck"
    report = json.loads((cross / "crosscheck.json").read_text())
    assert report["problems"] == []
    # perf saw our workers contend, as often as our lock events say.
    assert report["perf"]["contended"] > 0
    vcpus = manifest["vcpus"]
    assert [t["threads"] for t in report["locktorture"]] == [vcpus, 2 * vcpus]
    assert all(t["locktorture_total"] > 0 and t["ours_locktorture_cs"] > 0
               for t in report["locktorture"])
    assert (cross / "crosscheck.md").is_file() and (cross / "console.log").is_file()


def test_result_set_checker_rejects_broken_sets(owner_field_run, tmp_path):
    """The checker above is trusted only because it fails on these."""
    _, sets = owner_field_run
    for mutate, expected in (
            (drop_thread_count, "repetitions present"),
            (zero_acquisitions, "no acquisitions"),
            (drop_manifest_key, "manifest lacks accel")):
        broken = tmp_path / mutate.__name__
        subprocess.run(["cp", "-r", str(sets[0]), str(broken)], check=True)
        mutate(broken)
        problems = check_result_set(broken)
        assert any(expected in p for p in problems), (mutate, problems)


def edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def drop_thread_count(d):
    edit_json(d / "results.json", lambda r: r.__setitem__(
        "points", [p for p in r["points"] if p["threads"] != 2]))


def zero_acquisitions(d):
    def change(r):
        r["points"][0]["acquisitions"] = [0] * r["points"][0]["threads"]
        r["points"][0]["total"] = 0
    edit_json(d / "results.json", change)


def drop_manifest_key(d):
    edit_json(d / "manifest.json", lambda m: m.pop("accel"))


def test_guest_crash_fails_fast_and_keeps_earlier_results(tmp_path):
    r = run_make("bench", tmp_path, VARIANT="owner-field", THREADS="1,2",
                 GUEST_APPEND="mutexlab.test_bug=1", **SHORT_RUN)
    assert r.returncode != 0
    assert "kernel BUG at" in r.stderr
    (result_set,) = result_sets(tmp_path / "results", "owner-field")
    manifest = json.loads((result_set / "manifest.json").read_text())
    # "crashed", not "timeout": the console detector ended it, not the watchdog.
    assert manifest["outcome"] == "crashed"
    points = json.loads((result_set / "results.json").read_text())["points"]
    assert [(p["threads"], p["rep"]) for p in points] == [(1, 1)]


def test_eight_vcpus_run_under_tcg_with_sixteen_threads(tmp_path):
    """More vCPUs than the host has: the sweep, the guest's memory and the
    watchdog grow with VCPUS (functionally: no performance claim)."""
    r = run_make("bench", tmp_path, VARIANT="owner-field", VCPUS=8, QUICK=1,
                 PLOTS=0)
    assert r.returncode == 0, r.stderr[-3000:]
    (result_set,) = result_sets(tmp_path / "results", "owner-field")
    assert check_result_set(result_set) == []
    manifest = json.loads((result_set / "manifest.json").read_text())
    assert (manifest["vcpus"], manifest["parameters"]["mem_mb"]) == (8, "2048")
    results = json.loads((result_set / "results.json").read_text())
    assert results["meta"]["online_cpus"] == 8
    assert {p["threads"] for p in results["points"]
            if p["workload"] == "contended"} == {1, 8, 16}


@contextlib.contextmanager
def every_host_cpu_busy():
    """A process spinning on each of the host's CPUs, for as long as the
    block runs."""
    spinners = [subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"])
                for _ in range(os.cpu_count())]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_icount_readings_do_not_follow_a_busy_host(tmp_path):
    """Under ACCEL=icount the guest's clock counts its instructions: a boot
    on a host whose every CPU another process keeps busy reads what a boot
    on a quiet host reads, and loses no repetition to the load. (Under TCG
    the same boot reads about half: the guest's clock is the host's.)"""
    run = dict(VARIANT="owner-field", ACCEL="icount", VCPUS=1,
               WORKLOADS="uncontended,contended", THREADS="1", CS_LOOPS="16",
               THINK_LOOPS="0", PIN="0", PLOTS=0, **SHORT_RUN)
    quiet = run_make("bench", tmp_path / "quiet", **run)
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    with every_host_cpu_busy():
        busy = run_make("bench", tmp_path / "busy", **run)
    assert busy.returncode == 0, busy.stderr[-3000:]
    readings = {}
    for name in ("quiet", "busy"):
        (result_set,) = result_sets(tmp_path / name / "results", "owner-field")
        assert check_result_set(result_set) == []
        assert json.loads((result_set / "manifest.json").read_text())["accel"] == "icount"
        points = json.loads((result_set / "results.json").read_text())["points"]
        readings[name] = {(p["workload"], p["rep"]): p["per_sec"] for p in points}
        if name == "busy":
            # The host really was busy, and that took no repetition away.
            assert min(p["host"]["other_cpus"] for p in points) > 0.5
            assert not any(p["host"]["disturbed"] for p in points)
    assert readings["busy"].keys() == readings["quiet"].keys()
    for key, rate in readings["quiet"].items():
        assert readings["busy"][key] == pytest.approx(rate, rel=0.01), key


def test_results_on_the_console_alone_make_the_same_set(tmp_path):
    """RESULTS_CHANNEL=console: one serial line, as on a LAVA device."""
    r = run_make("bench", tmp_path, VARIANT="owner-field", THREADS="1,2",
                 WORKLOADS="uncontended,contended", RESULTS_CHANNEL="console",
                 PLOTS=0, **SHORT_RUN)
    assert r.returncode == 0, r.stderr[-3000:]
    (result_set,) = result_sets(tmp_path / "results", "owner-field")
    assert check_result_set(result_set) == []
    assert "mutexlab| KTAP version 1" in (result_set / "console.log").read_text()
    assert json.loads((result_set / "qemu-cmd.json").read_text()).count("-serial") == 1


def imported_and_local(tmp_path, sweep, **run):
    """make import of run (its set must pass the checker), and a local
    make bench of the same sweep: (imported set, local set)."""
    r = run_make("import", tmp_path, **run)
    assert r.returncode == 0, r.stderr[-3000:]
    imported = Path(r.stdout.strip().splitlines()[-1])
    assert check_result_set(imported) == []
    r = run_make("bench", tmp_path, VARIANT="owner-field", **sweep)
    assert r.returncode == 0, r.stderr[-3000:]
    (local,) = [s for s in result_sets(tmp_path / "results", "owner-field")
                if not s.name.endswith("-import")]
    return imported, local


def test_a_bundle_runs_elsewhere_with_only_qemu_and_imports_as_a_set(tmp_path):
    """make bundle, its run.sh from another folder with a bare PATH (no lab
    tree, no Python needed), make import: a set in make bench's format that
    make compare takes beside a local one."""
    sweep = {"QUICK": 1, "WORKLOADS": "uncontended,contended", "THREADS": "1,2",
             "PLOTS": 0}
    r = run_make("bundle", tmp_path, VARIANT="owner-field", ACCEL="tcg", **sweep)
    assert r.returncode == 0, r.stderr[-3000:]
    bundle = Path(r.stdout.strip().splitlines()[-1])
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(bundle, elsewhere / "bundle")
    run = subprocess.run(["/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "bash",
                          str(elsewhere / "bundle" / "run.sh"), str(elsewhere / "out")],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    imported, local = imported_and_local(tmp_path, sweep, RUN=str(elsewhere / "out"))
    mine, theirs = (json.loads((s / "results.json").read_text()) for s in (local, imported))
    assert mine.keys() == theirs.keys()
    assert ([(p["workload"], p["threads"], p["rep"]) for p in mine["points"]]
            == [(p["workload"], p["threads"], p["rep"]) for p in theirs["points"]])
    from compare import load_sets
    assert set(load_sets([local, imported])) == {"owner-field"}


def test_broken_mutual_exclusion_fails_the_run(tmp_path):
    r = run_make("bench", tmp_path, VARIANT="owner-field", THREADS="2",
                 VCPUS=2, GUEST_APPEND="mutexlab.test_unlocked=1", **SHORT_RUN)
    assert r.returncode != 0
    (result_set,) = result_sets(tmp_path / "results", "owner-field")
    manifest = json.loads((result_set / "manifest.json").read_text())
    assert manifest["outcome"] == "failed-checks"
    assert any(p.startswith("not ok") for p in manifest["problems"])


def test_patch_that_does_not_apply_is_named_and_tree_stays_usable(tmp_path):
    variants = LAB_ROOT / "tests" / "variants"
    r = run_make("bench", tmp_path, VARIANT="broken-patch",
                 VARIANTS_DIR=variants)
    assert r.returncode != 0
    assert "0001-locking-mutex-change-a-line-that-does-not-exist.patch " \
           "does not apply" in r.stderr
    assert "patch failed: kernel/locking/mutex.c:40" in r.stderr
    assert not (tmp_path / "results").exists()
    tree = lab_shell("tree_dir broken-patch")
    head = subprocess.run(["git", "-C", tree, "rev-parse", "HEAD",
                           "pristine^{commit}"], capture_output=True,
                          text=True, check=True).stdout.split()
    assert head[0] == head[1]
    status = subprocess.run(["git", "-C", tree, "status", "--porcelain"],
                            capture_output=True, text=True, check=True)
    assert status.stdout == ""
    assert not Path(f"{tree}.series").exists()


def test_checkpatch_passes_on_module_and_series():
    r = subprocess.run(["lab/checkpatch.sh"], cwd=LAB_ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_checkpatch_catches_a_style_mutant(tmp_path):
    source = (LAB_ROOT / "bench-module" / "point.c").read_text()
    mutant = tmp_path / "mutant.c"
    mutant.write_text(source.replace("\tint i;\n", "    int i ;\n", 1))
    r = subprocess.run(["lab/checkpatch.sh", str(mutant)], cwd=LAB_ROOT,
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "SPACING" in r.stdout or "CODE_INDENT" in r.stdout, r.stdout


@pytest.mark.skipif(not shutil.which("lava-run") or os.geteuid() != 0,
                    reason="lava-run (make deps-test) runs jobs as root")
def test_a_lava_job_runs_under_lava_run_and_imports_beside_a_local_set(tmp_path):
    """make lava-job on a console-channel bundle, the job run by Debian's
    lava-dispatcher (lava-run, no server) on a QEMU device, its log imported
    and compared with a local run of the same sweep."""
    sweep = {"QUICK": 1, "WORKLOADS": "uncontended,contended", "THREADS": "1,2",
             "PLOTS": 0}
    r = run_make("bundle", tmp_path, VARIANT="owner-field", ACCEL="tcg",
                 RESULTS_CHANNEL="console", **sweep)
    assert r.returncode == 0, r.stderr[-3000:]
    bundle = r.stdout.strip().splitlines()[-1]
    device = tmp_path / "device.yaml"
    job = subprocess.run([sys.executable, "lab/lava_job.py", bundle, "--device", str(device)],
                         cwd=LAB_ROOT, capture_output=True, text=True)
    assert job.returncode == 0, job.stderr
    log = tmp_path / "lava.log"
    with open(log, "w") as f:
        lava = subprocess.run(["lava-run", "--job-id", f"mutexlab-{os.getpid()}",
                               "--output-dir", str(tmp_path / "lava"), "--device",
                               str(device), job.stdout.strip()],
                              stdout=f, stderr=subprocess.STDOUT, timeout=900)
    assert lava.returncode == 0, log.read_text()[-3000:]
    assert '"case": "job", "definition": "lava", "result": "pass"' in log.read_text()
    imported, local = imported_and_local(tmp_path, sweep, RUN=str(log), BUNDLE=bundle)
    from compare import MixedSettings, load_sets, machine_line
    with pytest.raises(MixedSettings):
        load_sets([local, imported])
    assert machine_line(load_sets([local, imported], mix_machines=True)).startswith(
        "MIXED MACHINES")
