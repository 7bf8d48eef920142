#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make import: a run made elsewhere, as an ordinary result set.

Usage: lab/import_run.py RUN_DIR [--results-dir DIR]
       lab/import_run.py LAVA_LOG --bundle BUNDLE_DIR [--results-dir DIR]

RUN_DIR is what a bundle's run.sh wrote on another host (guest/run_bundle.sh:
console.log, results.raw or results framed on the console, guest-status,
qemu-status, host.txt, and the bundle's manifest.json, kernel.config and
qemu.args). LAVA_LOG is the log of a LAVA job made by make lava-job from
BUNDLE_DIR (lava-run's output, or the server's job log as YAML): its
console lines are the run's console, whose framed results are the set's. The set goes to RESULTS_DIR/<variant>/<UTC time>-<host>-import,
judged as the runner judges a boot of its own (guest/qemu_runner.py), its
results parsed as make bench parses them, its manifest the bundle's with the
run's outcome, its guest, the host it ran on (not this one) and where it
came from. Prints the set's path; exit status 1 when the run failed (the set
is kept, as make bench keeps a failed one), 2 when RUN_DIR is not a run.
"""
import argparse
import json
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import yaml

import settings
from manifest import run_fields

LAB_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(LAB_ROOT / "guest"))
sys.path.insert(0, str(LAB_ROOT / "analysis"))
import console_frames  # noqa: E402
import qemu_runner  # noqa: E402
import results  # noqa: E402
from sets import SCHEMA_VERSION, new_set_dir, write_atomic  # noqa: E402

RUN_FILES = ("console.log", "host.txt", "manifest.json", "kernel.config", "qemu.args")
# timeout(1)'s status when the watchdog stopped QEMU.
WATCHDOG_STATUS = 124


class NotARun(Exception):
    pass


def read_host(path):
    """host.txt (tab-separated key and value lines) as a manifest's host."""
    host = dict(line.split("\t", 1) for line in Path(path).read_text().splitlines()
                if "\t" in line)
    host["cpus"] = int(host["cpus"]) if host.get("cpus", "").isdigit() else None
    return host


def judge(run_dir, out):
    """run.json's content for the run in run_dir, whose channel files are
    now in out: how it ended, as qemu_runner judges a boot."""
    console = qemu_runner.read_text(run_dir / "console.log").splitlines()
    if not (run_dir / "results.raw").exists():
        framed, status, console = console_frames.split(console)
        (out / "results.raw").write_text("".join(f"{line}\n" for line in framed))
    else:
        shutil.copy(run_dir / "results.raw", out / "results.raw")
        status = qemu_runner.read_text(run_dir / "guest-status").strip()
    qemu_status = qemu_runner.read_text(run_dir / "qemu-status").strip()
    seen = "timeout" if qemu_status == str(WATCHDOG_STATUS) else None
    failures = [line for line in console if qemu_runner.failure_line(line)]
    shutil.copy(run_dir / "qemu.log", out / "qemu.log")
    outcome, failures = qemu_runner.how_it_ended(
        seen, failures, int(qemu_status or 0), status, out)
    return {"outcome": outcome, "failure_lines": failures[:40],
            "guest_exit_status": status or None,
            "qemu_returncode": int(qemu_status) if qemu_status.lstrip("-").isdigit() else None}


def check_run(run_dir):
    """The bundle's manifest of a run folder; NotARun when it is not one."""
    check_run_files(run_dir, RUN_FILES)
    return json.loads((Path(run_dir) / "manifest.json").read_text())


def plan(run_dir, results_dir, shown):
    bundle = check_run(run_dir)
    host = read_host(Path(run_dir) / "host.txt")
    return (f"plan: make import of {shown} (dry run: nothing written)\n"
            f"  {bundle['variant']} ({bundle['profile']}), run on {host.get('hostname')}:"
            f" {host.get('cpu_model')} x{host.get('cpus')}\n"
            f"  result set: {results_dir}/{bundle['variant']}/<UTC time>-"
            f"{host.get('hostname')}-import")


def console_of_lava_log(text):
    """The device's console lines in a LAVA job log (one YAML mapping a line;
    the console's lines are those of level target and feedback). LAVA
    writes every '"' of the console as '\\"' and drops carriage returns."""
    lines = []
    for entry in text.splitlines():
        # lava-run prints "{...}" lines; a server's job log is a YAML list,
        # "- {...}" (lavacli jobs logs --raw).
        entry = entry.removeprefix("- ")
        record = yaml.safe_load(entry) if entry.startswith("{") else None
        if isinstance(record, dict) and record.get("lvl") in ("target", "feedback"):
            lines.append(str(record.get("msg", "")).replace('\\"', '"'))
    return lines


def lava_run_folder(log, bundle, work):
    """A run folder, as run.sh would have written it, from a LAVA job's log
    and the bundle it ran."""
    bundle, work = Path(bundle), Path(work)
    check_run_files(bundle, ("manifest.json", "kernel.config", "qemu.args"))
    console = console_of_lava_log(Path(log).read_text())
    if not console:
        raise NotARun(f"{log} holds no console lines of a LAVA job")
    (work / "console.log").write_text("".join(f"{line}\n" for line in console))
    for name in ("manifest.json", "kernel.config", "qemu.args"):
        shutil.copy(bundle / name, work / name)
    # The worker's CPUs are not in the log; the guest's model is the host's
    # under KVM (-cpu host) and QEMU's own under TCG.
    model = next((line.split(":", 1)[1].strip() for line in console
                  if line.startswith("mutexlab-init: cpu:")), "unknown")
    (work / "host.txt").write_text(f"hostname\tlava\ncpus\t?\ncpu_model\t{model}\n")
    (work / "qemu.log").write_text("")
    (work / "qemu-status").write_text("0\n")
    return {"kind": "LAVA job", "log": str(Path(log).resolve()),
            "definition": str((bundle / "lava-job.yaml").resolve())}


def check_run_files(folder, names):
    missing = [f for f in names if not (Path(folder) / f).is_file()]
    if missing:
        raise NotARun(f"{folder} is not a bundle's run: no {', '.join(missing)}")


def import_run(run_dir, results_dir, source=None):
    run_dir = Path(run_dir)
    bundle = check_run(run_dir)
    host = read_host(run_dir / "host.txt")
    out = new_set_dir(Path(results_dir) / bundle["variant"],
                      f"{host.get('hostname') or 'unknown'}-import")
    for f in ("console.log", "kernel.config"):
        shutil.copy(run_dir / f, out / f)
    qemu = qemu_runner.read_bundle_args(run_dir / "qemu.args")
    run = judge(run_dir, out)
    run.update(accel=qemu["accel"], accel_reason="the bundle's", vcpus=qemu["vcpus"],
               append=qemu["append"])
    (out / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    (out / "qemu-cmd.json").write_text(json.dumps(
        ["qemu-system-x86_64", *(run_dir / "qemu.args").read_text().splitlines()],
        indent=1) + "\n")
    # As make bench writes it (analysis/results.py), without host intervals.
    parsed = results.parse_run(out / "results.raw", qemu["vcpus"])
    write_atomic(out / "results.json", json.dumps(parsed, indent=1) + "\n")
    # The bundle's build, this run's boot (lab/manifest.py), the run's host.
    manifest = {
        **bundle, **run_fields(out), "schema_version": SCHEMA_VERSION, "vcpus": qemu["vcpus"],
        "host": host, "built_on": bundle.get("host"),
        "imported": {"by": socket.gethostname(),
                     **(source or {"kind": "bundle run", "from": str(run_dir.resolve())})},
    }
    write_atomic(out / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    return out, manifest["outcome"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir", help="a bundle's run folder, or a LAVA job's log with --bundle")
    ap.add_argument("--bundle", help="the bundle a LAVA job ran (make lava-job)")
    ap.add_argument("--results-dir", default=settings.default("RESULTS_DIR", "import"))
    ap.add_argument("--dry-run", action="store_true",
                    help="check that RUN_DIR is a run and print the plan; write nothing")
    args = ap.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="mutexlab-lava.") as work:
            run_dir, source = args.run_dir, None
            if args.bundle:
                source = lava_run_folder(args.run_dir, args.bundle, work)
                run_dir = work
            if args.dry_run:
                print(plan(run_dir, args.results_dir, args.run_dir))
                return 0
            out, outcome = import_run(run_dir, args.results_dir, source)
    except (NotARun, OSError, ValueError, KeyError) as e:
        print(f"mutexlab: error: cannot import {args.run_dir}: {e}", file=sys.stderr)
        return 2
    print(f"mutexlab: imported {args.run_dir} as {out} (outcome {outcome})", file=sys.stderr)
    print(out)
    return 0 if outcome == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
