# SPDX-License-Identifier: GPL-2.0
"""make import takes a run from another host as untrusted input: each
hostile run below is exit 2 naming the file, with nothing written outside
RESULTS_DIR and no half-made set left behind."""
import json
import os
import re

import pytest

import import_run
from conftest import FIXTURES
from test_import import bundle_run


def edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def first_point(run, change):
    """Rewrite the first point record of the run's results.raw."""
    raw = run / "results.raw"
    lines = raw.read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if '"type":"point"' in line)
    lines[i] = change(lines[i])
    raw.write_text("\n".join(lines) + "\n")


def relink(path, target):
    path.unlink()
    path.symlink_to(target)


# A LAVA log line of nested aliases: 9^6 lists from a few hundred bytes.
LAUGHS = ("{lvl: target, msg: &a [x,x,x,x,x,x,x,x,x], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a], "
          "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b], d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c], "
          "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d], f: [*e,*e,*e,*e,*e,*e,*e,*e,*e]}")

HOSTILE = {
    "a variant that is a path": (
        lambda run: edit_json(run / "manifest.json", lambda m: m.update(variant="../../x")),
        "manifest.json", "variant"),
    "a hostname that is a path": (
        lambda run: (run / "host.txt").write_text("hostname\t../../y\ncpus\t2\n"),
        "host.txt", "hostname '../../y' is not a name"),
    # The were /dev/zero (the old import copied it until the disk
    # was full: 64 GB here in about a minute) and the password file. Links
    # to small regular files prove the same refusal without that risk,
    # should the guard ever break.
    "results.raw a link elsewhere": (
        lambda run: (relink(run / "results.raw", run.parent / "elsewhere.raw"),
                     (run.parent / "elsewhere.raw").write_text(
                         (FIXTURES / "results-ok.raw").read_text())),
        "results.raw", "is not a regular file"),
    "console.log a link to a secret": (
        lambda run: ((run.parent / "secret").write_text("root:x:0:0\n"),
                     relink(run / "console.log", run.parent / "secret")),
        "console.log", "is not a regular file"),
    "qemu.log a pipe": (
        lambda run: ((run / "qemu.log").unlink(), os.mkfifo(run / "qemu.log")),
        "qemu.log", "is not a regular file"),
    "a results.raw of 65 MB": (
        lambda run: os.truncate(run / "results.raw", 65 << 20),
        "results.raw", "is larger than 64 MB"),
    "a manifest naming another variant": (
        lambda run: edit_json(run / "manifest.json", lambda m: m.update(variant="tri-state")),
        "manifest.json", "its series is not tri-state's"),
    "a variant this lab does not have": (
        lambda run: edit_json(run / "manifest.json", lambda m: m.update(variant="nosuch")),
        "manifest.json", "variant 'nosuch' is not one of this lab's"),
    "a manifest with NaN": (
        lambda run: (run / "manifest.json").write_text(
            (run / "manifest.json").read_text().replace('"outcome"', '"x": NaN, "outcome"')),
        "manifest.json", "NaN is not a number JSON has"),
    "elapsed_ns 0": (
        lambda run: first_point(run, lambda line: re.sub(r'"elapsed_ns":\d+', '"elapsed_ns":0', line)),
        "results.raw", "ZeroDivisionError"),
    "elapsed_ns NaN": (
        lambda run: first_point(run, lambda line: re.sub(r'"elapsed_ns":\d+', '"elapsed_ns":NaN', line)),
        "results.raw", "NaN is not a number JSON has"),
    "a 400-digit elapsed_ns": (
        lambda run: first_point(run, lambda line: re.sub(r'"elapsed_ns":\d+',
                                                         '"elapsed_ns":' + "9" * 400, line)),
        "results.raw", "bad record (OverflowError"),
    "a negative count": (
        lambda run: first_point(run, lambda line: re.sub(r'"acquisitions":\[\d+\]',
                                                         '"acquisitions":[-5]', line)),
        "results.raw", "is less than or equal to the minimum of 0"),
    "a record nested 100,000 deep": (
        lambda run: (run / "results.raw").write_text(
            (run / "results.raw").read_text() + "# {\"type\":\"point\",\"x\":"
            + "[" * 100000 + "]" * 100000 + "}\n"),
        "results.raw", "nested too deep"),
}


# A broken guard would block on the pipe: bounded, not CI's 30 minutes.
@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_run_is_refused_naming_the_file(tmp_path, capsys, case):
    spoil, name, message = HOSTILE[case]
    run = bundle_run(tmp_path)
    spoil(run)
    results = tmp_path / "results"
    assert import_run.main([str(run), "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err
    assert message in err and name in err, err
    assert "Traceback" not in err
    # No set, whole or half-made; nothing outside RESULTS_DIR.
    assert not list(results.glob("*/*")) and not (tmp_path / "x").exists()
    assert {p.name for p in tmp_path.iterdir()} <= {"results", "run", "elsewhere.raw",
                                                     "secret"}


def test_a_lava_log_of_yaml_aliases_is_refused_at_once(tmp_path, capsys):
    """It raised MemoryError under a 1.5 GB limit, with DRY_RUN too."""
    log = tmp_path / "lava.log"
    log.write_text((FIXTURES / "lava" / "lava-run.log").read_text() + LAUGHS + "\n")
    for dry in ([], ["--dry-run"]):
        assert import_run.main([str(log), "--bundle", str(FIXTURES / "lava" / "bundle"),
                                "--results-dir", str(tmp_path / "results"), *dry]) == 2
        err = capsys.readouterr().err
        assert "YAML alias" in err and str(log) in err, err
    assert not (tmp_path / "results").exists()


def test_the_intact_run_still_imports(tmp_path):
    run = bundle_run(tmp_path)
    assert import_run.main([str(run), "--results-dir", str(tmp_path / "results")]) == 0
    (out,) = (tmp_path / "results").glob("owner-field/*-import")
    assert json.loads((out / "manifest.json").read_text())["schema_version"] == 1
