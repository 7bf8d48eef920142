# SPDX-License-Identifier: GPL-2.0
"""Paired ratios over interleaved rounds (fixture: a real run, rescaled)."""
import json

import paired_ratio
import results


def write_set(path, text, scale):
    parsed = results.parse_raw(text)
    for p in parsed["points"]:
        p["per_sec"] *= scale
    path.mkdir()
    (path / "results.json").write_text(json.dumps(parsed))
    return str(path)


def test_ratio_per_round_and_thread_count(tmp_path, fixture_text):
    text = fixture_text("results-ok.raw")
    lines = []
    for rnd, scale in ((1, 0.9), (2, 0.8), (3, 1.0)):
        base = write_set(tmp_path / f"b{rnd}", text, 1.0)
        new = write_set(tmp_path / f"n{rnd}", text, scale)
        lines += [f"{rnd} base {base}", f"{rnd} new {new}"]
    (tmp_path / "rounds.txt").write_text("\n".join(lines) + "\n")
    ratios = paired_ratio.paired_ratios(
        paired_ratio.read_rounds(tmp_path / "rounds.txt"), "base", "new")
    assert sorted(ratios) == [("contended/C50/W0/unpinned", t)
                              for t in (1, 2, 3, 4)]
    for r in ratios.values():
        assert [round(x, 6) for x in r] == [0.9, 0.8, 1.0]


def test_a_round_missing_a_variant_is_skipped(tmp_path, fixture_text):
    base = write_set(tmp_path / "b", fixture_text("results-ok.raw"), 1.0)
    (tmp_path / "rounds.txt").write_text(f"1 base {base}\n")
    assert paired_ratio.paired_ratios(
        paired_ratio.read_rounds(tmp_path / "rounds.txt"), "base", "new") == {}


def test_p99_ratio_per_workload(tmp_path):
    def point(workload, p99):
        return {"workload": workload, "threads": 2, "per_sec": 1.0,
                "cs_loops": 16, "think_loops": 0,
                "latency_ns": {"p50": 1024, "p99": p99}}
    sets = {}
    for name, p99 in (("base", 4096), ("new", 8192)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(
            {"points": [point("contended", p99), point("sharded", 1024),
                        {"workload": "uncontended", "threads": 1,
                         "per_sec": 1.0, "latency_ns": {}}]}))
        sets[name] = str(tmp_path / name)
    ratios = paired_ratio.paired_ratios({"1": sets}, "base", "new", "latency_p99")
    assert ratios == {("contended/C16/W0/unpinned", 2): [2.0],
                      ("sharded/C16/W0/unpinned", 2): [1.0]}
