# SPDX-License-Identifier: GPL-2.0
"""The common series' instruments, seen from inside real guests.

Lock events must stay silent for an uncontended thread and count sleeps and
wakeups under oversubscription; the release window must delay the unlock
slow path by what it is set to; a kernel without the instrumentation must
report it absent, not as zeros.
"""
import json
import os

import pytest

from conftest import result_sets, run_make

pytestmark = pytest.mark.kernel

QUICK = {"DURATION_MS": 300, "WARMUP_MS": 50, "REPS": 2}
WINDOW_NS = 100_000


def bench(tmp_path, **settings):
    r = run_make("bench", tmp_path, **settings)
    assert r.returncode == 0, r.stderr[-3000:]
    (result_set,) = result_sets(tmp_path / "results", settings["VARIANT"])
    return (json.loads((result_set / "results.json").read_text()),
            json.loads((result_set / "manifest.json").read_text()))


@pytest.fixture(scope="module")
def owner_field_events(tmp_path_factory):
    many = 2 * (os.cpu_count() or 1)
    # A long critical section: waiters outlast their spin and must sleep.
    return bench(tmp_path_factory.mktemp("events"), VARIANT="owner-field",
                 THREADS=f"1,{many}", CS_LOOPS=5000, **QUICK), many


def test_uncontended_thread_takes_no_slow_path(owner_field_events):
    (results, _), _ = owner_field_events
    single = [p for p in results["points"] if p["threads"] == 1]
    assert single
    for p in single:
        events = p["lock_events"]
        assert p["total"] > 0
        assert events["mutex_slowpath"] == 0, events
        assert events["mutex_unlock_slowpath"] == 0, events


def test_oversubscribed_long_sections_sleep_and_wake(owner_field_events):
    (results, _), many = owner_field_events
    crowded = [p["lock_events"] for p in results["points"]
               if p["threads"] == many]
    assert sum(e["mutex_sleep"] for e in crowded) > 0, crowded
    assert sum(e["mutex_wake"] for e in crowded) > 0, crowded
    assert sum(e["mutex_slowpath"] for e in crowded) > 0, crowded


def test_manifest_has_the_size_figures(owner_field_events):
    (_, manifest), _ = owner_field_events
    assert manifest["sizeof_mutex"] == 32
    assert manifest["mutex_text_bytes"] > 0
    assert manifest["lock_events_available"] is True
    assert manifest["release_window_ns"] == 0


def test_release_window_delays_the_unlock_slow_path(tmp_path):
    results, manifest = bench(tmp_path, VARIANT="owner-field", THREADS="1",
                              RELEASE_WINDOW_NS=WINDOW_NS, **QUICK)
    assert manifest["release_window_ns"] == WINDOW_NS
    probe = results["unlock_probe"]
    assert probe["waiter_slept"] == probe["rounds"] > 0
    # Each probed unlock woke a sleeper: slow path, release point, window.
    assert probe["lock_events"]["mutex_unlock_slowpath"] >= probe["rounds"]
    assert probe["lock_events"]["mutex_wake"] >= probe["rounds"]
    # udelay()'s lower bound, not a speed claim: the knob took effect.
    assert probe["unlock_ns_min"] >= WINDOW_NS


def test_stock_reports_instrumentation_absent(tmp_path):
    results, manifest = bench(tmp_path, VARIANT="stock", THREADS="2",
                              **QUICK)
    assert manifest["series"] == []
    assert all(p["total"] > 0 for p in results["points"])
    assert all(p["lock_events"] is None for p in results["points"])
    assert results["unlock_probe"]["lock_events"] is None
    assert manifest["lock_events_available"] is False
    assert manifest["release_window_ns"] is None
    assert manifest["sizeof_mutex"] == 32
