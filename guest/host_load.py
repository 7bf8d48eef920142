# SPDX-License-Identifier: GPL-2.0
"""What else used the host's CPUs while the guest measured.

Under TCG the guest's clock follows the host's, so time the host gives to
another process is invisible inside the guest: a point simply reads slower
(the workers' CPU time over elapsed time stays 0.999). The host sees it:
between two samples, the CPU time all processes used (/proc/stat) minus
what QEMU used (/proc/PID/stat, its threads included), plus the steal time
(what the host's own hypervisor gave to others), is what everything else
took. The runner samples at the start of the boot and
each time a point's record arrives, so each point gets the interval that
ends with it (its warm-up and measured window, and the end of the point
before).
"""
import os
import time
from pathlib import Path

TICK_S = 1 / os.sysconf("SC_CLK_TCK")
# /proc/stat's cpu line: user nice system idle iowait irq softirq steal ...
BUSY_FIELDS = (0, 1, 2, 5, 6)
STEAL_FIELD = 7


def read_host(proc=Path("/proc")):
    """(busy CPU s of all host CPUs, steal s) since the host booted."""
    fields = (proc / "stat").read_text().split("\n", 1)[0].split()[1:]
    ticks = [int(x) for x in fields]
    steal = ticks[STEAL_FIELD] if len(ticks) > STEAL_FIELD else 0
    return sum(ticks[i] for i in BUSY_FIELDS) * TICK_S, steal * TICK_S


def read_process_cpu(pid, proc=Path("/proc")):
    """CPU s a process (all its threads) has used; None once it is gone."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command may contain spaces and parentheses: split after the last ')'.
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S  # utime, stime


class HostSampler:
    """Samples the host and one process; interval() gives what the others
    used since the previous sample."""

    def __init__(self, pid, proc=Path("/proc"), clock=time.monotonic):
        self.pid, self.proc, self.clock = pid, proc, clock
        self.last = self.first = self._sample()

    def _sample(self):
        busy, steal = read_host(self.proc)
        return {"t": self.clock(), "busy": busy, "steal": steal,
                "qemu": read_process_cpu(self.pid, self.proc)}

    @staticmethod
    def _delta(a, b):
        wall = b["t"] - a["t"]
        qemu = (b["qemu"] - a["qemu"]
                if a["qemu"] is not None and b["qemu"] is not None else None)
        busy = b["busy"] - a["busy"]
        steal = b["steal"] - a["steal"]
        return {"wall_s": round(wall, 3), "qemu_cpu_s": qemu and round(qemu, 3),
                "host_busy_cpu_s": round(busy, 3),
                "steal_s": round(steal, 3),
                # Average CPUs that everything but QEMU kept busy, steal
                # included: time the host's own hypervisor gave away is
                # time QEMU's vCPU threads could not run either.
                "other_cpus": (round((max(busy - qemu, 0) + steal) / wall, 3)
                               if qemu is not None and wall > 0 else None)}

    def interval(self):
        now = self._sample()
        out = self._delta(self.last, now)
        self.last = now
        return out

    def whole(self):
        """From the first sample to the last one taken."""
        return self._delta(self.first, self.last)
