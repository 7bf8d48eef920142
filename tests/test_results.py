# SPDX-License-Identifier: GPL-2.0
"""Parsing the results channel (fixture: a real run's results.raw)."""
import subprocess

import pytest

import results
from conftest import LAB_ROOT

RAW = "results-ok.raw"


def test_real_run_parses_clean(fixture_text):
    parsed = results.parse_raw(fixture_text(RAW))
    assert parsed["problems"] == []
    assert parsed["ktap_version"] == "1"
    assert len(parsed["tests"]) == parsed["plan"] == len(parsed["points"])
    assert parsed["totals"]["fail"] == 0
    assert parsed["meta"]["sizeof_mutex"] > 0
    assert all(p["per_sec"] > 0 for p in parsed["points"])


def as_ktap_diagnostics(text):
    """The fixture (a module from before records went on "# " lines) as the
    module writes it now."""
    return "".join("# " + line if line.startswith("{") else line
                   for line in text.splitlines(keepends=True))


def test_records_on_diagnostic_lines_parse_as_bare_ones_did(fixture_text):
    old = fixture_text(RAW)
    new = as_ktap_diagnostics(old)
    assert new != old and "\n{" not in new
    assert results.parse_raw(new) == results.parse_raw(old)


def test_a_diagnostic_that_is_not_a_record_is_skipped(fixture_text):
    text = as_ktap_diagnostics(fixture_text(RAW)) + "# a note {not json}\n"
    assert results.parse_raw(text)["problems"] == []


def test_a_broken_record_on_a_diagnostic_line_is_a_problem(fixture_text):
    text = as_ktap_diagnostics(fixture_text(RAW)) + '# {"type": "point", oops\n'
    assert any("bad JSON" in p for p in results.parse_raw(text)["problems"])


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
                                  "cs_loops": 16, "think_loops": 0,
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


def test_fairness_in_summary():
    points = [results.with_rates({"workload": "contended", "threads": 2,
                                  "cs_loops": 16, "think_loops": 0,
                                  "elapsed_ns": 10**9, "acquisitions": a})
              for a in ([5, 5], [9, 3], [8, 2])]
    (row,) = results.summarise(points)
    # Jain's index per rep: 1.0, 144/180 = 0.8, 100/136; median 0.8.
    assert abs(row["jain_median"] - 0.8) < 1e-9
    assert row["max_min_ratio_worst"] == 4.0
    assert row["starved_reps"] == 2  # 9/2 > 3 and 8/2 > 2; not 5/2 > 5
    assert abs(row["cv"] - 0.0) > 0.01
    assert "Jain" in results.format_summary([row])


def test_fairness_edge_cases():
    from fairness import jain_index, max_min_ratio, starved
    assert jain_index([]) is None and jain_index([0, 0]) is None
    assert jain_index([10, 0]) == 0.5
    assert max_min_ratio([3, 0]) == float("inf")
    assert not starved([4, 2]) and starved([5, 2])


def test_cv_needs_two_reps():
    assert results.coefficient_of_variation([1.0]) is None
    assert abs(results.coefficient_of_variation([1.0, 3.0]) - 2 ** 0.5 / 2) < 1e-9


def test_scheduler_figures_per_acquisition():
    points = [results.with_rates({"workload": "contended", "threads": 2,
                                  "cs_loops": 16, "think_loops": 0,
                                  "elapsed_ns": 10**9, "acquisitions": [50, 50],
                                  "context_switches": s, "cpu_ns": c})
              for s, c in ((10, 10**6), (20, 2 * 10**6), (30, 3 * 10**6))]
    (row,) = results.summarise(points)
    assert row["switches_per_acq"] == 0.2
    assert row["cpu_ns_per_acq"] == 20000
    # Older result sets have no such fields: absent, not zero.
    for p in points:
        del p["context_switches"], p["cpu_ns"]
    (row,) = results.summarise(points)
    assert row["switches_per_acq"] is None and row["cpu_ns_per_acq"] is None
    assert " - " in results.format_summary([row])


def test_latency_percentiles_from_log2_buckets():
    from latency import histogram, percentiles
    # 1000 samples: 900 in [256, 512) ns, 90 in [4096, 8192), 10 in [2^20, 2^21).
    hist = [0] * 21
    hist[8], hist[12], hist[20] = 900, 90, 10
    p = percentiles(histogram({"h": hist}, "none", "h"))
    assert p == {"p50": 512, "p90": 512, "p99": 8192, "p99_9": 2 ** 21,
                 "max": 2 ** 21}
    assert percentiles(histogram({"h": [0, 0]}, "none", "h")) is None


def c_latency_bucket(ns, sub_bits=4, max_shift=35):
    """bench-module/latency.c's latency_bucket(), line by line."""
    shift = ns.bit_length() - 1 - sub_bits if ns >= 1 << sub_bits else 0
    if shift > max_shift:
        return (max_shift + 2) * (1 << sub_bits) - 1
    return shift * (1 << sub_bits) + (ns >> shift)


def test_hdr_buckets_invert_the_modules_index_within_3_percent():
    from latency import hdr_bucket, hdr_value
    values = list(range(0, 5000)) + [int(1.07 ** k) for k in range(100, 400)]
    for ns in values:
        if ns >= 2 ** 40:
            continue
        index = c_latency_bucket(ns)
        low, width = hdr_bucket(index, 4)
        assert low <= ns < low + width, ns
        assert abs(hdr_value(index, 4) - ns) <= max(ns / 32, 0.5)
    # Below 32 ns every ns is its own bucket; the buckets tile the line.
    assert [hdr_bucket(i, 4) for i in (0, 31, 32, 47, 48)] == [
        (0, 1), (31, 1), (32, 2), (62, 2), (64, 4)]
    assert c_latency_bucket(2 ** 45) == 591 == (35 + 2) * 16 - 1


def test_hdr_latency_is_net_of_the_clock_and_says_when_it_is_thin():
    from latency import latency_ns
    # 2000 samples at 1000 ns, 30 at 5000 ns; the clock read costs 40 ns.
    point = {"latency_sum_ns": 2000 * 1000 + 30 * 5000,
             "latency_hdr_ns": {"sub_bits": 4, "counts": [
                 [c_latency_bucket(1000), 2000], [c_latency_bucket(5000), 30]]}}
    meta = {"timer_hdr_ns": {"sub_bits": 4, "counts": [
        [c_latency_bucket(40), 1000], [c_latency_bucket(44), 24]]}}
    out = latency_ns(point, meta)
    assert out["timer_subtracted"] == pytest.approx(40, abs=1)
    assert out["timer_uncertainty"] == pytest.approx(0, abs=1)
    assert out["p50"] == pytest.approx(1000 - 40, rel=0.04)
    assert out["p99"] == pytest.approx(5000 - 40, rel=0.04)
    assert out["mean"] == pytest.approx(2150000 / 2030 - out["timer_subtracted"])
    # 2030 samples: 2 expected beyond p99.9, 20 beyond p99.
    assert out["thin"] == ["p99_9"] and out["samples"] == 2030
    # A set from before the module timed its clock: nothing subtracted.
    assert latency_ns(point)["timer_subtracted"] == 0
    assert latency_ns(point)["timer_uncertainty"] is None
    assert latency_ns({"latency_hdr_ns": {"sub_bits": 4, "counts": []}}) is None


def test_latency_in_points_and_summary():
    points = [results.with_rates({"workload": "contended", "threads": 2,
                                  "cs_loops": 16, "think_loops": 0,
                                  "elapsed_ns": 10**9, "acquisitions": [5, 5],
                                  "latency_log2_ns": [0, 0, 0, 4, k]})
              for k in (0, 1, 100)]
    assert points[0]["latency_ns"]["max"] == 16
    assert points[2]["latency_ns"]["p50"] == 32
    (row,) = results.summarise(points)
    assert row["latency_p50_ns"] == 16 and row["latency_p99_9_ns"] == 32
    assert row["latency_thin"] == ["p50", "p90", "p99", "p99_9"]
    # Without sampling: absent, not zero.
    (row,) = results.summarise([results.with_rates(
        {"workload": "contended", "threads": 1, "cs_loops": 16, "think_loops": 0, "elapsed_ns": 1,
         "acquisitions": [1]})])
    assert row["latency_p99_ns"] is None


def test_workloads_are_summarised_apart():
    from resultset import check_points, expected_series
    points = [results.with_rates({"workload": w, "threads": 1, "rep": r,
                                  "cs_loops": 16, "think_loops": 0,
                                  "elapsed_ns": 10**9, "acquisitions": [n]})
              for w, n in (("uncontended", 4 * 10**6), ("contended", 10**6))
              for r in (1, 2)]
    rows = {row["workload"]: row for row in results.summarise(points)}
    assert rows["uncontended"]["ns_per_acq"] == 250
    assert rows["contended"]["reps"] == 2
    assert rows["contended"]["series"] == "contended/C16/W0/unpinned"
    params = {"cs_loops": "16", "think_loops": "0", "pin": "0"}
    expected = expected_series(params, [1], ["uncontended", "contended"], 2)
    assert check_points(points, expected, 2) == []
    # A workload asked for and missing is a problem.
    assert any("uncontended 1 threads: 0 of 2" in p for p in
               check_points(points[2:], expected, 2))


def test_swept_settings_are_series_of_their_own():
    from resultset import check_points, expected_series
    params = {"cs_loops": "16,800", "think_loops": "0,160", "pin": "0,1"}
    expected = expected_series(params, [1, 2], ["contended", "sharded"], 2)
    # 2 x 2 x 2 settings at 2 thread counts; sharded runs the first only.
    assert len(expected) == 8 * 2 + 2
    assert ("contended/C800/W160/pinned", 2) in expected
    assert ("sharded/C16/W0/unpinned", 1) in expected
    points = [results.with_rates({"workload": "contended", "threads": t,
                                  "rep": 1, "cs_loops": c, "think_loops": w,
                                  "pinned": pinned, "elapsed_ns": 10**9,
                                  "acquisitions": [7] * t})
              for c in (16, 800) for w in (0, 160) for pinned in (False, True)
              for t in (1, 2)]
    rows = results.summarise(points)
    assert len(rows) == 16 and all(r["reps"] == 1 for r in rows)
    problems = check_points(points, expected, 1)
    assert problems == ["sharded/C16/W0/unpinned 1 threads: 0 of 1 repetitions present",
                        "sharded/C16/W0/unpinned 2 threads: 0 of 1 repetitions present"]
    # A point of another setting is not a repetition of this one.
    assert any("contended/C800/W0/pinned 2 threads: 0 of 1" in p for p in
               check_points([p for p in points if not (
                   p["cs_loops"] == 800 and p["think_loops"] == 0
                   and p["pinned"] and p["threads"] == 2)], expected, 1))


def test_oversubscribed_points_are_expected_at_twice_the_vcpus():
    from resultset import check_points, expected_series
    points = [results.with_rates({"workload": "oversubscribed", "threads": 4,
                                  "rep": r, "cs_loops": 16, "think_loops": 0,
                                  "elapsed_ns": 10**9,
                                  "acquisitions": [1, 2, 3, 4]})
              for r in (1, 2)]
    params = {"cs_loops": "16,800", "think_loops": "0", "pin": "0,1"}
    assert check_points(points, expected_series(
        params, [], ["oversubscribed"], 2), 2) == []
    assert any("oversubscribed/C16/W0/unpinned 6 threads: 0 of 2" in p
               for p in check_points(points, expected_series(
                   params, [], ["oversubscribed"], 3), 2))


def test_a_full_disk_leaves_no_half_written_results(tiny_disk, fixture_text):
    """A full disk used to leave a 0-byte results.json that later crashed
    make regress."""
    raw = tiny_disk / "results.raw"
    raw.write_text(fixture_text("results-ok.raw"))
    (tiny_disk / "filler").write_bytes(b"\0" * (64 * 1024 - raw.stat().st_size - 4096))
    status = subprocess.run(["/usr/bin/python3", str(LAB_ROOT / "analysis" / "results.py"),
                             str(raw), str(tiny_disk / "results.json"), "2"],
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 2, status.stderr
    assert "is the disk full?" in status.stderr
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["filler", "results.raw"]
