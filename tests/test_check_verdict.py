# SPDX-License-Identifier: GPL-2.0
"""The make check judge on a real owner-field check set (KASAN caught the
article pattern there) and on broken copies of it."""
import json
import re
import shutil

import pytest

from check_verdict import EXERCISES, PROPERTIES, judge_set, kasan_evidence, main, tally
from conftest import FIXTURES, LAB_ROOT

REAL_SET = FIXTURES / "check-owner-field"


@pytest.fixture
def check_set(tmp_path):
    dest = tmp_path / "set"
    shutil.copytree(REAL_SET, dest)
    return dest


def by_name(verdict, name):
    (result,) = [c for c in verdict["checks"] if c["check"] == name]
    return result


def test_real_set_verdict():
    verdict = judge_set(REAL_SET)
    assert verdict["verdict"] == {"mutual_exclusion": "ok", "free_safe": "no",
                                  "free_safety_control": "ok", "progress": "ok"}
    assert by_name(verdict, "free_article")["failed_property"] == "free_safe"
    assert verdict["outcome"] == "checks-failed"
    # lab/catalog.toml's order, which is the order make check runs them in.
    assert [c["check"] for c in verdict["checks"]] == [
        "exclusion", "free_control", "free_article", "free_amdgpu",
        "locktorture", "ww_mutex"]
    assert [c["check"] for c in verdict["checks"] if not c["ok"]] == ["free_article"]
    assert verdict["meta"]["sizeof_mutex"] == 32
    assert by_name(verdict, "locktorture")["details"]["writes"]["fail"] == 0


def test_kasan_evidence_names_the_access_and_the_freeing_site():
    kasan = by_name(judge_set(REAL_SET), "free_article")["evidence"]["kasan"]
    assert kasan["kind"] == "use-after-free"
    assert kasan["access"].startswith("Write of size 4 at addr")
    # Unwinder guesses ("? ") and KASAN's own frames are left out.
    assert [f.split("+")[0] for f in kasan["access_stack"][:4]] == [
        "do_raw_spin_lock", "__mutex_unlock_slowpath.constprop.0",
        "mutex_unlock", "article_worker_fn"]
    assert kasan["freed_stack"][0].startswith("article_worker_fn+")


def test_kasan_method_names_its_checks_and_their_control():
    method = judge_set(REAL_SET)["methods"]["kasan_release_window"]
    assert method["checks"] == ["free_article", "free_amdgpu"]
    assert method["control_ok"] and method["control"].startswith("free_control ")
    assert method["release_window_ns"] == [100000]


def test_no_kasan_report_gives_no_evidence():
    assert kasan_evidence("Booting...\nmutexlab: ok\n") is None


def test_main_writes_verdict_files_and_fails(check_set, capsys):
    assert main(["check_verdict.py", str(check_set)]) == 1
    ktap = (check_set / "verdict.ktap").read_text()
    assert ktap.startswith("KTAP version 1\n1..6\n")
    assert "not ok 3 - free_article # guest outcome: crashed" in ktap
    assert "# Totals: pass:5 fail:1" in ktap
    assert json.loads((check_set / "verdict.json").read_text())["verdict"]["free_safe"] == "no"
    assert "free_safe: no" in capsys.readouterr().out


def test_all_passing_set_passes(check_set):
    shutil.rmtree(check_set / "free_article")
    verdict = judge_set(check_set)
    assert verdict["outcome"] == "checks-passed"
    assert verdict["verdict"]["free_safe"] == "yes"
    assert main(["check_verdict.py", str(check_set)]) == 0


def rewrite(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


# Mutants of the inputs: each must turn its check to not ok.

def test_locktorture_failure_is_caught(check_set):
    raw = check_set / "locktorture" / "results.raw"
    rewrite(raw, "Fail: 0", "Fail: 1")
    verdict = judge_set(check_set)
    assert not by_name(verdict, "locktorture")["ok"]
    assert verdict["verdict"]["mutual_exclusion"] == "broken"


def test_locktorture_without_success_line_is_caught(check_set):
    rewrite(check_set / "locktorture" / "results.raw",
            "End of test: SUCCESS", "End of test: FAILURE")
    assert not by_name(judge_set(check_set), "locktorture")["ok"]


def test_ww_mutex_failure_is_caught(check_set):
    run = check_set / "ww_mutex" / "run.json"
    rewrite(run, '"guest_exit_status": "0"', '"guest_exit_status": "1"')
    rewrite(run, '"outcome": "ok"', '"outcome": "guest-error"')
    rewrite(check_set / "ww_mutex" / "results.raw",
            "All ww mutex selftests passed", "ww mutex selftest failed")
    result = by_name(judge_set(check_set), "ww_mutex")
    assert not result["ok"]
    assert "test-ww_mutex failed to load: a test failed" in result["problems"]


def test_exclusion_not_ok_is_caught(check_set):
    rewrite(check_set / "exclusion" / "results.raw",
            "ok 1 - exclusion/mutual_exclusion",
            "not ok 1 - exclusion/mutual_exclusion # two owners at once")
    verdict = judge_set(check_set)
    assert verdict["verdict"]["mutual_exclusion"] == "broken"


def test_truncated_check_output_is_caught(check_set):
    raw = check_set / "free_amdgpu" / "results.raw"
    raw.write_text(raw.read_text().split("# Totals")[0])
    result = by_name(judge_set(check_set), "free_amdgpu")
    assert not result["ok"]
    assert any("did not finish" in p for p in result["problems"])


def test_failed_control_makes_free_safety_unknown(check_set):
    shutil.copy(check_set / "free_article" / "run.json",
                check_set / "free_control" / "run.json")
    verdict = judge_set(check_set)
    assert verdict["verdict"]["free_safety_control"] == "broken"
    assert verdict["verdict"]["free_safe"] == "unknown: the control failed"


def test_check_that_never_ran_fails(check_set):
    (check_set / "free_amdgpu" / "run.json").unlink()
    result = by_name(judge_set(check_set), "free_amdgpu")
    assert not result["ok"] and result["problems"] == ["the check never ran"]


def test_tally_counts_failed_runs(check_set, tmp_path, capsys):
    passing = tmp_path / "passing"
    shutil.copytree(check_set, passing)
    shutil.rmtree(passing / "free_article")
    for d in (check_set, passing):
        main(["check_verdict.py", str(d)])
    counts = tally([check_set, passing, check_set])
    assert counts["free_article"]["runs"] == 2
    assert counts["free_article"]["failed"] == 2
    assert counts["exclusion"] == {"runs": 3, "failed": 0, "evidence": []}
    assert counts["free_article"]["evidence"][0].startswith(
        "BUG: KASAN: use-after-free in do_raw_spin_lock")


def test_free_safe_without_a_window_is_weak(check_set):
    shutil.rmtree(check_set / "free_article")
    rewrite(check_set / "free_amdgpu" / "results.raw",
            '"release_window_ns":100000', '"release_window_ns":0')
    verdict = judge_set(check_set)
    assert verdict["verdict"]["free_safe"].startswith("yes, but without a release window")


def test_an_interrupted_check_makes_the_set_interrupted_not_failed(check_set):
    """Ctrl-C or SIGTERM says nothing about the design."""
    shutil.rmtree(check_set / "free_article")
    run = check_set / "ww_mutex" / "run.json"
    data = json.loads(run.read_text())
    data.update(outcome="interrupted", interrupted_by="SIGTERM")
    run.write_text(json.dumps(data))
    assert judge_set(check_set)["outcome"] == "interrupted"


@pytest.mark.parametrize("outcome", ["qemu-error", "unpinned"])
def test_a_guest_the_lab_never_ran_is_no_verdict_on_the_design(check_set, outcome):
    """QEMU that refused to start, or vCPU threads VCPU_PIN=1 could not
    bind, say nothing of mutual exclusion."""
    hang(check_set, "exclusion", outcome, ["qemu-system-x86_64: bad option"])
    verdict = judge_set(check_set)
    assert by_name(verdict, "exclusion")["failed_property"] is None
    assert verdict["verdict"]["mutual_exclusion"] == "unknown: a check did not finish"


def hang(check_set, check, outcome, lines):
    run = check_set / check / "run.json"
    data = json.loads(run.read_text())
    data.update(outcome=outcome, failure_lines=lines)
    run.write_text(json.dumps(data))


def test_a_hung_guest_fails_progress_not_mutual_exclusion(check_set):
    """A lost wake-up used to read 'mutual exclusion broken'."""
    shutil.rmtree(check_set / "free_article")
    hang(check_set, "exclusion", "timeout", [])
    verdict = judge_set(check_set)
    assert by_name(verdict, "exclusion")["failed_property"] == "progress"
    assert verdict["verdict"]["progress"] == "broken"
    assert verdict["verdict"]["mutual_exclusion"] == "unknown: a check hung (see progress)"
    assert verdict["verdict"]["free_safe"] == "yes"


def test_a_hung_task_panic_fails_progress(check_set):
    hang(check_set, "free_amdgpu", "crashed",
         ["INFO: task mutexlab/f1:75 blocked for more than 30 seconds.",
          "Kernel panic - not syncing: hung_task: blocked tasks"])
    verdict = judge_set(check_set)
    assert by_name(verdict, "free_amdgpu")["failed_property"] == "progress"
    assert verdict["verdict"]["progress"] == "broken"
    # free_article's KASAN report still says no: a crash is attributed to
    # the property whose check it broke.
    assert verdict["verdict"]["free_safe"] == "no"
    assert verdict["verdict"]["mutual_exclusion"] == "ok"


# ---- watch: hardware watchpoints on the mutex (bench-module/watch.c) ----

WATCH_CAUGHT = FIXTURES / "check-watch-owner-field"   # owner-field, no window
WATCH_CLEAN = FIXTURES / "check-watch-tri-state"
# Multi-threaded TCG: locked read-modify-writes did not trap there.
WATCH_BLIND = FIXTURES / "check-watch-multithreaded-tcg"


def test_watch_catches_owner_field_with_the_accessing_code():
    verdict = judge_set(WATCH_CAUGHT)
    assert verdict["verdict"]["free_safe"] == "no"
    watch = by_name(verdict, "watch")
    assert watch["failed_property"] == "free_safe"
    hits = watch["evidence"]["accesses_after_release"]
    # Reads of the wait list, and wait_lock's release, after the releasing
    # cmpxchg: all inside the unlock's slow path.
    assert hits and all(any(f.startswith("__mutex_unlock_slowpath")
                            for f in h["stack"][:2]) for h in hits)
    assert hits[0]["stack"][1].startswith("mutex_unlock+")
    method = verdict["methods"]["hw_watchpoint"]
    assert method["control_ok"] and method["watched_bytes"] == 32


def test_watch_pass_is_a_yes_without_a_release_window():
    verdict = judge_set(WATCH_CLEAN)
    assert verdict["verdict"]["free_safe"] == "yes"
    method = verdict["methods"]["hw_watchpoint"]
    assert method["control_ok"] and all(method["traps_on"].values())
    assert by_name(verdict, "watch")["coverage"]["mutex_handoff"] > 0


def test_watch_blind_to_atomics_judges_nothing():
    verdict = judge_set(WATCH_BLIND)
    assert verdict["verdict"]["free_safe"].startswith(
        "unknown: a detector missed its control")
    assert by_name(verdict, "watch")["failed_property"] == "detection_control"
    method = verdict["methods"]["hw_watchpoint"]
    assert not method["control_ok"]
    assert method["traps_on"]["cmpxchg"] is False


def test_watch_pass_without_its_control_is_not_a_yes(tmp_path):
    """Mutant of the record: a clean run whose probe saw a kind of access
    not trap must not read as free-safe."""
    dest = tmp_path / "set"
    shutil.copytree(WATCH_CLEAN, dest)
    raw = dest / "watch" / "results.raw"
    raw.write_text(raw.read_text().replace('"xchg":true', '"xchg":false')
                   .replace("ok 4 - watch/every_access_kind_traps",
                            "not ok 4 - watch/every_access_kind_traps"))
    verdict = judge_set(dest)
    assert verdict["verdict"]["free_safe"] != "yes"
    assert not verdict["methods"]["hw_watchpoint"]["control_ok"]


def test_a_design_without_handoff_is_not_a_coverage_failure(tmp_path):
    """count-only and legacy never hand off: that is the design, not a
    check that missed what it is for."""
    dest = tmp_path / "set"
    shutil.copytree(WATCH_CLEAN, dest)
    raw = dest / "watch" / "results.raw"
    raw.write_text(re.sub(r'"mutex_handoff":\d+', '"mutex_handoff":0',
                          raw.read_text()))
    watch = by_name(judge_set(dest), "watch")
    assert watch["ok"] and watch["coverage"]["mutex_handoff"] == 0


def test_a_check_that_never_exercised_its_events_fails_coverage(tmp_path):
    dest = tmp_path / "set"
    shutil.copytree(WATCH_CLEAN, dest)
    raw = dest / "watch" / "results.raw"
    raw.write_text(re.sub(r'"mutex_sleep":\d+', '"mutex_sleep":0',
                          raw.read_text()))
    verdict = judge_set(dest)
    watch = by_name(verdict, "watch")
    assert not watch["ok"] and watch["failed_property"] == "coverage"
    assert "mutex_sleep" in watch["problems"][-1]
    assert verdict["verdict"]["free_safe"].startswith("unknown: a check never")


def test_watch_evidence_names_the_instruction(tmp_path, monkeypatch):
    """With the kernel that ran, each hit gains the accessing instruction;
    the disassembly itself is trap_site's (tested on a real vmlinux by the
    kernel tests), stubbed here."""
    seen = []

    def fake_access(vmlinux, trapped_at):
        seen.append((vmlinux, trapped_at))
        return "__mutex_unlock_slowpath.constprop.0+0x117: mov 0x10(%rbx),%rax"
    monkeypatch.setattr("trap_site.access_before", fake_access)
    dest = tmp_path / "set"
    shutil.copytree(WATCH_CAUGHT, dest)
    assert main(["check_verdict.py", "--vmlinux", "/k/vmlinux", str(dest)]) == 1
    assert seen and seen[0][0] == "/k/vmlinux"
    assert "# access: __mutex_unlock_slowpath.constprop.0+0x117: mov" in (
        dest / "verdict.ktap").read_text()
