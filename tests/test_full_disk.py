# SPDX-License-Identifier: GPL-2.0
"""A job that cannot write (conftest's tiny_disk: a real 64 KiB tmpfs) says so, names the path, exits 2, and leaves
what was there; a bug of the lab has its own status, never one that
means something else."""
import os
import subprocess
import sys

import pytest

import compare
import import_run
import regress
from conftest import LAB_ROOT, run_make
from test_regress import joined, write_boots


def test_regress_on_a_full_disk_names_the_file_and_prints_no_verdict(tiny_disk, tmp_path,
                                                                       capsys):
    """It printed '0 regression(s)', then a traceback, exited 1 and left a
    0-byte JSON."""
    base = write_boots(tmp_path, "a", {1: 1e6, 2: 2e6})
    new = write_boots(tmp_path, "b", {1: 1e6, 2: 2e6})
    (tiny_disk / "filler").write_bytes(b"\0" * (60 * 1024))
    target = tiny_disk / "report.json"
    assert regress.main(["regress", "--json", str(target), joined(base), joined(new)]) == 2
    out, err = capsys.readouterr()
    assert f"cannot write {target}" in err and "disk full" in err
    assert "regression(s)" not in out and out.splitlines()[-1] == "bad input"
    assert not target.exists() and sorted(p.name for p in tiny_disk.iterdir()) == ["filler"]


def test_compare_on_a_full_disk_names_the_folder_and_keeps_what_was_there(tiny_disk,
                                                                          tmp_path, capsys):
    """It ended in a traceback."""
    sets = write_boots(tmp_path, "owner-field", {1: 1e6, 2: 2e6}, boots=3)
    out = tiny_disk / "compare"
    out.mkdir()
    (out / "rounds.txt").write_text("1 owner-field x\n")
    assert compare.main(["compare", str(out), *map(str, sets)]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and str(out) in err and "disk full" in err
    assert "Traceback" not in err
    assert (out / "rounds.txt").read_text() == "1 owner-field x\n"


@pytest.mark.parametrize("tool", ["compare", "import"])
def test_a_bug_is_its_own_status(tmp_path, capsys, monkeypatch, tool):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    if tool == "compare":
        sets = write_boots(tmp_path, "owner-field", {1: 1e6}, boots=2)
        monkeypatch.setattr(compare, "compare", broken)
        status = compare.main(["compare", str(tmp_path / "out"), *map(str, sets)])
    else:
        from test_import import bundle_run
        run = bundle_run(tmp_path)
        monkeypatch.setattr(import_run, "import_run", broken)
        status = import_run.main([str(run), "--results-dir", str(tmp_path / "r")])
    assert status == 5
    assert "ZeroDivisionError: a bug" in capsys.readouterr().err


@pytest.mark.kernel
def test_make_bench_on_a_full_disk_names_the_path_and_no_set(tiny_disk, tmp_path):
    """It stopped at the initramfs with 'cpio: write error', exit 2 through
    make, and still printed the set's path."""
    earlier = tiny_disk / "owner-field" / "20000101T000000Z-earlier"
    earlier.mkdir(parents=True)
    (earlier / "manifest.json").write_text("{}\n")
    env = dict(os.environ, VARIANT="owner-field", QUICK="1", PLOTS="0", CROSSCHECK="0",
               RESULTS_DIR=str(tiny_disk))
    r = subprocess.run([sys.executable, "lab", "bench"], cwd=LAB_ROOT, env=env,
                       capture_output=True, text=True, timeout=1500)
    assert r.returncode == 2, r.stderr[-3000:]
    assert r.stdout == ""
    assert f"cannot write {tiny_disk}/owner-field/" in r.stderr and "disk full" in r.stderr
    assert [p.name for p in (tiny_disk / "owner-field").iterdir()] == [earlier.name]
    assert (earlier / "manifest.json").read_text() == "{}\n"
    r = run_make("bench", tmp_path, VARIANT="owner-field", QUICK=1, PLOTS=0,
                 RESULTS_DIR=tiny_disk)
    assert r.returncode != 0 and "disk full" in r.stderr and r.stdout == ""
