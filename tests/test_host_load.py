# SPDX-License-Identifier: GPL-2.0
"""What else used the host during each point: sampling, attaching, leaving
disturbed repetitions out."""
import json

import pytest

import host_load
import estimates
import regress
import results
from test_qemu_runner import fake_run
from test_regress import joined, write_boots

TICK = host_load.TICK_S


def write_proc(proc, busy_ticks, qemu_ticks, steal=0):
    """A /proc with the host's cpu line and QEMU's (pid 42) stat."""
    (proc / "42").mkdir(parents=True, exist_ok=True)
    user = busy_ticks - 7
    (proc / "stat").write_text(f"cpu  {user} 0 7 1000 0 0 0 {steal} 0 0\ncpu0 1\n")
    # utime and stime are fields 14 and 15; the name holds a space and ')'.
    (proc / "42" / "stat").write_text(
        "42 (qemu-system (x)) S 1 42 42 0 -1 4194560 0 0 0 0 "
        f"{qemu_ticks - 3} 3 0 0 20 0 5 0 100 1 1\n")


def test_the_others_are_the_host_minus_qemu(tmp_path):
    clock = iter([0.0, 2.0, 3.0]).__next__
    write_proc(tmp_path, busy_ticks=100, qemu_ticks=50)
    sampler = host_load.HostSampler(42, proc=tmp_path, clock=clock)
    # 2 s: QEMU used 2 CPUs (4 s), the host 4.5 s in all, and the host's
    # hypervisor stole 0.5 s: 0.25 + 0.25 CPUs others.
    write_proc(tmp_path, busy_ticks=100 + round(4.5 / TICK),
               qemu_ticks=50 + round(4 / TICK), steal=round(0.5 / TICK))
    first = sampler.interval()
    assert first["other_cpus"] == pytest.approx(0.5)
    assert first["steal_s"] == pytest.approx(0.5)
    # 1 s, QEMU alone on the host: nothing else.
    write_proc(tmp_path, busy_ticks=100 + round(6.5 / TICK),
               qemu_ticks=50 + round(6 / TICK), steal=round(0.5 / TICK))
    assert sampler.interval()["other_cpus"] == 0
    assert sampler.whole()["wall_s"] == 3.0
    (tmp_path / "42" / "stat").unlink()  # QEMU gone
    assert host_load.read_process_cpu(42, proc=tmp_path) is None


def test_a_process_burning_a_cpu_during_a_point_is_seen(tmp_path, monkeypatch):
    outcome = fake_run(tmp_path, monkeypatch, "hog-during-point-2")
    assert outcome["outcome"] == "ok"
    load = json.loads((tmp_path / "host-load.json").read_text())
    assert len(load["points"]) == 3
    others = [p["other_cpus"] for p in load["points"]]
    # The hog ran most of the second interval.
    assert others[1] > 0.5 and others[1] > max(others[0], others[2])


def test_disturbed_points_are_marked_counted_and_left_out(tmp_path):
    parsed = {"points": [{"rep": r} for r in (1, 2, 3)]}
    results.attach_host_load(parsed, {"boot": {"wall_s": 3}, "points": [
        {"other_cpus": 0.01}, {"other_cpus": 0.9}, None]})
    assert [results.is_disturbed(p) for p in parsed["points"]] == [False, True, False]
    assert "host" not in parsed["points"][2]
    short = {"points": [{"rep": 1}]}
    results.attach_host_load(short, {"points": []})
    assert "not attached" in short["host_load_note"]
    # A 20% slow repetition in each new boot, disturbed: left out, said.
    base = write_boots(tmp_path, "a", {2: 2e6})
    new = write_boots(tmp_path, "b", {2: 2e6}, first=1)
    for path in new:
        data = json.loads((path / "results.json").read_text())
        data["points"][0]["per_sec"] *= 0.5
        data["points"][0]["host"] = {"other_cpus": 1.0, "disturbed": True}
        (path / "results.json").write_text(json.dumps(data))
    report = regress.regress(joined(base), joined(new), tmp_path)
    # The same repetition is left out of both sides' boots, not of the
    # new side alone (which lost 4 where the base lost none).
    assert report["left_out_reps"] == [["contended/C50/W0/unpinned", 2, 1]]
    assert abs(report["rows"][0]["change"]) < 0.02
    assert any("1 repetition(s) left out of every boot of both sides" in w
               for w in report["warnings"])
    same = estimates.disturbed_positions([json.loads((p / "results.json").read_text())["points"]
                                        for p in new])
    for path in base:
        points = json.loads((path / "results.json").read_text())["points"]
        kept = [p for p in points if estimates.position(p) not in same]
        assert len(kept) == len(points) - 1


def test_under_icount_a_busy_host_disturbs_nothing():
    """The guest's clock counts its instructions: a busy host is recorded,
    and keeps every repetition."""
    intervals = [{"other_cpus": 0.01}, {"other_cpus": 1.9}]
    parsed = {"points": [{"rep": r} for r in (1, 2)]}
    results.attach_host_load(parsed, {"guest_clock": "instructions",
                                      "points": intervals})
    assert [results.is_disturbed(p) for p in parsed["points"]] == [False, False]
    assert parsed["points"][1]["host"]["other_cpus"] == 1.9
    parsed = {"points": [{"rep": r} for r in (1, 2)]}
    results.attach_host_load(parsed, {"guest_clock": "host", "points": intervals})
    assert [results.is_disturbed(p) for p in parsed["points"]] == [False, True]


def test_a_comparison_with_every_rep_disturbed_says_so(tmp_path):
    sets = write_boots(tmp_path, "a", {2: 2e6}, boots=2)
    for path in sets:
        data = json.loads((path / "results.json").read_text())
        for p in data["points"]:
            p["host"] = {"other_cpus": 1.0, "disturbed": True}
        (path / "results.json").write_text(json.dumps(data))
    with pytest.raises(regress.InputError, match="left out as disturbed"):
        regress.regress(joined(sets), joined(sets), tmp_path)
