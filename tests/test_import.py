# SPDX-License-Identifier: GPL-2.0
"""make import: a bundle's run on another host as an ordinary result set,
and make regress / make compare refusing to mix machines unless told."""
import json
import shutil
import subprocess
import sys

import pytest

import compare
import import_run
import regress
from conftest import FIXTURES, LAB_ROOT
from resultset import check_result_set
from sets import is_complete
from test_regress import write_boots

REFERENCE = sorted((LAB_ROOT / "results" / "reference").glob("*/sets/owner-field/*"))[0]
BIG_HOST = {"hostname": "bighost", "cpus": "64", "cpu_model": "Big CPU 9000",
            "kernel": "6.12.0", "qemu": "QEMU emulator version 9.2.0"}
QEMU_ARGS = ["-accel", "tcg,thread=multi", "-cpu", "max", "-smp", "2", "-m", "1024",
             "-append", "console=ttyS0 panic=-1 mutexlab.reps=5"]


def bundle_run(tmp_path, console_only=False, console_extra=""):
    """What run.sh leaves on another host: the module's real results (the
    fixture), over the serial ports or framed on the console."""
    run = tmp_path / "run"
    run.mkdir(parents=True)
    raw = (FIXTURES / "results-ok.raw").read_text()
    console = (FIXTURES / "console-ok.log").read_text()
    if console_only:
        console += "".join(f"mutexlab| {line}\r\n" for line in raw.splitlines())
        console += "mutexlab-exit| 0\r\n"
    else:
        (run / "results.raw").write_text(raw)
        (run / "guest-status").write_text("0\n")
    (run / "console.log").write_text(console + console_extra)
    (run / "qemu.log").write_text("")
    (run / "qemu-status").write_text("0\n")
    (run / "host.txt").write_text("".join(f"{k}\t{v}\n" for k, v in BIG_HOST.items()))
    manifest = json.loads((REFERENCE / "manifest.json").read_text())
    # The fixture's sweep: contended, 1 to 4 threads, 5 reps, C50 W0
    # unpinned (a module of before think times and pinning: its points
    # name neither, and results.py reads them as 0 and unpinned).
    manifest["parameters"] = {"workloads": "contended", "threads": "1,2,3,4",
                              "reps": "5", "cs_loops": "50", "think_loops": "0",
                              "pin": "0", "vcpus": "2"}
    (run / "manifest.json").write_text(json.dumps({**manifest, "outcome": "not-run"}))
    (run / "kernel.config").write_text("CONFIG_SMP=y\n")
    (run / "qemu.args").write_text("".join(f"{a}\n" for a in QEMU_ARGS))
    return run


def test_an_imported_run_is_an_ordinary_set_that_names_its_host(tmp_path):
    out, outcome = import_run.import_run(bundle_run(tmp_path), tmp_path / "results")
    assert outcome == "ok" and is_complete(out)
    assert check_result_set(out) == []
    # What the module swept is the set's own record, never a default.
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["parameters"]["pin"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert check_result_set(out) == ["manifest records no pin"]
    manifest["parameters"]["pin"] = "0"
    (out / "manifest.json").write_text(json.dumps(manifest))
    # make bench's results.json (analysis/results.py), less the host's load.
    local = tmp_path / "local"
    local.mkdir()
    shutil.copy(FIXTURES / "results-ok.raw", local / "results.raw")
    assert subprocess.run([sys.executable, str(LAB_ROOT / "analysis" / "results.py"),
                           str(local / "results.raw"), str(local / "results.json"), "2"],
                          capture_output=True).returncode == 0
    assert (json.loads((out / "results.json").read_text()).keys()
            == json.loads((local / "results.json").read_text()).keys())
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["host"]["cpu_model"] == "Big CPU 9000" and manifest["host"]["cpus"] == 64
    assert manifest["built_on"]["hostname"] != "bighost"
    assert (manifest["accel"], manifest["vcpus"]) == ("tcg", 2)
    assert manifest["imported"]["from"].endswith("/run")
    assert out.parent.name == manifest["variant"] and out.name.endswith("-bighost-import")


def test_results_framed_on_the_console_import_the_same(tmp_path):
    serial, _ = import_run.import_run(bundle_run(tmp_path / "a"), tmp_path / "results")
    framed, outcome = import_run.import_run(bundle_run(tmp_path / "b", console_only=True),
                                            tmp_path / "results")
    assert outcome == "ok"
    assert (framed / "results.raw").read_text() == (serial / "results.raw").read_text()
    assert (json.loads((framed / "results.json").read_text())
            == json.loads((serial / "results.json").read_text()))


def test_a_crashed_run_is_imported_as_crashed(tmp_path):
    run = bundle_run(tmp_path, console_extra="BUG: KASAN: use-after-free in mutex_unlock\n")
    assert import_run.main([str(run), "--results-dir", str(tmp_path / "results")]) == 1
    (out,) = (tmp_path / "results").glob("*/*-import")
    assert json.loads((out / "manifest.json").read_text())["outcome"] == "crashed"


def test_what_is_not_a_run_is_refused(tmp_path, capsys):
    assert import_run.main([str(tmp_path), "--results-dir", str(tmp_path / "r")]) == 2
    assert "not a bundle's run: no console.log" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def on_machine(paths, cpu_model):
    for path in paths:
        manifest = json.loads((path / "manifest.json").read_text())
        manifest["host"] = {"cpu_model": cpu_model, "cpus": 2}
        (path / "manifest.json").write_text(json.dumps(manifest))
    return ",".join(map(str, paths))


def test_regress_refuses_two_machines_unless_told(tmp_path):
    base = on_machine(write_boots(tmp_path, "a", {1: 1e6}), "here")
    new = on_machine(write_boots(tmp_path, "b", {1: 1e6}, first=4), "there")
    with pytest.raises(regress.InputError, match="different machines"):
        regress.regress(base, new, tmp_path)
    report = regress.regress(base, new, tmp_path, mix_machines=True)
    assert report["warnings"][0].startswith("MIXED MACHINES (base on TCG on here x2")


def test_compare_refuses_two_machines_unless_told(tmp_path):
    here = write_boots(tmp_path, "owner-field", {1: 1e6}, boots=2)
    there = write_boots(tmp_path, "tri-state", {1: 1e6}, boots=2, first=2)
    on_machine(here, "here"), on_machine(there, "there")
    with pytest.raises(compare.MixedSettings, match="different machines"):
        compare.load_sets(here + there)
    variants = compare.load_sets(here + there, mix_machines=True)
    assert compare.machine_line(variants).startswith(
        "MIXED MACHINES: owner-field on TCG on here x2; tri-state on TCG on there x2")


def test_import_needs_no_lab_tree_beyond_this_module(tmp_path):
    """The run folder alone is enough: moved elsewhere, it imports the same."""
    run = bundle_run(tmp_path)
    moved = shutil.move(str(run), str(tmp_path / "elsewhere"))
    out, outcome = import_run.import_run(moved, tmp_path / "results")
    assert outcome == "ok"
