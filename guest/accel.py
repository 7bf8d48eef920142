# SPDX-License-Identifier: GPL-2.0
"""The guest's accelerator: KVM only where it really runs the lab's kernel,
TCG otherwise, and the delay-loop preset a TCG guest needs. Used by
guest/qemu_runner.py."""
import ctypes
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# How often a probe looks at the console.
PROBE_POLL_S = 0.1
PR_SET_PDEATHSIG = 1


def die_with_parent():
    """In QEMU, before exec: SIGKILL when the runner dies, however it dies,
    so that no guest outlives the run that started it."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


KVM_PROBE_LIMIT_S = 3.0
# A boot sector that writes 0x31 to isa-debug-exit: QEMU exits with 99 only
# if a vCPU really ran guest code.
KVM_PROBE_SECTOR = b"\xb0\x31\xe6\xf4\xf4".ljust(510, b"\0") + b"\x55\xaa"
KVM_PROBE_EXIT = (0x31 << 1) | 1


def probe_kvm(qemu, cache_dir):
    """Return (usable, reason). /dev/kvm can exist and still not run guests
    (here: kvm_pvm, which takes seconds per BIOS boot), so the probe runs
    real guest code under a time limit. Cached per host boot."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm not accessible"
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    cache = Path(cache_dir) / "kvm-probe.json"
    try:
        cached = json.loads(cache.read_text())
        if cached.get("boot_id") == boot_id:
            return cached["usable"], cached["reason"] + " (cached this boot)"
    except (OSError, ValueError, KeyError):
        pass
    sector = Path(cache_dir) / "kvm-probe.bin"
    sector.parent.mkdir(parents=True, exist_ok=True)
    sector.write_bytes(KVM_PROBE_SECTOR)
    cmd = [qemu, "-accel", "kvm", "-machine", "pc", "-nodefaults",
           "-display", "none", "-no-reboot",
           "-drive", f"format=raw,file={sector},if=floppy",
           "-device", "isa-debug-exit,iobase=0xf4,iosize=4"]
    try:
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            timeout=KVM_PROBE_LIMIT_S).returncode
        usable = rc == KVM_PROBE_EXIT
        reason = f"KVM probe exited {rc}" + ("" if usable else ", expected 99")
    except subprocess.TimeoutExpired:
        usable = False
        reason = f"KVM probe ran no guest code within {KVM_PROBE_LIMIT_S:g}s"
    cache.write_text(json.dumps({"boot_id": boot_id, "usable": usable,
                                 "reason": reason}))
    return usable, reason


# The lab's kernel prints "Linux version" within about a second under KVM;
# some hosts run the boot sector above under KVM but never a Linux kernel.
KVM_KERNEL_PROBE_S = 20.0
KVM_KERNEL_FIRST_LINE = b"Linux version"


def probe_kvm_kernel(qemu, kernel, initrd, cache_dir, limit_s=None):
    """Return (usable, reason): whether this kernel reaches its first
    console line under KVM within limit_s (KVM_KERNEL_PROBE_S). Cached per
    host boot and kernel: only a real boot of the lab's own kernel proves
    KVM."""
    limit_s = limit_s or KVM_KERNEL_PROBE_S
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    kernel_sha = hashlib.sha256(Path(kernel).read_bytes()).hexdigest()
    cache = Path(cache_dir) / "kvm-kernel-probe.json"
    try:
        cached = json.loads(cache.read_text())
        if (cached.get("boot_id"), cached.get("kernel_sha256")) == (boot_id, kernel_sha):
            return cached["usable"], cached["reason"] + " (cached this boot)"
    except (OSError, ValueError, KeyError):
        pass
    with tempfile.TemporaryDirectory(prefix="mutexlab-kvm-") as tmp:
        console = Path(tmp) / "console.log"
        cmd = [qemu, "-accel", "kvm", "-cpu", "host", "-machine", "pc",
               "-smp", "1", "-m", "256", "-nodefaults", "-display", "none",
               "-no-reboot", "-kernel", str(kernel), "-initrd", str(initrd),
               "-append", "console=ttyS0 earlyprintk=serial panic=-1",
               "-chardev", f"file,id=console,path={console}",
               "-serial", "chardev:console"]
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                                preexec_fn=die_with_parent)
        try:
            while time.monotonic() - start < limit_s and proc.poll() is None:
                if console.exists() and KVM_KERNEL_FIRST_LINE in console.read_bytes():
                    break
                time.sleep(PROBE_POLL_S)
            seen = console.exists() and KVM_KERNEL_FIRST_LINE in console.read_bytes()
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    took = time.monotonic() - start
    usable = bool(seen)
    reason = (f"the kernel printed its first line under KVM in {took:.1f}s" if usable
              else f"the kernel printed nothing under KVM in {took:.0f}s "
                   f"(QEMU exit {proc.returncode}), though a boot sector ran")
    cache.write_text(json.dumps({"boot_id": boot_id, "kernel_sha256": kernel_sha,
                                 "usable": usable, "reason": reason}))
    return usable, reason


def choose_accel(requested, qemu, cache_dir, kernel, initrd):
    """KVM only when a boot sector runs under it and then the lab's own
    kernel prints its first console line under it; TCG otherwise, with the
    reason. TCG with icount (the guest's clock counting instructions) only
    when asked for."""
    if requested in ("tcg", "icount"):
        return requested, "requested"
    usable, reason = probe_kvm(qemu, cache_dir)
    if usable:
        usable, reason = probe_kvm_kernel(qemu, kernel, initrd, cache_dir)
    if requested == "kvm" and not usable:
        sys.exit(f"mutexlab: error: ACCEL=kvm requested but {reason}")
    return ("kvm" if usable else "tcg"), reason


def kernel_hz(kernel):
    """CONFIG_HZ of the kernel whose build folder holds bzImage."""
    # bzImage is arch/x86/boot/bzImage in the build folder.
    config = Path(kernel).resolve().parent.parent.parent.parent / ".config"
    for line in config.read_text().splitlines():
        if line.startswith("CONFIG_HZ="):
            return int(line.split("=", 1)[1])
    return None


def tcg_lpj(kernel, cpuinfo="/proc/cpuinfo"):
    """A delay-loop preset (lpj=) for a TCG guest, or None.

    Under TCG the guest's TSC is the host's, and udelay()/mdelay() count TSC
    cycles, loops_per_jiffy of them per tick. The boot CPU derives that from
    the TSC frequency; the others calibrate against the timer, which fails
    on a busy host: a secondary vCPU was seen at 4 BogoMIPS instead of 4192,
    its mdelay(20) lasting 20 us. The host's TSC frequency, when it is
    constant, gives every vCPU the boot CPU's value."""
    try:
        hz = kernel_hz(kernel)
        text = Path(cpuinfo).read_text()
    except OSError:
        return None
    flags = re.search(r"^flags\s*:(.*)$", text, re.M)
    mhz = re.search(r"^cpu MHz\s*:\s*([\d.]+)", text, re.M)
    if not (hz and flags and mhz and "constant_tsc" in flags.group(1).split()):
        return None
    return round(float(mhz.group(1)) * 1e6 / hz)
