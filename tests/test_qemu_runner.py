# SPDX-License-Identifier: GPL-2.0
"""The QEMU runner: failure detection, watchdog, exit status, command line."""
import json
import os
from pathlib import Path

import pytest

import qemu_runner
from conftest import FIXTURES, LAB_ROOT

FAKE_QEMU = str(LAB_ROOT / "tests" / "fake_qemu.py")


def fake_run(tmp_path, monkeypatch, scenario, watchdog_s=60):
    monkeypatch.setenv("FAKE_QEMU_SCENARIO", scenario)
    cmd = qemu_runner.build_qemu_command(FAKE_QEMU, "tcg", 2, 512, "bzImage",
                                         "initrd", "", tmp_path)
    return qemu_runner.run_guest(cmd, tmp_path, watchdog_s)


def test_clean_guest_is_ok(tmp_path, monkeypatch):
    outcome = fake_run(tmp_path, monkeypatch, "ok")
    assert outcome["outcome"] == "ok"
    assert outcome["guest_exit_status"] == "0"
    assert outcome["failure_lines"] == []


def test_crash_is_caught_by_console_not_watchdog(tmp_path, monkeypatch):
    # The watchdog would say "timeout": "crashed" means the console did it.
    outcome = fake_run(tmp_path, monkeypatch, "bug-then-hang", watchdog_s=600)
    assert outcome["outcome"] == "crashed"
    assert any("kernel BUG at" in l for l in outcome["failure_lines"])


def test_silent_hang_hits_watchdog(tmp_path, monkeypatch):
    outcome = fake_run(tmp_path, monkeypatch, "hang", watchdog_s=1)
    assert outcome["outcome"] == "timeout"


def test_module_load_failure_is_reported(tmp_path, monkeypatch):
    outcome = fake_run(tmp_path, monkeypatch, "module-fails")
    assert outcome["outcome"] == "guest-error"
    assert outcome["guest_exit_status"] == "1"


def test_missing_exit_status_is_a_failure(tmp_path, monkeypatch):
    assert fake_run(tmp_path, monkeypatch, "no-status")["outcome"] == \
        "no-exit-status"


def test_results_before_a_crash_are_kept(tmp_path, monkeypatch):
    fake_run(tmp_path, monkeypatch, "bug-then-hang", watchdog_s=600)
    assert "KTAP version 1" in (tmp_path / "results.raw").read_text()


def test_failure_patterns_find_a_real_bug_report():
    lines = (FIXTURES / "console-bug.log").read_text().splitlines()
    assert [l for l in lines if "kernel BUG at" in l] == \
        [l for l in lines if "kernel BUG at" in l and qemu_runner.failure_line(l)]
    assert any(qemu_runner.failure_line(l) for l in lines)


@pytest.mark.parametrize("line", [
    # The report quoted in the lab brief (owner-field under KASAN).
    "BUG: KASAN: use-after-free in do_raw_spin_lock+0x1c/0x90",
    "INFO: task mutexlab/3:61 blocked for more than 30 seconds.",
    "WARNING: CPU: 1 PID: 60 at kernel/locking/mutex.c:582 foo+0x1/0x2",
])
def test_failure_patterns_cover_kasan_hung_task_and_warn(line):
    assert qemu_runner.failure_line(line)


def test_clean_boot_console_has_no_failure_lines():
    lines = (FIXTURES / "console-ok.log").read_text().splitlines()
    assert [l for l in lines if qemu_runner.failure_line(l)] == []


def test_command_is_a_list_with_separate_channels(tmp_path):
    cmd = qemu_runner.build_qemu_command("qemu", "tcg", 3, 512, "k", "i",
                                         "console=ttyS0", tmp_path)
    assert cmd[cmd.index("-accel") + 1] == "tcg,thread=multi"
    assert cmd[cmd.index("-smp") + 1] == "3"
    assert "-no-reboot" in cmd
    assert [a for a in cmd if a.startswith("chardev:")] == [
        "chardev:console", "chardev:results", "chardev:status"]
    kvm = qemu_runner.build_qemu_command("qemu", "kvm", 1, 512, "k", "i", "",
                                         tmp_path)
    assert kvm[kvm.index("-accel") + 1] == "kvm"


def test_panics_end_qemu():
    assert "panic=-1" in qemu_runner.BASE_APPEND.split()
    assert "oops=panic" in qemu_runner.BASE_APPEND.split()


def test_watchdog_grows_with_requested_time():
    assert qemu_runner.watchdog_seconds(100) > qemu_runner.watchdog_seconds(10)
    assert qemu_runner.watchdog_seconds(10) > 10


def test_follower_returns_only_complete_lines(tmp_path):
    path = tmp_path / "f"
    follower = qemu_runner.Follower(path)
    assert follower.new_lines() == []
    path.write_bytes(b"one\ntw")
    assert follower.new_lines() == ["one"]
    with open(path, "ab") as f:
        f.write(b"o\r\nthree")
    assert follower.new_lines() == ["two"]
    assert follower.rest() == ["three"]


def test_kvm_probe_is_cached_per_boot(tmp_path, monkeypatch):
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        pytest.skip("no /dev/kvm to probe")
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    (tmp_path / "kvm-probe.json").write_text(json.dumps(
        {"boot_id": boot_id, "usable": False, "reason": "recorded"}))
    usable, reason = qemu_runner.probe_kvm("/nonexistent/qemu", tmp_path)
    assert not usable and reason.startswith("recorded")


def test_kvm_probe_that_cannot_run_says_no(tmp_path):
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        pytest.skip("no /dev/kvm to probe")
    usable, reason = qemu_runner.probe_kvm("/bin/false", tmp_path)
    assert not usable and "expected 99" in reason


def test_tcg_guests_get_the_host_tsc_as_delay_loop_preset(tmp_path):
    boot = tmp_path / "build" / "arch" / "x86" / "boot"
    boot.mkdir(parents=True)
    (boot / "bzImage").write_bytes(b"")
    (tmp_path / "build" / ".config").write_text("CONFIG_HZ_250=y\nCONFIG_HZ=250\n")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("cpu MHz\t\t: 2096.026\nflags\t\t: fpu tsc constant_tsc\n")
    # TSC cycles per tick: 2096.026 MHz / 250 Hz.
    assert qemu_runner.tcg_lpj(boot / "bzImage", cpuinfo) == 8384104
    # "cpu MHz" of a CPU whose TSC rate varies is not the TSC's rate.
    cpuinfo.write_text("cpu MHz\t\t: 2096.026\nflags\t\t: fpu tsc\n")
    assert qemu_runner.tcg_lpj(boot / "bzImage", cpuinfo) is None
    assert qemu_runner.tcg_lpj(tmp_path / "nowhere" / "bzImage", cpuinfo) is None
