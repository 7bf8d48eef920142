# SPDX-License-Identifier: GPL-2.0
"""The results channel when the console is the only one (guest/init's
mutexlab.channel=console: a LAVA device, a farm's serial line).

The guest frames each line of its results "mutexlab| LINE" and its exit
status "mutexlab-exit| N" on the console, between the kernel's messages.
A kernel message may be printed in the middle of a framed line (the console
takes it whenever it comes), so a frame is looked for anywhere in a line,
not only at its start: what comes after the marker is the guest's.
"""
import re

RESULTS_FRAME = "mutexlab| "
EXIT_FRAME = "mutexlab-exit| "
# The exit frame's marker contains no "mutexlab| ": either matches alone.
FRAME = re.compile(r"mutexlab(?P<exit>-exit)?\| (?P<text>.*)$")


def unframe(line):
    """("results", text), ("exit", status), or None for a line of the
    kernel's own."""
    m = FRAME.search(line)
    if not m:
        return None
    return ("exit", m.group("text").strip()) if m.group("exit") else ("results", m.group("text"))


def split(lines):
    """(the results channel's lines, the exit status or "", the kernel's own
    lines) of a console."""
    results, status, kernel = [], "", []
    for line in lines:
        frame = unframe(line.rstrip("\r\n"))
        if frame is None:
            kernel.append(line)
        elif frame[0] == "results":
            results.append(frame[1])
        else:
            status = frame[1]
    return results, status, kernel
