# SPDX-License-Identifier: GPL-2.0
"""Bind each of QEMU's vCPU threads to a host CPU of its own.

Left to the host's scheduler, two vCPU threads can share one host CPU for
a while, and a lock holder's vCPU then runs at half speed while the
waiter's spins beside it: the usual suspect for a bench whose repetitions
fall into two modes. Bound, vCPU i runs on host CPU i mod the host CPUs
the runner may use. (On the lab's 2-core host binding left the modes as
they were: README, "Regressions".) QEMU names its vCPU threads ("CPU 0/TCG", "CPU 1/KVM")
only when started with NAME_ARGS; a single-threaded TCG ("ALL CPUs/TCG")
has no per-vCPU thread to bind.
"""
import os
import re
import time
from pathlib import Path

NAME_ARGS = ["-name", "mutexlab,debug-threads=on"]
VCPU_THREAD = re.compile(r"CPU (\d+)/(?:TCG|KVM)")
# QEMU creates its vCPU threads while it sets the machine up, before the
# guest's first instruction; this is headroom for a loaded host.
APPEAR_S = 10.0


class PinError(Exception):
    pass


def vcpu_threads(pid, proc=Path("/proc")):
    """{vCPU index: thread id} of the QEMU process pid."""
    found = {}
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            name = (task / "comm").read_text().strip()
        except OSError:
            continue  # the thread ended
        match = VCPU_THREAD.fullmatch(name)
        if match:
            found[int(match.group(1))] = int(task.name)
    return found


def pin_vcpus(pid, vcpus, proc=Path("/proc"), host_cpus=None,
              setaffinity=os.sched_setaffinity, clock=time.monotonic,
              sleep=time.sleep):
    """Bind vCPU i of QEMU process pid to host CPU i mod the host CPUs;
    return {vCPU: host CPU}. PinError when its vCPU threads do not all
    appear within APPEAR_S or one cannot be bound."""
    cpus = sorted(host_cpus if host_cpus is not None
                  else os.sched_getaffinity(0))
    deadline = clock() + APPEAR_S
    threads = vcpu_threads(pid, proc)
    while len(threads) < vcpus:
        if clock() > deadline:
            raise PinError(f"{len(threads)} of {vcpus} vCPU threads named "
                           f"after {APPEAR_S:.0f}s (QEMU started without "
                           f"{' '.join(NAME_ARGS)}, or single-threaded TCG)")
        sleep(0.05)
        threads = vcpu_threads(pid, proc)
    placed = {}
    for index, tid in sorted(threads.items()):
        cpu = cpus[index % len(cpus)]
        try:
            setaffinity(tid, {cpu})
        except OSError as e:
            raise PinError(f"vCPU {index} (thread {tid}) to host CPU "
                           f"{cpu}: {e.strerror}") from None
        placed[index] = cpu
    return placed
