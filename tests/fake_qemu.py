#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Stands in for qemu-system-x86_64 in the runner's tests.

Finds the console, results and status files in its -chardev arguments, as
QEMU would, and plays the scenario named by FAKE_QEMU_SCENARIO.
"""
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

POINT = '# {"type":"point","workload":"contended","threads":1,"rep":%d}\n'


def chardev_paths(argv):
    paths = {}
    for arg in argv:
        if arg.startswith("file,id="):
            fields = dict(f.split("=", 1) for f in arg.split(",")[1:])
            paths[fields["id"]] = fields["path"]
    return paths


def write(path, text):
    with open(path, "a") as f:
        f.write(text)


class Channels:
    """The guest's results and exit status: on serial ports of their own,
    or, when QEMU was given only the console (mutexlab.channel=console),
    framed there as guest/init frames them, between kernel messages, one
    of them left without its newline before a frame begins."""

    def __init__(self, paths):
        self.paths = paths
        self.framed = "results" not in paths

    def results(self, text):
        if not self.framed:
            write(self.paths["results"], text)
            return
        lines = text.splitlines()
        write(self.paths["console"], "[    1.000000] random: crng init done\n"
              "[    1.100000] a kernel line cut short "
              + "".join(f"mutexlab| {line}\r\n" for line in lines))

    def status(self, text):
        if self.framed:
            write(self.paths["console"], f"mutexlab-exit| {text}")
        else:
            write(self.paths["status"], text)


def kvm_probe(argv, scenario):
    """The runner's KVM probes: a boot sector (floppy) that exits 99 through
    isa-debug-exit; then the lab's kernel, which prints its first line, or,
    on a half-working /dev/kvm, nothing at all."""
    if any(a.startswith("format=raw") for a in argv):
        return 99
    if scenario == "kvm-kernel-silent":
        time.sleep(3600)
    write(chardev_paths(argv)["console"], "Linux version 6.1.0 (fake)\n")
    time.sleep(3600)
    return 0


def start_vcpu_threads(count, named):
    """Start count idle threads, named "CPU i/TCG" if named; return
    {i: the host CPUs thread i may run on, read by itself 1 s later}."""
    seen = {}

    def vcpu(i):
        if named:
            Path(f"/proc/self/task/{threading.get_native_id()}/comm"
                 ).write_text(f"CPU {i}/TCG")
        time.sleep(1.0)
        seen[i] = os.sched_getaffinity(0)  # this thread's, on Linux

    for i in range(count):
        threading.Thread(target=vcpu, args=(i,), daemon=True).start()
    return seen


def main():
    if "kvm" in sys.argv[1:3]:
        return kvm_probe(sys.argv[1:], os.environ["FAKE_QEMU_SCENARIO"])
    paths = chardev_paths(sys.argv[1:])
    scenario = os.environ["FAKE_QEMU_SCENARIO"]
    if scenario.startswith("kvm-"):  # the probes' scenarios: a clean guest
        scenario = "ok"
    if scenario == "bad-option":
        # As QEMU 7.2 rejects an option: a line on stderr, exit status 1.
        print("qemu-system-x86_64: -accel tcg,thread=multi: invalid accelerator",
              file=sys.stderr)
        return 1
    write(paths["console"], "Linux version 6.1.0 (fake)\nmutexlab-init: start\n")
    guest = Channels(paths)
    guest.results("KTAP version 1\n1..1\n")
    # Last: the tests take the pid file to mean that the guest's first
    # output is there, and signal the runner at once.
    if os.environ.get("FAKE_QEMU_PIDFILE"):
        write(os.environ["FAKE_QEMU_PIDFILE"], f"{os.getpid()}\n")
    if scenario == "ok":
        guest.results("ok 1 - contended/1t/rep1\n"
              "# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0\n")
        guest.status("0\n")
        return 0
    if scenario == "vcpu-threads":
        # One thread per vCPU, named as QEMU names them when told
        # debug-threads=on; each reports the host CPUs it may run on once
        # the runner has had time to bind it.
        vcpus = start_vcpu_threads(int(sys.argv[sys.argv.index("-smp") + 1]),
                                   any("debug-threads=on" in a for a in sys.argv))
        time.sleep(1.5)
        guest.results("".join(f"# vcpu {i} host cpus {sorted(cpus)}\n"
                              for i, cpus in sorted(vcpus.items())))
        guest.status("0\n")
        return 0
    if scenario == "hog-during-point-2":
        # Three points; while the second runs, another process (not QEMU's
        # own thread: the runner must count it as the host's) burns a CPU.
        for rep in (1, 2, 3):
            hog = None
            if rep == 2:
                hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            time.sleep(0.8)
            if hog:
                hog.kill()
                hog.wait()
            guest.results(POINT % rep)
            time.sleep(0.3)  # the runner polls every 0.1 s: one point per poll
        guest.status("0\n")
        return 0
    if scenario == "bug-then-hang":
        # A crash that does not end QEMU: the runner must stop it itself.
        write(paths["console"], "------------[ cut here ]------------\n"
              "kernel BUG at fake.c:1!\ninvalid opcode: 0000 [#1] SMP\n")
    if scenario == "module-fails":
        guest.status("1\n")
        return 0
    if scenario == "no-status":
        return 0
    time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
