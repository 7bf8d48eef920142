# SPDX-License-Identifier: GPL-2.0
"""The cross-check's parser and comparison, on a cross-check boot's channel."""
import crosscheck


def test_sections_are_split_on_their_headers():
    text = ("noise before\n# mutexlab-section: bench\nKTAP version 1\n"
            "# mutexlab-section: locktorture 2\nline\n")
    sections = crosscheck.split_sections(text)
    assert list(sections) == ["bench", "locktorture 2"]
    assert sections["bench"] == "KTAP version 1\n"


def test_perf_rows_are_read_with_their_units():
    text = (" contended   total wait     max wait     avg wait          pid   comm\n\n"
            "      1200     12.50 ms     90.00 us     10.42 us           60   mutexlab/0\n"
            "         3       900 ns       400 ns       300 ns           12   mutexlab/hog1\n"
            "         2        1.5 s        1.0 s      750 ms          7   kworker/0:1\n")
    rows = crosscheck.parse_perf_contention(text)
    assert [r["contended"] for r in rows] == [1200, 3, 2]
    assert rows[0]["wait_total_ns"] == 12.5e6 and rows[1]["wait_max_ns"] == 400
    assert rows[2]["wait_total_ns"] == 1.5e9 and rows[0]["pid"] == 60
    assert [crosscheck.is_ours(r["comm"]) for r in rows] == [True, False, False]


def test_real_crosscheck_boot_compares(fixture_text):
    report = crosscheck.crosscheck(fixture_text("crosscheck-owner-field.raw"), 2)
    assert report["problems"] == []
    assert report["perf"]["contended"] > 0
    assert abs(report["contended_ratio"] - 1) <= crosscheck.COUNT_TOLERANCE
    assert report["ours"]["slowpath"] > 0 and report["ours"]["lock_time_ns"] > 0
    assert [t["threads"] for t in report["locktorture"]] == [2, 4]
    for t in report["locktorture"]:
        assert t["locktorture_total"] > 0 and t["ours_locktorture_cs"] > 0
    assert "| contentions" in crosscheck.format_markdown(report)


def test_counts_that_disagree_are_a_problem(fixture_text):
    """The mutant: perf's report of one of our threads dropped, as a lost
    buffer or a miscount on our side would look."""
    text = fixture_text("crosscheck-owner-field.raw")
    row = next(line for line in text.splitlines() if line.endswith("mutexlab/0"))
    report = crosscheck.crosscheck(text.replace(row + "\n", ""), 2)
    assert any("disagree beyond 10%" in p for p in report["problems"])


def test_missing_sections_are_problems(fixture_text):
    text = fixture_text("crosscheck-owner-field.raw")
    cut = text.index("# mutexlab-section: perf-lock-contention")
    report = crosscheck.crosscheck(text[:cut], 2)
    assert "no 'perf-lock-contention' section" in report["problems"]
    assert "no locktorture section" in report["problems"]
    # A locktorture run that never printed its totals.
    broken = text.replace("Writes:", "Wrotes:")
    assert any("no 'Writes:' statistics" in p
               for p in crosscheck.crosscheck(broken, 2)["problems"])
