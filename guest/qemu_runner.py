#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Boot a lab kernel in QEMU and judge how the guest ended.

Three serial ports, each a file: ttyS0 the console (for humans and for
failure detection), ttyS1 the bench module's results, ttyS2 the guest's exit
status. A watchdog kills a hung guest; an oops, BUG, WARNING, panic, KASAN
report or hung task on the console fails the run at once, quoted.
"""
import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import console_frames
from accel import choose_accel, die_with_parent, tcg_lpj
from host_load import HostSampler
from vcpu_pin import NAME_ARGS, PinError, pin_vcpus

FAILURE_PATTERNS = [re.compile(p) for p in (
    r"\bOops\b",
    r"\bBUG: ",
    r"kernel BUG at ",
    r"\bWARNING: ",
    r"Kernel panic",
    r"\bKASAN\b",
    r"general protection fault",
    r"BUG: unable to handle",
    r"INFO: task .* blocked for more than",
    r"\bUBSAN: ",
)]
# After the first failure line, keep reading this long for the rest of the
# trace (the guest panics and QEMU exits sooner in the usual case).
TRACE_GRACE_S = 3.0
POLL_S = 0.1
# Booting to /init takes about 2 s under TCG here; the rest is headroom for a
# loaded host. Measurement time is added on top (see watchdog_seconds).
BOOT_ALLOWANCE_S = 60


# Under icount a guest second is 10^9 guest instructions, all on one host
# thread: a boot whose points take 7.2 guest seconds ran in 15-19 s here,
# the host busy, boot included. A busier host slows it further, not the
# guest's readings: the watchdog allows 8 times.
ICOUNT_HOST_S_PER_GUEST_S = 8
# shift=0: one instruction a nanosecond of the guest's clock; sleep=off: an
# idle guest's clock jumps to its next timer instead of following the host's.
ICOUNT_ARGS = ["-icount", "shift=0,sleep=off"]


def watchdog_seconds(expected_run_s, vcpus=1, host_cpus=1, accel="tcg"):
    """Time after which a guest counts as hung. More vCPUs than host CPUs
    share them: the boot and the run take that many times longer."""
    crowding = max(1.0, vcpus / max(1, host_cpus))
    if accel == "icount":
        crowding *= ICOUNT_HOST_S_PER_GUEST_S
    return crowding * (BOOT_ALLOWANCE_S + 2 * expected_run_s) + 30


def failure_line(line):
    """The console line if it reports a kernel failure, else None."""
    return line if any(p.search(line) for p in FAILURE_PATTERNS) else None


def option_value(path):
    """A path inside one of QEMU's key=value,... options: a comma doubled,
    as QEMU reads a literal one (RESULTS_DIR=x,path=/y made QEMU write to
    /y)."""
    return str(path).replace(",", ",,")


def build_qemu_command(qemu, accel, vcpus, mem_mb, kernel, initrd, append,
                       out_dir, tcg_threads="multi"):
    """The QEMU command line as a list; never a string to be re-parsed.
    accel="icount" is TCG on one host thread with the guest's clock
    counting instructions (ICOUNT_ARGS).
    tcg_threads="single" runs every vCPU on one host thread, interleaved:
    QEMU 7.2's multi-threaded TCG does not check watchpoints on locked
    read-modify-writes (the watch check's probe measures it), the
    single-threaded one emulates them as a load and a store, which it does.
    A guest told mutexlab.channel=console gets the console alone, as on a
    LAVA device."""
    out = Path(out_dir)
    channels = ["-chardev", f"file,id=console,path={option_value(out / 'console.log')}",
                "-serial", "chardev:console"]
    if not console_channel(append):
        channels += ["-chardev",
                     f"file,id=results,path={option_value(out / 'results.raw')}",
                     "-serial", "chardev:results",
                     "-chardev", f"file,id=status,path={option_value(out / 'guest-status')}",
                     "-serial", "chardev:status"]
    if accel == "kvm":
        accel_args = ["-accel", "kvm", "-cpu", "host"]
    elif accel == "icount":
        accel_args = ["-accel", "tcg,thread=single", *ICOUNT_ARGS, "-cpu", "max"]
    else:
        accel_args = ["-accel", f"tcg,thread={tcg_threads}", "-cpu", "max"]
    return [qemu, *accel_args, *NAME_ARGS,
            "-machine", "pc", "-smp", str(vcpus), "-m", str(mem_mb),
            "-nodefaults", "-display", "none", "-no-reboot",
            "-kernel", str(kernel), "-initrd", str(initrd),
            "-append", append, *channels]


def console_channel(append):
    """Whether the guest frames its results on the console (guest/init)."""
    return "mutexlab.channel=console" in append.split()


class Follower:
    """Yields the complete lines appended to a file since the last call."""

    def __init__(self, path):
        self.path = Path(path)
        self.offset = 0
        self.partial = b""

    def new_lines(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self.partial + data
        *lines, self.partial = data.split(b"\n")
        return [l.decode("utf-8", "replace").rstrip("\r") for l in lines]

    def rest(self):
        lines = self.new_lines()
        if self.partial:
            lines.append(self.partial.decode("utf-8", "replace"))
            self.partial = b""
        return lines


class SerialChannel:
    """Results on a serial port of their own (ttyS1, results.raw); the
    console is the kernel's."""

    def __init__(self, out):
        self.follower = Follower(Path(out) / "results.raw")

    def lines(self, console_lines, last=False):
        """(results lines that arrived, the kernel's console lines)."""
        return (self.follower.rest() if last else self.follower.new_lines()), console_lines


class ConsoleChannel:
    """The results and exit status that a guest with one serial line
    (mutexlab.channel=console) frames on its console, written to the files
    the other channels fill (results.raw, guest-status), so that the set
    looks the same either way."""

    def __init__(self, out):
        self.out = Path(out)
        (self.out / "results.raw").write_text("")

    def lines(self, console_lines, last=False):
        """(the results lines among console_lines, the others: the
        kernel's). The exit status, when it comes, goes to guest-status."""
        results, status, kernel = console_frames.split(console_lines)
        if status:
            (self.out / "guest-status").write_text(status + "\n")
        if results:
            with open(self.out / "results.raw", "a") as f:
                f.write("".join(f"{line}\n" for line in results))
        return results, kernel


class Interrupted(Exception):
    """SIGTERM or SIGHUP: stop QEMU, keep what arrived, say so."""


# The signals that asked this run to stop, in order; while QEMU runs, one
# also raises Interrupted. After that they are only written down, so that
# nothing cuts short the writing of what arrived.
INTERRUPTIONS = []
RAISE_ON_SIGNAL = [True]


def on_signal(signum, _frame):
    # Raise once: Ctrl-C brings SIGINT from the terminal and, a moment
    # later, the SIGTERM lab/lib.sh's boot_guest passes on; a second raise
    # inside the handling of the first crashed the runner before it wrote
    # run.json. Taken before anything else, so no second signal finds it set.
    raise_now, RAISE_ON_SIGNAL[0] = RAISE_ON_SIGNAL[0], False
    INTERRUPTIONS.append(signal.Signals(signum).name)
    if raise_now:
        raise Interrupted(INTERRUPTIONS[-1])


def is_point_record(line):
    # A KTAP diagnostic line; bare in modules from before that.
    return line.startswith(('# {"type":"point"', '{"type":"point"'))


def show_progress(line):
    if re.match(r"(not )?ok \d+ ", line) or line.startswith("# Totals"):
        print(f"  guest: {line}", flush=True)


def run_guest(cmd, out_dir, watchdog_s, console_channel=False, pin_vcpus_of=0,
              guest_clock="host"):
    """Run QEMU to the end; return the outcome as a dict. With
    console_channel the results come framed on the console; with
    pin_vcpus_of=N its N vCPU threads are bound to host CPUs first.
    guest_clock ("host", or "instructions" under icount) goes into
    host-load.json: whether the host's load can move what the guest
    measured."""
    out = Path(out_dir)
    console = Follower(out / "console.log")
    channel = (ConsoleChannel if console_channel else SerialChannel)(out)
    start = time.monotonic()
    first_result_s = None
    failures = []
    reason = interrupted_by = None
    RAISE_ON_SIGNAL[0] = True
    with open(out / "qemu.log", "wb") as qemu_log:
        try:
            # A session of its own: Ctrl-C reaches the runner, which stops
            # QEMU and writes down the run, not QEMU behind its back.
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                    stdout=qemu_log, stderr=subprocess.STDOUT,
                                    preexec_fn=die_with_parent,
                                    start_new_session=True)
        except OSError as e:
            return {"outcome": "qemu-error", "interrupted_by": None,
                    "guest_exit_status": None,
                    "failure_lines": [f"cannot run {cmd[0]}: {e.strerror} "
                                      "(is QEMU installed? run: make deps)"],
                    "qemu_returncode": None, "wall_s": 0.0,
                    "boot_to_first_result_s": None, "watchdog_s": watchdog_s}
        host = HostSampler(proc.pid)
        host_points = []
        vcpu_pinning = None
        try:
            if pin_vcpus_of:
                try:
                    vcpu_pinning = pin_vcpus(proc.pid, pin_vcpus_of)
                except PinError as e:
                    if proc.poll() is None:  # else QEMU's own words say why
                        reason = "unpinned"
                        failures.append(str(e))
                        proc.kill()
                        proc.wait()
            while proc.poll() is None:
                time.sleep(POLL_S)
                now = time.monotonic() - start
                results, kernel = channel.lines(console.new_lines())
                failures += filter(failure_line, kernel)
                for line in results:
                    if first_result_s is None:
                        first_result_s = now
                    if is_point_record(line):
                        host_points.append(host.interval())
                    show_progress(line)
                if failures and reason is None:
                    reason = "crashed"
                    deadline = now + TRACE_GRACE_S
                if reason == "crashed" and now > deadline:
                    break
                if now > watchdog_s:
                    reason = "timeout"
                    break
        except (KeyboardInterrupt, Interrupted) as e:
            reason = "interrupted"
            interrupted_by = str(e) if isinstance(e, Interrupted) else "SIGINT"
        finally:
            RAISE_ON_SIGNAL[0] = False  # once is enough
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    wall_s = time.monotonic() - start
    results, kernel = channel.lines(console.rest(), last=True)
    failures += filter(failure_line, kernel)
    for line in results:
        if is_point_record(line):
            host_points.append(None)  # arrived after QEMU ended: unmeasured
        show_progress(line)
    (out / "host-load.json").write_text(json.dumps(
        {"guest_clock": guest_clock, "boot": host.whole(),
         "points": host_points}, indent=1) + "\n")
    status_text = read_text(out / "guest-status").strip()
    if reason is None and INTERRUPTIONS and not status_text:
        # QEMU ended just before the signal reached us (or by it).
        reason, interrupted_by = "interrupted", INTERRUPTIONS[0]
    reason, failures = how_it_ended(reason, failures, proc.returncode,
                                    status_text, out)
    return {
        "outcome": reason,
        "interrupted_by": interrupted_by,
        "failure_lines": failures[:40],
        "guest_exit_status": status_text or None,
        "qemu_returncode": proc.returncode,
        "wall_s": round(wall_s, 2),
        "boot_to_first_result_s": (round(first_result_s, 2)
                                   if first_result_s is not None else None),
        "watchdog_s": watchdog_s,
        "vcpu_pinning": vcpu_pinning,
    }


def how_it_ended(seen, failures, qemu_returncode, status_text, out):
    """(outcome, failure lines) from what the runner saw while QEMU ran
    (interrupted, timeout or nothing) and what QEMU and the guest left."""
    if seen in ("interrupted", "unpinned"):
        return seen, failures
    if failures:
        return "crashed", failures
    if seen:
        return seen, failures
    if qemu_returncode > 0:
        # QEMU itself failed (a guest that powers off or panics ends it
        # with 0): an option it rejects, a missing file. Its words say why.
        return "qemu-error", read_text(out / "qemu.log").strip().splitlines()[-10:]
    if not status_text:
        return "no-exit-status", failures
    return ("ok" if status_text == "0" else "guest-error"), failures


def read_text(path):
    try:
        return Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""


def describe_failure(outcome, out_dir):
    msg = {
        "crashed": "the guest kernel reported a failure",
        "timeout": f"the guest hung: watchdog of {outcome['watchdog_s']}s expired",
        "no-exit-status": "the guest stopped without writing its exit status",
        "guest-error": "the bench module failed to load "
                       f"(exit status {outcome['guest_exit_status']})",
        "interrupted": f"interrupted by {outcome.get('interrupted_by')}: QEMU "
                       "stopped, what the guest sent until then is kept",
        "qemu-error": "QEMU did not run the guest; its own words",
        "unpinned": "VCPU_PIN=1, but QEMU's vCPU threads could not be bound "
                    "to host CPUs",
    }[outcome["outcome"]]
    lines = [f"mutexlab: error: {msg}; console: {Path(out_dir) / 'console.log'}"]
    lines += [f"  > {l}" for l in outcome["failure_lines"]]
    if outcome["outcome"] == "guest-error":
        lines += [f"  > {l}" for l in read_text(Path(out_dir) / "console.log")
                  .splitlines() if "mutexlab" in l][-10:]
    return "\n".join(lines)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--out", required=True, help="result folder")
    ap.add_argument("--append", default="", help="extra kernel parameters")
    ap.add_argument("--vcpus", type=int, default=os.cpu_count())
    ap.add_argument("--mem-mb", type=int, default=1024)
    ap.add_argument("--accel", choices=("auto", "kvm", "tcg", "icount"), default="auto")
    ap.add_argument("--tcg-threads", choices=("multi", "single"), default="multi",
                    help="under TCG: a host thread per vCPU, or one for all")
    ap.add_argument("--pin-vcpus", type=int, choices=(0, 1), default=0,
                    help="1: bind vCPU i's thread to host CPU i mod the host's")
    ap.add_argument("--expected-run-s", type=float, required=True,
                    help="measurement time the guest should need")
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    ap.add_argument("--write-bundle", metavar="DIR",
                    help="boot nothing: write DIR/qemu.args and DIR/watchdog_s "
                    "for guest/run_bundle.sh (--accel kvm or tcg)")
    return ap.parse_args(argv)


# In a bundle's qemu.args: the bundle's folder and the run's output folder,
# which guest/run_bundle.sh puts in when it runs.
BUNDLE_DIR, RUN_DIR = "@BUNDLE@", "@OUT@"


def read_bundle_args(path):
    """What a bundle's qemu.args (write_bundle) asks of QEMU: {vcpus, mem_mb,
    accel, append, serial_ports}; ValueError when an option is missing."""
    args = Path(path).read_text().splitlines()

    def after(flag):
        if flag not in args:
            raise ValueError(f"{path} has no {flag}")
        return args[args.index(flag) + 1]
    return {"vcpus": int(after("-smp")), "mem_mb": int(after("-m")),
            "accel": "kvm" if after("-accel").startswith("kvm") else "tcg",
            "append": after("-append"), "serial_ports": args.count("-serial")}


def write_bundle(args):
    """The QEMU arguments of a run bundle, one a line, with the bundle's and
    the output's folders left for run_bundle.sh, and its watchdog. The
    target host is unknown: no delay-loop preset, no crowding allowance
    beyond the vCPUs asked for."""
    if args.accel == "auto":
        sys.exit("mutexlab: error: a bundle runs on another host: give "
                 "ACCEL=kvm or ACCEL=tcg, not auto")
    append = f"{BASE_APPEND} {args.append}".strip()
    cmd = build_qemu_command(args.qemu, args.accel, args.vcpus, args.mem_mb,
                             f"{BUNDLE_DIR}/bzImage", f"{BUNDLE_DIR}/initramfs.cpio",
                             append, RUN_DIR, args.tcg_threads)
    if any("\n" in arg for arg in cmd):
        sys.exit("mutexlab: error: a QEMU argument holds a newline")
    out = Path(args.write_bundle)
    (out / "qemu.args").write_text("".join(f"{arg}\n" for arg in cmd[1:]))
    (out / "watchdog_s").write_text(f"{watchdog_seconds(args.expected_run_s):.0f}\n")
    return 0


# panic=-1 with -no-reboot turns any panic into QEMU's exit; oops, warnings
# and hung tasks are made panics so that a failure ends the run at once.
BASE_APPEND = ("console=ttyS0 panic=-1 oops=panic panic_on_warn=1 "
               "hung_task_panic=1 sysctl.kernel.hung_task_timeout_secs=30")


# The exit status of a run that was interrupted: the shell's 128 + signal.
INTERRUPTED_STATUS = {"SIGINT": 130, "SIGHUP": 129, "SIGTERM": 143}


def main(argv=None):
    # SIGINT too: Python's KeyboardInterrupt exists only where SIGINT was
    # not ignored when the runner started (a job started with `&` by a
    # script ignores it), and Ctrl-C must stop a run all the same.
    previous = {sig: signal.signal(sig, on_signal)
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        args = parse_args(argv)
        return write_bundle(args) if args.write_bundle else run(args)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    host_cpus = os.cpu_count()
    if args.accel == "icount" and args.vcpus != 1:
        # lab/settings.toml, ACCEL: QEMU 7.2 hangs at SMP bring-up there.
        print(f"mutexlab: error: --accel icount needs 1 vCPU, got {args.vcpus}"
              " (QEMU before 8.1 gives the first vCPU the whole instruction"
              " budget: the others run only when it halts or pauses)",
              file=sys.stderr)
        return 2
    if args.vcpus > host_cpus:
        print(f"mutexlab: warning: {args.vcpus} vCPUs on {host_cpus} host CPUs:"
              " vCPUs will be preempted by the host, spinning will suffer",
              file=sys.stderr)
    try:
        accel, accel_reason = choose_accel(args.accel, args.qemu, args.cache_dir,
                                           args.kernel, args.initrd)
    except (KeyboardInterrupt, Interrupted) as e:
        print(f"mutexlab: interrupted ({e or 'SIGINT'}) before the boot",
              file=sys.stderr)
        return INTERRUPTED_STATUS.get(str(e) or "SIGINT", 130)
    append = f"{BASE_APPEND} {args.append}".strip()
    # Under icount the guest's TSC and timers both follow its instruction
    # count: its own calibration is exact there.
    if accel == "tcg":
        lpj = tcg_lpj(args.kernel)
        if lpj:
            append += f" lpj={lpj}"
        else:
            print("mutexlab: warning: no constant host TSC frequency: the "
                  "guest's secondary vCPUs calibrate their delay loops "
                  "themselves (udelay() may be far off there)", file=sys.stderr)
    cmd = build_qemu_command(args.qemu, accel, args.vcpus, args.mem_mb,
                             args.kernel, args.initrd, append, out,
                             args.tcg_threads)
    (out / "qemu-cmd.json").write_text(json.dumps(cmd, indent=1) + "\n")
    (out / "qemu-cmd.sh").write_text(shlex.join(cmd) + "\n")
    watchdog = watchdog_seconds(args.expected_run_s, args.vcpus, host_cpus, accel)
    print(f"mutexlab: booting {args.vcpus} vCPUs under {accel} ({accel_reason});"
          f" watchdog {watchdog:.0f}s", flush=True)
    outcome = run_guest(cmd, out, watchdog, console_channel(append),
                        args.vcpus if args.pin_vcpus else 0,
                        "instructions" if accel == "icount" else "host")
    outcome.update(accel=accel, accel_reason=accel_reason, vcpus=args.vcpus,
                   tcg_threads={"tcg": args.tcg_threads, "icount": "single"}.get(accel),
                   host_cpus=host_cpus, mem_mb=args.mem_mb, append=append)
    (out / "run.json").write_text(json.dumps(outcome, indent=1) + "\n")
    if outcome["outcome"] != "ok":
        print(describe_failure(outcome, out), file=sys.stderr)
        return INTERRUPTED_STATUS.get(outcome["interrupted_by"], 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
