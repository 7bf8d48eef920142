#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make lava-job: a LAVA job that runs a bundle on a LAVA qemu device.

Usage: lab/lava_job.py BUNDLE_DIR [--url BASE_URL] [--device DEVICE.yaml]

The bundle must have been made with RESULTS_CHANNEL=console: a LAVA device
gives one serial line. The job deploys the bundle's kernel and initramfs to
tmpfs (the kernel's command line in its image_arg), boots them with the qemu
method, its vCPUs and memory in the job's context, -no-reboot added (the
guest's reboot is the end of the run), and turns the framed KTAP results
into LAVA test cases with a monitor; its timeouts are sized from the
bundle's watchdog. Writes BUNDLE_DIR/lava-job.yaml, checked against LAVA's
own job schema (lava_common, Debian's lava-common), and prints its path.
The images are file:// URLs of the bundle unless --url gives the address
the LAVA worker downloads the bundle's files from.

--device also writes the device configuration that a LAVA server renders
from its qemu device type for this job's context: what lava-run needs to
run the job here without a server (lava-run --device DEVICE.yaml).
"""
import argparse
import math
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "guest"))
import qemu_runner  # noqa: E402

# The console frames (guest/console_frames.py), as LAVA's monitor regexes.
# A test case's line must be whole (ending in its newline): the monitor
# matches while the line is still arriving.
MONITOR = {
    "name": "mutexlab",
    "start": r"mutexlab\| KTAP version 1",
    "end": r"mutexlab-exit\| ",
    "pattern": r"mutexlab\| (?P<result>ok|not ok) \d+ - (?P<test_case_id>[^\s#]+)[^\n]*\n",
    "fixupdict": {"ok": "pass", "not ok": "fail"},
}
# What the guest's /init prints first: the boot action is done then.
BOOT_PROMPT = "mutexlab-init: "


class NotABundle(Exception):
    pass


def qemu_settings(bundle):
    """(append, vcpus, memory MB, accel) of a bundle's qemu.args."""
    qemu = qemu_runner.read_bundle_args(Path(bundle) / "qemu.args")
    if qemu["serial_ports"] != 1:
        raise NotABundle(f"{bundle} gives the guest more than the console: make it "
                         "with RESULTS_CHANNEL=console for a LAVA device")
    return qemu["append"], qemu["vcpus"], qemu["mem_mb"], qemu["accel"]


def job(bundle, url=None):
    """The LAVA job definition (a dict) for a bundle."""
    bundle = Path(bundle).resolve()
    append, vcpus, memory, accel = qemu_settings(bundle)
    if '"' in append:
        raise NotABundle("the kernel command line holds a double quote")
    watchdog_s = int((bundle / "watchdog_s").read_text())
    minutes = max(2, math.ceil(watchdog_s / 60))
    base = url.rstrip("/") if url else f"file://{bundle}"
    variant = yaml.safe_load((bundle / "manifest.json").read_text())["variant"]
    return {
        "device_type": "qemu",
        "job_name": f"mutexlab {variant} ({bundle.name})",
        "priority": "medium",
        "visibility": "public",
        "timeouts": {"job": {"minutes": minutes + 10},
                     "action": {"minutes": minutes + 5}},
        "context": {"arch": "amd64", "memory": memory, "no_kvm": accel != "kvm",
                    "extra_options": [f"-smp {vcpus}", "-no-reboot"]},
        "actions": [
            {"deploy": {"to": "tmpfs", "timeout": {"minutes": 5}, "images": {
                "kernel": {"url": f"{base}/bzImage",
                           "image_arg": f'-kernel {{kernel}} -append "{append}"'},
                "ramdisk": {"url": f"{base}/initramfs.cpio",
                            "image_arg": "-initrd {ramdisk}"}}}},
            {"boot": {"method": "qemu", "media": "tmpfs",
                      "timeout": {"minutes": 5}, "prompts": [BOOT_PROMPT]}},
            {"test": {"timeout": {"minutes": minutes}, "monitors": [MONITOR]}},
        ],
    }


def device(job_definition):
    """The device configuration a LAVA server renders from its qemu device
    type (lava-server's qemu.jinja2 and base.jinja2) for this job's context:
    the parts the qemu boot and the monitor read."""
    context = job_definition["context"]
    options = ["-nographic", f"-m {context['memory']}", "-monitor none"]
    if not context.get("no_kvm"):
        options[:0] = ["-cpu host", "-enable-kvm"]
    return {
        "constants": {
            "posix": {"lava_test_sh_cmd": "/bin/sh", "lava_test_results_dir": "/lava-%s",
                      "lava_test_shell_file": "~/.bashrc"},
            "shutdown-message": "The system is going down for reboot NOW",
            "kernel-start-message": "Linux version [0-9]",
            "default-shell-prompt": "lava-test: # ",
            "spawn_maxread": "4092",
            "failure_retry": 1,
            "boot_retry": 1,
        },
        "parameters": {"pass": None},
        "available_architectures": ["amd64", "x86_64"],
        "actions": {
            "deploy": {"connections": {"serial": None}, "methods": {"image": {
                "parameters": {"guest": {"size": 512, "interface": "ide",
                                         "driveid": "lavatest"}}}}},
            "boot": {"connections": {"serial": None}, "methods": {"qemu": {
                "parameters": {
                    "command": "qemu-system-x86_64",
                    "boot_options": {"root": "/dev/ram0", "console": "ttyS0,115200",
                                     "boot_order": "c"},
                    "options": options,
                    "extra": context.get("extra_options", []),
                }}}},
        },
        "timeouts": {"actions": {"boot-qemu-image": {"minutes": 2}},
                     "connections": {"lava-test-shell": {"seconds": 10}}},
    }


def validate(job_definition):
    """LAVA's own job schema (lava_common.schemas); raises on a bad job."""
    from lava_common.schemas import validate as lava_validate
    lava_validate(job_definition, strict=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bundle")
    ap.add_argument("--url", help="where the LAVA worker downloads the bundle's files")
    ap.add_argument("--device", help="also write the device configuration for lava-run")
    ap.add_argument("--dry-run", action="store_true",
                    help="make and check the job, print it; write nothing")
    args = ap.parse_args(argv)
    try:
        definition = job(args.bundle, args.url)
        validate(definition)
        if args.dry_run:
            print(yaml.safe_dump(definition, sort_keys=False), end="")
            return 0
    except (NotABundle, OSError, ValueError) as e:
        print(f"mutexlab: error: {e}", file=sys.stderr)
        return 2
    except ImportError:
        print("mutexlab: error: lava-common is not installed (as root: make deps-test)",
              file=sys.stderr)
        return 2
    except Exception as e:  # voluptuous' Invalid: the schema's own words
        print(f"mutexlab: error: the job fails LAVA's schema: {e}", file=sys.stderr)
        return 2
    out = Path(args.bundle) / "lava-job.yaml"
    out.write_text(yaml.safe_dump(definition, sort_keys=False))
    if args.device:
        Path(args.device).write_text(yaml.safe_dump(device(definition), sort_keys=False))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
