# SPDX-License-Identifier: GPL-2.0
"""Parsing the results channel (fixture: a real run's results.raw)."""
import results

RAW = "results-ok.raw"


def test_real_run_parses_clean(fixture_text):
    parsed = results.parse_raw(fixture_text(RAW))
    assert parsed["problems"] == []
    assert parsed["ktap_version"] == "1"
    assert len(parsed["tests"]) == parsed["plan"] == len(parsed["points"])
    assert parsed["totals"]["fail"] == 0
    assert parsed["meta"]["sizeof_mutex"] > 0
    assert all(p["per_sec"] > 0 for p in parsed["points"])


def test_not_ok_is_a_problem(fixture_text):
    text = fixture_text(RAW).replace("\nok 2 - ", "\nnot ok 2 - ", 1)
    problems = results.parse_raw(text)["problems"]
    assert any(p.startswith("not ok 2 - ") for p in problems)


def test_truncated_run_keeps_points_and_says_so(fixture_text):
    lines = fixture_text(RAW).splitlines()
    cut = next(i for i, l in enumerate(lines) if l.startswith("ok 2 "))
    parsed = results.parse_raw("\n".join(lines[:cut]))
    assert len(parsed["points"]) == 2
    assert any("results arrived" in p for p in parsed["problems"])
    assert any("Totals" in p for p in parsed["problems"])


def test_garbage_and_bad_json_are_problems(fixture_text):
    text = fixture_text(RAW) + '{"type": "point", oops\nstray text\n'
    problems = results.parse_raw(text)["problems"]
    assert any("bad JSON" in p for p in problems)
    assert any("not KTAP or JSON" in p for p in problems)


def test_empty_channel_means_never_started():
    assert any("never started" in p for p in results.parse_raw("")["problems"])


def test_rates_and_summary():
    points = [results.with_rates({"workload": "contended", "threads": 2,
                                  "elapsed_ns": 10**9, "acquisitions": a})
              for a in ([1, 2], [3, 4], [10, 20])]
    assert [p["per_sec"] for p in points] == [3.0, 7.0, 30.0]
    (row,) = results.summarise(points)
    assert (row["reps"], row["median_per_sec"], row["min_per_sec"],
            row["max_per_sec"]) == (3, 7.0, 3.0, 30.0)


def test_guest_unlike_the_one_asked_for_is_a_problem(fixture_text):
    text = fixture_text(RAW)
    assert results.parse_raw(text, vcpus=2)["problems"] == []
    assert any("brought up 2 of 4 vCPUs" in p
               for p in results.parse_raw(text, vcpus=4)["problems"])
    jiffies = text.replace('"online_cpus":2,',
                           '"online_cpus":2,"clocksource":"refined-jiffies",')
    assert any("jiffies" in p for p in results.parse_raw(jiffies)["problems"])
