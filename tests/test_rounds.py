# SPDX-License-Identifier: GPL-2.0
"""Counterbalanced rounds (lab/lib.sh round_order) and the drift the
report measures (analysis/recommend.py)."""
import math
import statistics
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

import recommend
from conftest import LAB_ROOT

DESIGNS = ["owner-field", "tri-state", "count-only", "legacy"]
BOOT_MIN = 2.75  # a default-sweep boot, minutes


def schedule(rounds, designs=DESIGNS):
    """[(design, start minute)] as lab/interleave.sh runs them."""
    script = ('source "$1/lab/lib.sh"; shift; r=$1; shift; '
              'for i in $(seq 1 "$r"); do round_order "$i" "$@"; done')
    out = subprocess.run(["bash", "-c", script, "_", str(LAB_ROOT), str(rounds), *designs],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    order = [d for line in out.splitlines() for d in line.split()]
    return [(d, k * BOOT_MIN) for k, d in enumerate(order)]


def test_rounds_reverse_every_other_round():
    order = [d for d, _ in schedule(4, ["a", "b", "c"])]
    assert order == list("abc" "cba" "abc" "cba")


def linear_drift_bias(runs, per_10_min):
    """Each design's mean throughput factor under a linear drift, against
    the run's mean: the bias position in the round gives it."""
    factor = {d: statistics.fmean(1 + per_10_min * t / 10 for dd, t in runs if dd == d)
              for d in DESIGNS}
    mean = statistics.fmean(factor.values())
    return {d: f / mean - 1 for d, f in factor.items()}


def test_a_linear_drift_biases_no_design_in_counterbalanced_rounds():
    """The reference's drift (-1.37% per 10 minutes at 2-4 threads, from
    its own boots): in the same order every round the last design read
    about 1.2% below the first; counterbalanced, no design is biased
    over an even number of rounds, and little over an odd one."""
    fixed = [(d, (r * len(DESIGNS) + i) * BOOT_MIN)
             for r in range(4) for i, d in enumerate(DESIGNS)]
    bias = linear_drift_bias(fixed, -0.0137)
    assert bias["owner-field"] - bias["legacy"] == pytest.approx(0.0113, abs=0.001)
    for d, b in linear_drift_bias(schedule(4), -0.0137).items():
        assert b == pytest.approx(0, abs=1e-12), d
    assert max(abs(b) for b in linear_drift_bias(schedule(5), -0.0137).values()) < 0.002


def boots(runs, per_10_min, level=1e6):
    """{design: [(set name, estimates)]} of boots under a linear drift."""
    origin = datetime(2026, 12, 7, tzinfo=timezone.utc)
    out = {}
    for d, minute in runs:
        name = (origin + timedelta(minutes=minute)).strftime("%Y%m%dT%H%M%SZ") + "-vm"
        factor = math.exp(math.log1p(per_10_min) * minute / 10)
        out.setdefault(d, []).append((name, {
            ("uncontended", 1, "throughput"): level * factor,
            ("contended/C16/W0/unpinned", 2, "throughput"): level / 2 * factor ** 2}))
    return out


def test_the_report_measures_the_drift_and_the_order():
    found = recommend.drift(boots(schedule(4), -0.01))
    assert found["per_10_min"]["1 thread"] == pytest.approx(-0.01)
    assert found["per_10_min"]["2+ threads"] == pytest.approx((1 - 0.01) ** 2 - 1)
    # Counterbalanced: every design starts on average at the run's mean.
    assert all(abs(m) < 1e-9 for m in found["mean_start_min"].values())
    assert recommend.round_order(boots(schedule(4), 0)) == "counterbalanced"
    fixed = [(d, (r * 4 + i) * BOOT_MIN) for r in range(3) for i, d in enumerate(DESIGNS)]
    assert recommend.round_order(boots(fixed, 0)) == "fixed"
    moved = recommend.drift(boots(fixed, -0.01))["mean_start_min"]
    assert moved["legacy"] - moved["owner-field"] == pytest.approx(3 * BOOT_MIN)
    lines = recommend.drift_lines({**recommend.drift(boots(fixed, -0.01)), "order": "fixed"},
                                  "fixed")
    assert "-1.00% per 10 minutes at 1 thread" in lines[0]
    assert "the last design of a round carries the drift" in lines[0]


def test_a_design_of_one_boot_leaves_the_others_drift_measured():
    runs = schedule(4) + [("extra", 100.0)]
    found = recommend.drift(boots(runs, -0.01))
    assert found["per_10_min"]["1 thread"] == pytest.approx(-0.01)
    assert "extra" in found["mean_start_min"]
