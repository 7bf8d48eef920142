# SPDX-License-Identifier: GPL-2.0
"""The instruction behind a data watchpoint's trap.

An x86 data breakpoint is a trap: the address the guest reports is that of
the instruction after the access. The access is the instruction that ends
there, found by disassembling the function from its start (x86 cannot be
decoded backwards) in the kernel that ran.
"""
import functools
import re
import subprocess

FRAME = re.compile(r"^(?P<func>[\w.]+)\+0x(?P<off>[0-9a-f]+)/0x[0-9a-f]+$")
INSN = re.compile(r"^\s*(?P<addr>[0-9a-f]+):\s+(?P<text>\S.*)$")


@functools.lru_cache(maxsize=4)
def symbol_table(vmlinux):
    """{name: address} of vmlinux, read once per kernel: a set's hits share
    it."""
    out = subprocess.run(["nm", vmlinux], capture_output=True, text=True,
                         check=True).stdout
    table = {}
    for parts in map(str.split, out.splitlines()):
        # A static name in several files: the first, as nm lists them.
        if len(parts) == 3:
            table.setdefault(parts[2], int(parts[0], 16))
    return table


def symbol_address(vmlinux, func):
    return symbol_table(vmlinux).get(func)


def instructions(vmlinux, start, stop):
    """[(address, text)] of the code in [start, stop)."""
    out = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", f"--start-address={start:#x}",
         f"--stop-address={stop:#x}", vmlinux],
        capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        m = INSN.match(line)
        if m and not m.group("text").startswith("<"):
            found.append((int(m.group("addr"), 16), m.group("text").strip()))
    return found


def access_before(vmlinux, trapped_at):
    """"func+0xOFF: instruction" of the access that trapped at trapped_at
    ("func+0xOFF/0xLEN", as %pS prints it), or None where that cannot be
    told (a module's symbol, a vmlinux without it)."""
    m = FRAME.match(trapped_at or "")
    if not m:
        return None
    start = symbol_address(vmlinux, m.group("func"))
    if start is None:
        return None
    trap = start + int(m.group("off"), 16)
    before = instructions(vmlinux, start, trap)
    if not before:
        return None
    addr, text = before[-1]
    return f"{m.group('func')}+{addr - start:#x}: {' '.join(text.split())}"
