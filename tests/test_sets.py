# SPDX-License-Identifier: GPL-2.0
"""analysis/sets.py's one way of finding the newest set of each kind."""
import json

from sets import newest_sets


def bench_set(root, variant, name, outcome="ok"):
    path = root / variant / name
    path.mkdir(parents=True)
    (path / "results.json").write_text(json.dumps({"points": []}))
    (path / "manifest.json").write_text(json.dumps({"variant": variant, "outcome": outcome}))
    return path


def judged(path, verdict=True):
    path.mkdir(parents=True)
    if verdict:
        (path / "verdict.json").write_text("{}")
    return path


def test_bench_sets_newest_last_and_never_a_failed_one(tmp_path):
    old = bench_set(tmp_path, "a", "20261201T000000Z-vm")
    same_second = bench_set(tmp_path, "a", "20261202T000000Z-vm-2")
    first = bench_set(tmp_path, "a", "20261202T000000Z-vm")
    bench_set(tmp_path, "a", "20261203T000000Z-vm", outcome="crashed")
    judged(tmp_path / "a" / "check-20261209T000000Z-vm")
    assert newest_sets(tmp_path, "bench", "a", 3) == [old, first, same_second]
    assert newest_sets(tmp_path, "bench", "a") == [same_second]
    crashed = newest_sets(tmp_path, "bench", "a", accept=lambda p: True)
    assert [p.name for p in crashed] == ["20261203T000000Z-vm"]
    assert newest_sets(tmp_path, "bench", "b") == []


def test_check_sets_need_their_verdict(tmp_path):
    done = judged(tmp_path / "a" / "check-20261201T000000Z-vm")
    judged(tmp_path / "a" / "check-20261202T000000Z-vm", verdict=False)
    judged(tmp_path / "a" / "debug-check-20261203T000000Z-vm")
    bench_set(tmp_path, "a", "20261204T000000Z-vm")
    assert newest_sets(tmp_path, "check", "a") == [done]


def test_verify_sets_have_no_variant(tmp_path):
    older = judged(tmp_path / "verify" / "20261201T000000Z-vm")
    newer = judged(tmp_path / "verify" / "20261202T000000Z-vm")
    assert newest_sets(tmp_path, "verify", count=2) == [older, newer]


def test_a_set_file_is_readable_as_the_umask_says(tmp_path):
    """results.json and manifest.json were written 0600 (mkstemp's mode)
    whatever the umask: another user read 'not a complete result set'."""
    import stat
    import subprocess
    from conftest import LAB_ROOT
    for umask, mode in (("022", 0o644), ("077", 0o600), ("002", 0o664)):
        path = tmp_path / f"results-{umask}.json"
        subprocess.run(["/usr/bin/python3", "-c",
                        "import os, sys; os.umask(int(sys.argv[2], 8)); "
                        "sys.path.insert(0, sys.argv[3]); "
                        "from sets import write_atomic; write_atomic(sys.argv[1], '{}')",
                        str(path), umask, str(LAB_ROOT / "analysis")],
                       check=True, timeout=30)
        assert stat.S_IMODE(path.stat().st_mode) == mode, umask
