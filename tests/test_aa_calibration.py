# SPDX-License-Identifier: GPL-2.0
"""A/A calibration from boots that already ran."""
import json
import math

import aa_calibration
from test_regress import BOOT_NOISE, write_set


def test_splits_are_disjoint_and_unordered():
    found = list(aa_calibration.splits(list(range(5)), 2))
    # C(5,2) * C(3,2) ordered pairs, each counted once.
    assert len(found) == math.comb(5, 2) * math.comb(3, 2) // 2 == 15
    for base, new in found:
        assert not set(base) & set(new) and base == sorted(base)


def test_boots_of_one_design_split_into_comparisons(tmp_path, capsys):
    sets = [write_set(tmp_path, "a", f"2026120{i}T000000Z-vm", {1: 1e6, 2: 2e6},
                      boot=BOOT_NOISE[i]) for i in range(6)]
    # A second design, grouped apart, with one boot 20% slow: two boots a
    # side cannot tell that from noise.
    sets += [write_set(tmp_path, "b", f"2026120{i}T000000Z-vm", {1: 1e6},
                       boot=0.8 if i == 0 else 1.0) for i in range(4)]
    comparisons = aa_calibration.calibrate(sets, per_side=3)
    assert len([c for c in comparisons if c["variant"] == "a"]) == 10
    assert not any(c["flagged"] for c in comparisons if c["variant"] == "a")
    assert aa_calibration.main(["aa", "--per-side", "2", "--json",
                                str(tmp_path / "aa.json")] + list(map(str, sets))) == 0
    out = capsys.readouterr().out
    assert out.startswith("0 of 48 A/A comparisons flagged")  # 45 + 3
    # 2 boots a side: no t test, so no MDE and nothing told.
    assert "MDE" not in out and "0 not slower than 5%" in out
    assert len(json.loads((tmp_path / "aa.json").read_text())) == 48
    assert "MDE throughput, 2 thread(s)" in aa_calibration.summary(comparisons)
    assert aa_calibration.main(["aa", str(sets[0])]) == 2


def test_too_many_splits_are_sampled_distinct_and_disjoint():
    boots = list(range(12))
    # C(12,4) * C(8,4) / 2 = 17325 splits: 40 drawn, none twice.
    drawn = aa_calibration.sampled_splits(boots, 4, 40)
    assert len(drawn) == 40
    assert len({frozenset((tuple(b), tuple(n))) for b, n in drawn}) == 40
    for base, new in drawn:
        assert len(base) == len(new) == 4 and not set(base) & set(new)
        assert base == sorted(base) and new == sorted(new)
    # The same boots give the same draw; few enough splits are all taken.
    assert drawn == aa_calibration.sampled_splits(boots, 4, 40)
    assert len(aa_calibration.sampled_splits(list(range(5)), 2, 40)) == 15
    assert aa_calibration.sampled_splits(list(range(5)), 3, 40) == []
