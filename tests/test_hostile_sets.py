# SPDX-License-Identifier: GPL-2.0
"""Sets of the wrong shape or with impossible numbers, given to make
regress and make compare: each is bad input (exit 2) naming the file and
the place in it, never a traceback, never 'slower', never a silent drop.
Every read checks results.json and manifest.json against their JSON
Schema (analysis/schemas/)."""
import json
import os
import subprocess
import sys

import pytest

import compare
import regress
import sets
from conftest import LAB_ROOT
from test_regress import joined, write_boots


def edit_points(path, change):
    data = json.loads((path / "results.json").read_text())
    change(data["points"])
    (path / "results.json").write_text(json.dumps(data))


def raw(path, text, name="results.json"):
    (path / name).write_text(text)


HOSTILE = {
    "a point without per_sec": (lambda p: edit_points(p, lambda pts: pts[0].pop("per_sec")),
                                "points/0: 'per_sec' is a required property"),
    "a point that is a string": (lambda p: edit_points(p, lambda pts: pts.__setitem__(0, "x")),
                                 "points/0: 'x' is not of type 'object'"),
    "a manifest that is a list": (lambda p: raw(p, "[1, 2]", "manifest.json"),
                                  "manifest.json: the top: [1, 2] is not of type 'object'"),
    "nesting 100k deep": (lambda p: raw(p, "[" * 100000 + "]" * 100000),
                          "is nested too deep"),
    "a NaN repetition": (lambda p: raw(p, (p / "results.json").read_text().replace(
        '"per_sec": 2', '"per_sec": NaN', 1)), "NaN is not a number JSON has"),
    "Infinity": (lambda p: raw(p, (p / "results.json").read_text().replace(
        '"per_sec": 2', '"per_sec": Infinity', 1)), "Infinity is not a number JSON has"),
    "a negative rate": (lambda p: edit_points(p, lambda pts: pts[1].update(per_sec=-5)),
                        "points/1/per_sec: -5 is less than or equal to the minimum of 0"),
    "elapsed_ns 0": (lambda p: edit_points(p, lambda pts: pts[0].update(elapsed_ns=0)),
                     "points/0/elapsed_ns: 0 is less than or equal to the minimum of 0"),
    "a 400-digit count": (lambda p: edit_points(p, lambda pts: pts[0].update(total=10 ** 400)),
                          "points/0/total: 1000"),
    "a histogram pair of three": (lambda p: edit_points(p, lambda pts: pts[0].update(
        latency_hdr_ns={"sub_bits": 4, "counts": [[80, 1, 2]]})),
        "points/0/latency_hdr_ns/counts/0: [80, 1, 2] is not a hdr_pair"),
    # The was /dev/zero: a link to a good set's file proves the
    # refusal without filling the memory should the guard ever break.
    "results.json a link": (lambda p: (os.rename(p / "results.json", p / "real.json"),
                                       (p / "results.json").symlink_to(p / "real.json")),
                            "results.json is not a regular file"),
    "a variant that is a path": (lambda p: raw(p, json.dumps(
        {"variant": "../x", "outcome": "ok"}), "manifest.json"), "manifest.json: variant"),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_set_is_bad_input_named(tmp_path, capsys, case):
    spoil, message = HOSTILE[case]
    base = write_boots(tmp_path, "a", {1: 1e6, 2: 2e6})
    new = write_boots(tmp_path, "b", {1: 1e6, 2: 2e6})
    spoil(new[1])
    assert regress.main(["regress", joined(base), joined(new)]) == 2
    out, err = capsys.readouterr()
    assert message in err and str(new[1]) in err, err
    assert "Traceback" not in err and out.splitlines()[-1] == "bad input"
    assert compare.main(["compare", str(tmp_path / "out"), *map(str, base + new)]) == 2
    err = capsys.readouterr().err
    # compare names a set that is not one at all before it reads any.
    assert message in err or f"not result sets: {new[1]}" in err, err


def test_only_sets_of_the_variant_are_picked_by_its_name(tmp_path):
    """owner-field:2 picked a set whose manifest says tri-state, and a link
    to a set elsewhere, because they lay under owner-field/."""
    mine = write_boots(tmp_path, "owner-field", {1: 1e6}, boots=2)
    other = write_boots(tmp_path / "elsewhere", "tri-state", {1: 1e6}, boots=1)[0]
    (tmp_path / "owner-field" / "20261230T000000Z-vm").symlink_to(other)
    claims = tmp_path / "owner-field" / "20261229T000000Z-vm"
    claims.mkdir()
    for name in ("results.json", "manifest.json"):
        (claims / name).write_text((other / name).read_text())
    assert sets.newest_sets(tmp_path, "bench", "owner-field", 2) == mine
    with pytest.raises(regress.InputError, match="only 2 complete set"):
        regress.resolve("owner-field:3", tmp_path)


def test_old_sets_without_a_schema_version_still_load():
    """The committed reference was written before the version was."""
    ref = sorted((regress.LAB_ROOT / "results" / "reference").glob("*/sets/*/*"))
    results, manifest = sets.load_bench_set(ref[0])
    assert "schema_version" not in results and results["points"]


def test_the_lab_writes_the_schema_version(tmp_path, fixture_text):
    import subprocess
    raw_path = tmp_path / "results.raw"
    raw_path.write_text(fixture_text("results-ok.raw"))
    subprocess.run(["/usr/bin/python3", str(regress.LAB_ROOT / "analysis" / "results.py"),
                    str(raw_path), str(tmp_path / "results.json")], check=True, timeout=60)
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["schema_version"] == sets.SCHEMA_VERSION
    sets.check_schema(written, "results", tmp_path / "results.json")
    assert os.path.getsize(tmp_path / "results.json") > 0


def test_make_compare_of_a_hostile_set_exits_2_and_leaves_no_folder(tmp_path):
    """Through the lab's own command: compare.py's status reaches the
    caller, and the report folder it never wrote is not left behind."""
    base = write_boots(tmp_path, "a", {1: 1e6, 2: 2e6})
    new = write_boots(tmp_path, "b", {1: 1e6, 2: 2e6})
    edit_points(new[1], lambda pts: pts[0].pop("per_sec"))
    results = tmp_path / "results"
    env = dict(os.environ, RESULTS_DIR=str(results), SETS=" ".join(map(str, base + new)))
    r = subprocess.run([sys.executable, "lab", "compare"], cwd=LAB_ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "'per_sec' is a required property" in r.stderr and r.stdout == ""
    assert list((results / "compare").iterdir()) == []
