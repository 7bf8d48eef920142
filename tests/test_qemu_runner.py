# SPDX-License-Identifier: GPL-2.0
"""The QEMU runner: failure detection, watchdog, exit status, command line."""
import json
import signal
import subprocess
import time
import os
from pathlib import Path

import pytest

import accel
import qemu_runner
import vcpu_pin
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


def test_a_comma_in_a_result_folder_cannot_add_a_qemu_option(tmp_path):
    """RESULTS_DIR=x,path=/y made QEMU's -chardev write the console to /y:
    a comma inside an option's value is doubled, QEMU's literal comma
    (checked by hand with QEMU 7.2: it then opens 'x,path=/y/console.log')."""
    out = tmp_path / "x,path=" / "y"
    cmd = qemu_runner.build_qemu_command("qemu", "tcg", 2, 512, "k", "i", "", out)
    chardevs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-chardev"]
    assert chardevs[0] == f"file,id=console,path={str(out).replace(',', ',,')}/console.log"
    for value in chardevs:
        # Split as QEMU splits: on single commas only.
        keys = [part.split("=", 1)[0] for part in value.replace(",,", "\0").split(",")]
        assert keys == ["file", "id", "path"], value


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
    # The watch check's: every vCPU on one host thread (see check.sh).
    single = qemu_runner.build_qemu_command("qemu", "tcg", 2, 512, "k", "i", "",
                                            tmp_path, tcg_threads="single")
    assert single[single.index("-accel") + 1] == "tcg,thread=single"
    kvm = qemu_runner.build_qemu_command("qemu", "kvm", 1, 512, "k", "i", "",
                                         tmp_path, tcg_threads="single")
    assert kvm[kvm.index("-accel") + 1] == "kvm"


def test_watchdog_grows_with_requested_time():
    assert qemu_runner.watchdog_seconds(100) > qemu_runner.watchdog_seconds(10)
    assert qemu_runner.watchdog_seconds(10) > 10
    # A guest second under icount is 10^9 instructions of one host thread.
    assert (qemu_runner.watchdog_seconds(10, accel="icount")
            > qemu_runner.ICOUNT_HOST_S_PER_GUEST_S * (qemu_runner.BOOT_ALLOWANCE_S + 20))


def test_icount_counts_instructions_on_one_host_thread(tmp_path):
    cmd = qemu_runner.build_qemu_command("qemu", "icount", 1, 512, "k", "i", "",
                                         tmp_path)
    assert cmd[cmd.index("-accel") + 1] == "tcg,thread=single"
    assert cmd[cmd.index("-icount") + 1] == "shift=0,sleep=off"
    assert "-icount" not in qemu_runner.build_qemu_command(
        "qemu", "tcg", 1, 512, "k", "i", "", tmp_path)


def test_icount_with_two_vcpus_is_refused_before_qemu_starts(tmp_path):
    proc = subprocess.run(
        ["/usr/bin/python3", str(LAB_ROOT / "guest" / "qemu_runner.py"),
         "--kernel", "k", "--initrd", "i", "--out", str(tmp_path / "out"),
         "--accel", "icount", "--vcpus", "2", "--expected-run-s", "5",
         "--cache-dir", str(tmp_path / "cache"), "--qemu", str(tmp_path / "no-qemu")],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--accel icount needs 1 vCPU, got 2" in proc.stderr
    # and why: the user may reach for a newer QEMU.
    assert "QEMU before 8.1 gives the first vCPU" in proc.stderr
    assert not (tmp_path / "out" / "run.json").exists()


def test_an_icount_run_says_its_guest_clock_counts_instructions(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_QEMU_SCENARIO", "ok")
    # What a TCG guest would get on a host with a constant TSC.
    monkeypatch.setattr(qemu_runner, "tcg_lpj", lambda kernel: 8384104)
    out = tmp_path / "out"
    assert qemu_runner.main([
        "--kernel", str(tmp_path / "bzImage"), "--initrd", str(tmp_path / "initrd"),
        "--out", str(out), "--accel", "icount", "--vcpus", "1",
        "--expected-run-s", "5", "--cache-dir", str(tmp_path / "cache"),
        "--qemu", str(FAKE_QEMU)]) == 0
    run = json.loads((out / "run.json").read_text())
    assert (run["accel"], run["tcg_threads"]) == ("icount", "single")
    # The guest calibrates its delay loop against its own instruction clock.
    assert "lpj=" not in run["append"]
    cmd = json.loads((out / "qemu-cmd.json").read_text())
    assert cmd[cmd.index("-icount") + 1] == "shift=0,sleep=off"
    load = json.loads((out / "host-load.json").read_text())
    assert load["guest_clock"] == "instructions"


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
    usable, reason = accel.probe_kvm("/nonexistent/qemu", tmp_path)
    assert not usable and reason.startswith("recorded")


def test_kvm_probe_that_cannot_run_says_no(tmp_path):
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        pytest.skip("no /dev/kvm to probe")
    usable, reason = accel.probe_kvm("/bin/false", tmp_path)
    assert not usable and "expected 99" in reason


def test_tcg_guests_get_the_host_tsc_as_delay_loop_preset(tmp_path):
    boot = tmp_path / "build" / "arch" / "x86" / "boot"
    boot.mkdir(parents=True)
    (boot / "bzImage").write_bytes(b"")
    (tmp_path / "build" / ".config").write_text("CONFIG_HZ_250=y\nCONFIG_HZ=250\n")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("cpu MHz\t\t: 2096.026\nflags\t\t: fpu tsc constant_tsc\n")
    # TSC cycles per tick: 2096.026 MHz / 250 Hz.
    assert accel.tcg_lpj(boot / "bzImage", cpuinfo) == 8384104
    # "cpu MHz" of a CPU whose TSC rate varies is not the TSC's rate.
    cpuinfo.write_text("cpu MHz\t\t: 2096.026\nflags\t\t: fpu tsc\n")
    assert accel.tcg_lpj(boot / "bzImage", cpuinfo) is None
    assert accel.tcg_lpj(tmp_path / "nowhere" / "bzImage", cpuinfo) is None


def start_runner(tmp_path, scenario, qemu=FAKE_QEMU, via_shell=False):
    """The runner (or lib.sh's boot_guest) on the fake QEMU, in the
    background; returns (process, the fake QEMU's pid file)."""
    pidfile = tmp_path / "qemu.pid"
    env = dict(os.environ, FAKE_QEMU_SCENARIO=scenario,
               FAKE_QEMU_PIDFILE=str(pidfile), ACCEL="tcg", VCPUS="2", VCPU_PIN="0",
               MEM_MB="256", LAB_CACHE=str(tmp_path / "cache"))
    out = tmp_path / "out"
    if via_shell:
        # boot_guest runs qemu-system-x86_64 from PATH: the fake one.
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "qemu-system-x86_64").symlink_to(qemu)
        env["PATH"] = f"{bin_dir}:{env['PATH']}"
        cmd = ["bash", "-c", 'set -euo pipefail; source "$1/lab/lib.sh"; '
               'status=0; boot_guest "$2" "$2/initrd" "$3" 5 "" || status=$?; '
               'echo "status=$status interrupted=$INTERRUPTED"',
               "_", str(LAB_ROOT), str(tmp_path), str(out)]
    else:
        cmd = ["/usr/bin/python3", str(LAB_ROOT / "guest" / "qemu_runner.py"),
               "--kernel", str(tmp_path / "bzImage"), "--initrd", str(tmp_path / "initrd"),
               "--out", str(out), "--accel", "tcg", "--expected-run-s", "5",
               "--cache-dir", str(tmp_path / "cache"), "--qemu", str(qemu)]
    # A shell started with SIGINT or SIGHUP ignored (pytest run by a
    # script with `&`, or under nohup) can never trap it; Ctrl-C and a
    # hang-up come from a terminal, where neither is. The runner itself is
    # left with what it inherits: it must cope.
    default_sigint = (lambda: [signal.signal(s, signal.SIG_DFL)
                               for s in (signal.SIGINT, signal.SIGHUP)]) \
        if via_shell else None
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    return proc, pidfile


def wait_for(predicate, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose; only its parent has not reaped it.
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130),
                                         (signal.SIGHUP, 129)])
def test_a_signal_to_the_runner_stops_qemu_and_keeps_the_run(tmp_path, sig, status):
    proc, pidfile = start_runner(tmp_path, "hang")
    assert wait_for(pidfile.exists), proc.communicate(timeout=10)
    qemu_pid = int(pidfile.read_text())
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == status, err
    assert f"interrupted by {sig.name}" in err
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["outcome"] == "interrupted" and run["interrupted_by"] == sig.name
    assert "KTAP version 1" in (tmp_path / "out" / "results.raw").read_text()
    assert wait_for(lambda: not alive(qemu_pid)), "QEMU outlived the runner"


def test_qemu_dies_with_a_runner_that_is_killed(tmp_path):
    """SIGKILL leaves the runner no say: QEMU's parent-death signal ends it."""
    proc, pidfile = start_runner(tmp_path, "hang")
    assert wait_for(pidfile.exists)
    qemu_pid = int(pidfile.read_text())
    proc.kill()
    proc.communicate(timeout=10)
    assert wait_for(lambda: not alive(qemu_pid)), "QEMU orphaned"


@pytest.mark.parametrize("sig, name", [(signal.SIGTERM, "TERM"), (signal.SIGINT, "INT"),
                                       (signal.SIGHUP, "HUP")])
def test_a_signal_to_the_lab_script_reaches_the_runner(tmp_path, sig, name):
    """make passes SIGTERM to its child script; Ctrl-C reaches the script;
    python3 lab passes SIGHUP on (a closed terminal), which ended the
    script at once, its set unfinished. boot_guest passes each on, the
    runner writes run.json, and the script carries on to finish the set,
    told why."""
    proc, pidfile = start_runner(tmp_path, "hang", via_shell=True)
    assert wait_for(pidfile.exists), proc.communicate(timeout=10)
    qemu_pid = int(pidfile.read_text())
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert f"status={128 + sig} interrupted={name}" in out, (out, err)
    assert json.loads((tmp_path / "out" / "run.json").read_text())["outcome"] == "interrupted"
    assert wait_for(lambda: not alive(qemu_pid))


def test_qemu_missing_is_named_with_the_fix(tmp_path):
    proc, _ = start_runner(tmp_path, "ok", qemu=str(tmp_path / "no-such-qemu"))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "cannot run" in err and "no-such-qemu" in err and "make deps" in err
    assert "Traceback" not in err
    assert json.loads((tmp_path / "out" / "run.json").read_text())["outcome"] == "qemu-error"


def test_qemu_rejecting_an_option_is_quoted(tmp_path, monkeypatch):
    outcome = fake_run(tmp_path, monkeypatch, "bad-option")
    assert outcome["outcome"] == "qemu-error"
    assert any("invalid accelerator" in l for l in outcome["failure_lines"])
    message = qemu_runner.describe_failure(outcome, tmp_path)
    assert "QEMU did not run the guest" in message and "invalid accelerator" in message


needs_kvm_node = pytest.mark.skipif(not os.access("/dev/kvm", os.R_OK | os.W_OK),
                                    reason="no /dev/kvm: the probes stop at its absence")


@needs_kvm_node
def test_kvm_that_runs_a_boot_sector_but_not_linux_means_tcg(tmp_path, monkeypatch):
    """Some hosts run the probe's boot sector under KVM while a Linux kernel
    prints nothing there for ever: every boot then hung to the watchdog."""
    monkeypatch.setenv("FAKE_QEMU_SCENARIO", "kvm-kernel-silent")
    monkeypatch.setattr(accel, "KVM_KERNEL_PROBE_S", 1.0)
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"kernel one")
    chosen, reason = accel.choose_accel("auto", FAKE_QEMU, tmp_path, kernel, "initrd")
    assert chosen == "tcg" and "printed nothing under KVM" in reason
    # Cached for this boot and kernel; a new kernel is probed again.
    assert "cached this boot" in accel.choose_accel(
        "auto", FAKE_QEMU, tmp_path, kernel, "initrd")[1]
    kernel.write_bytes(b"kernel two")
    monkeypatch.setenv("FAKE_QEMU_SCENARIO", "kvm-ok")
    chosen, reason = accel.choose_accel("auto", FAKE_QEMU, tmp_path, kernel, "initrd")
    assert chosen == "kvm" and "first line under KVM" in reason
    with pytest.raises(SystemExit, match="ACCEL=kvm requested but"):
        monkeypatch.setenv("FAKE_QEMU_SCENARIO", "kvm-kernel-silent")
        kernel.write_bytes(b"kernel three")
        accel.choose_accel("kvm", FAKE_QEMU, tmp_path, kernel, "initrd")


@needs_kvm_node
def test_a_run_on_half_working_kvm_completes_under_tcg_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(accel, "KVM_KERNEL_PROBE_S", 1.0)
    monkeypatch.setenv("FAKE_QEMU_SCENARIO", "kvm-kernel-silent")
    (tmp_path / "bzImage").write_bytes(b"kernel")
    status = qemu_runner.main([
        "--kernel", str(tmp_path / "bzImage"), "--initrd", str(tmp_path / "initrd"),
        "--out", str(tmp_path / "out"), "--accel", "auto", "--expected-run-s", "5",
        "--cache-dir", str(tmp_path / "cache"), "--qemu", FAKE_QEMU])
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert status == 0 and run["outcome"] == "ok"
    assert run["accel"] == "tcg" and "printed nothing under KVM" in run["accel_reason"]
    assert "-accel" in (tmp_path / "out" / "qemu-cmd.sh").read_text()
    assert "tcg,thread=multi" in (tmp_path / "out" / "qemu-cmd.sh").read_text()


def console_run(tmp_path, monkeypatch, scenario, watchdog_s=60):
    """The guest with only a console (mutexlab.channel=console)."""
    monkeypatch.setenv("FAKE_QEMU_SCENARIO", scenario)
    tmp_path.mkdir()
    append = "mutexlab.channel=console"
    cmd = qemu_runner.build_qemu_command(FAKE_QEMU, "tcg", 2, 512, "bzImage",
                                         "initrd", append, tmp_path)
    assert cmd.count("-serial") == 1
    return qemu_runner.run_guest(cmd, tmp_path, watchdog_s,
                                 qemu_runner.console_channel(append))


def test_results_framed_on_the_console_fill_the_same_files(tmp_path, monkeypatch):
    outcome = console_run(tmp_path / "console", monkeypatch, "ok")
    (tmp_path / "serial").mkdir()
    fake_run(tmp_path / "serial", monkeypatch, "ok")
    assert outcome["outcome"] == "ok" and outcome["guest_exit_status"] == "0"
    assert ((tmp_path / "console" / "results.raw").read_text()
            == (tmp_path / "serial" / "results.raw").read_text()
            == "KTAP version 1\n1..1\nok 1 - contended/1t/rep1\n"
               "# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0\n")
    assert "crng init done" in (tmp_path / "console" / "console.log").read_text()


def test_framed_console_still_fails_on_a_crash_and_a_failed_guest(tmp_path, monkeypatch):
    crashed = console_run(tmp_path / "crash", monkeypatch, "bug-then-hang", watchdog_s=600)
    assert crashed["outcome"] == "crashed"
    failed = console_run(tmp_path / "fail", monkeypatch, "module-fails")
    assert failed["outcome"] == "guest-error" and failed["guest_exit_status"] == "1"


def test_a_framed_console_is_split_into_results_and_status():
    import console_frames
    lines = ["[    0.1] Linux version 6.1.0", "mutexlab| KTAP version 1\r",
             "[    2.0] a message cut short mutexlab| ok 1 - x # WARNING: not ours",
             "mutexlab| ", "mutexlab-exit| 0"]
    results, status, kernel = console_frames.split(lines)
    assert results == ["KTAP version 1", "ok 1 - x # WARNING: not ours", ""]
    assert status == "0"
    assert kernel == ["[    0.1] Linux version 6.1.0"]
    assert console_frames.split(["mutexlab|no space", "[ 1.0] ok 1 - x"]) == (
        [], "", ["mutexlab|no space", "[ 1.0] ok 1 - x"])


def vcpu_run(tmp_path, monkeypatch, vcpus, pin, named=True):
    """A fake QEMU with a named thread per vCPU; returns the outcome and
    {vCPU: the host CPUs its thread could run on, as it read them}."""
    monkeypatch.setenv("FAKE_QEMU_SCENARIO", "vcpu-threads")
    cmd = qemu_runner.build_qemu_command(FAKE_QEMU, "tcg", vcpus, 512, "bzImage",
                                         "initrd", "", tmp_path)
    if not named:  # as a QEMU started without debug-threads=on
        cmd = [arg for arg in cmd if arg not in vcpu_pin.NAME_ARGS]
    outcome = qemu_runner.run_guest(cmd, tmp_path, 60, pin_vcpus_of=vcpus if pin else 0)
    raw = (tmp_path / "results.raw").read_text().splitlines()
    seen = {int(l.split()[2]): json.loads(l.split("cpus ")[1])
            for l in raw if l.startswith("# vcpu ")}
    return outcome, seen


def test_vcpu_pin_binds_each_vcpu_thread_to_one_host_cpu(tmp_path, monkeypatch):
    host = sorted(os.sched_getaffinity(0))
    vcpus = len(host) + 1  # one more than the host has: they wrap around
    outcome, seen = vcpu_run(tmp_path, monkeypatch, vcpus, pin=True)
    assert outcome["outcome"] == "ok"
    expected = {i: host[i % len(host)] for i in range(vcpus)}
    assert outcome["vcpu_pinning"] == expected
    assert seen == {i: [cpu] for i, cpu in expected.items()}


def test_without_vcpu_pin_the_host_places_vcpu_threads(tmp_path, monkeypatch):
    outcome, seen = vcpu_run(tmp_path, monkeypatch, 2, pin=False)
    assert outcome["outcome"] == "ok" and outcome["vcpu_pinning"] is None
    assert seen == {i: sorted(os.sched_getaffinity(0)) for i in range(2)}


def test_vcpu_threads_that_cannot_be_found_end_the_run_unpinned(tmp_path, monkeypatch):
    monkeypatch.setattr(vcpu_pin, "APPEAR_S", 0.5)
    outcome, _ = vcpu_run(tmp_path, monkeypatch, 2, pin=True, named=False)
    assert outcome["outcome"] == "unpinned"
    assert outcome["failure_lines"] == [
        "0 of 2 vCPU threads named after 0s (QEMU started without -name "
        "mutexlab,debug-threads=on, or single-threaded TCG)"]
    assert "could not be bound" in qemu_runner.describe_failure(outcome, tmp_path)
