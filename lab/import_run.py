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
is kept, as make bench keeps a failed one), 2 when RUN_DIR is not a run, 5
on an internal error of the lab.

What comes from another host is untrusted: every file must be a regular
file (no link, device or pipe) of bounded size; the variant and host name
that become folder names must be names, and the variant one of this lab's
whose series the manifest records; YAML is read without aliases; the
manifest and the results must pass the sets' schema (analysis/schemas/).
Any failure is exit 2 naming the file, and leaves no folder behind.
"""
import argparse
import json
import re
import shutil
import socket
import stat
import sys
import tempfile
import traceback
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
from sets import (SCHEMA_VERSION, BadSet, check_schema, new_set_dir, read_json,  # noqa: E402
                  write_atomic)

RUN_FILES = ("console.log", "host.txt", "manifest.json", "kernel.config", "qemu.args")
# What the run folder may hold besides them.
OPTIONAL_RUN_FILES = ("results.raw", "guest-status", "qemu-status", "qemu.log")
# A run's file beyond this is not a run's (a console log of a default
# sweep is well under 1 MB).
MAX_RUN_FILE_BYTES = 64 << 20
# As VARIANT (lab/lib.sh require_name): what may become a folder name.
NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")
# timeout(1)'s status when the watchdog stopped QEMU.
WATCHDOG_STATUS = 124


class NotARun(Exception):
    pass


def regular_file(path):
    """path, when it is a regular file (not a link, device or pipe) of at
    most MAX_RUN_FILE_BYTES; NotARun naming it otherwise."""
    path = Path(path)
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise NotARun(f"{path} is missing") from None
    if not stat.S_ISREG(info.st_mode):
        raise NotARun(f"{path} is not a regular file (a link, device or pipe is refused)")
    if info.st_size > MAX_RUN_FILE_BYTES:
        raise NotARun(f"{path} is larger than {MAX_RUN_FILE_BYTES >> 20} MB: not a run's file")
    return path


def checked_name(value, what, path):
    """value, when it can be a folder name; NotARun naming path otherwise."""
    if not isinstance(value, str) or not NAME.fullmatch(value) or value in (".", ".."):
        raise NotARun(f"{path}: {what} {value!r} is not a name (letters, digits, . _ -)")
    return value


def variant_patches(variant):
    """The patch names of this lab's variant (its own folder's), or None
    when the lab has no such variant."""
    folder = LAB_ROOT / "variants" / variant
    return {p.name for p in folder.glob("*.patch")} if folder.is_dir() else None


def check_variant(manifest, path):
    """The manifest's variant must be this lab's, and the series it
    records must hold that variant's patches: a manifest that names
    another variant than its build's is refused."""
    variant = checked_name(manifest.get("variant"), "variant", path)
    own = variant_patches(variant)
    if own is None:
        raise NotARun(f"{path}: variant {variant!r} is not one of this lab's (variants/)")
    recorded = {entry.get("name") for entry in manifest.get("series") or []
                if isinstance(entry, dict)}
    if own and not own <= recorded:
        raise NotARun(f"{path}: its series is not {variant}'s (it lacks "
                      f"{', '.join(sorted(own - recorded))})")
    return variant


class NoAliasLoader(yaml.SafeLoader):
    """YAML without anchors' aliases: a 484-byte line of nested aliases
    expanded into gigabytes (a LAVA log line never uses them)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise NotARun("a YAML alias (refused: aliases can expand without bound)")
        return super().compose_node(parent, index)


def read_host(path):
    """host.txt (tab-separated key and value lines) as a manifest's host,
    its hostname a name (it becomes part of the set's folder)."""
    host = dict(line.split("\t", 1) for line in regular_file(path).read_text().splitlines()
                if "\t" in line)
    cpus = host.get("cpus", "")
    host["cpus"] = int(cpus) if cpus.isdigit() and len(cpus) < 7 else None
    checked_name(host.get("hostname") or "unknown", "hostname", path)
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
    for name in OPTIONAL_RUN_FILES:
        if (Path(run_dir) / name).exists() or (Path(run_dir) / name).is_symlink():
            regular_file(Path(run_dir) / name)
    path = Path(run_dir) / "manifest.json"
    try:
        manifest = read_json(path)
        check_schema(manifest, "manifest", path)
    except BadSet as e:
        raise NotARun(str(e)) from None
    check_variant(manifest, path)
    return manifest


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
        record = yaml.load(entry, Loader=NoAliasLoader) if entry.startswith("{") else None
        if isinstance(record, dict) and record.get("lvl") in ("target", "feedback"):
            lines.append(str(record.get("msg", "")).replace('\\"', '"'))
    return lines


def lava_run_folder(log, bundle, work):
    """A run folder, as run.sh would have written it, from a LAVA job's log
    and the bundle it ran."""
    bundle, work = Path(bundle), Path(work)
    check_run_files(bundle, ("manifest.json", "kernel.config", "qemu.args"))
    try:
        console = console_of_lava_log(regular_file(log).read_text())
    except NotARun as e:
        raise NotARun(f"{log}: {e}") from None
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
    missing = [f for f in names if not (Path(folder) / f).exists()
               and not (Path(folder) / f).is_symlink()]
    if missing:
        raise NotARun(f"{folder} is not a bundle's run: no {', '.join(missing)}")
    for name in names:
        regular_file(Path(folder) / name)


def import_run(run_dir, results_dir, source=None):
    """The imported set's folder and outcome; NotARun when the run is not
    one (no folder is left behind)."""
    run_dir = Path(run_dir)
    bundle = check_run(run_dir)
    host = read_host(run_dir / "host.txt")
    variant_dir = Path(results_dir) / bundle["variant"]
    if variant_dir.is_symlink():
        raise NotARun(f"{variant_dir} is a link: a set would leave {results_dir}")
    out = new_set_dir(variant_dir, f"{host.get('hostname') or 'unknown'}-import")
    try:
        return out, write_set(run_dir, out, bundle, host, source)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise


def write_set(run_dir, out, bundle, host, source):
    """The set's files in out, from the run in run_dir; its outcome."""
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
    bad = [p for p in parsed["problems"] if ": bad record (" in p or ": bad JSON (" in p]
    if bad:
        raise NotARun(f"{run_dir / 'results.raw'}: {bad[0]}")
    try:
        check_schema(json.loads(json.dumps(parsed)), "results", run_dir / "results.raw")
    except BadSet as e:
        raise NotARun(str(e)) from None
    write_atomic(out / "results.json", json.dumps(parsed, indent=1) + "\n")
    # The bundle's build, this run's boot (lab/manifest.py), the run's host.
    manifest = {
        **bundle, **run_fields(out), "schema_version": SCHEMA_VERSION, "vcpus": qemu["vcpus"],
        "host": host, "built_on": bundle.get("host"),
        "imported": {"by": socket.gethostname(),
                     **(source or {"kind": "bundle run", "from": str(run_dir.resolve())})},
    }
    write_atomic(out / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    return manifest["outcome"]


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
    except (NotARun, OSError, ValueError, KeyError, yaml.YAMLError) as e:
        print(f"mutexlab: error: cannot import {args.run_dir}: {e}", file=sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - a bug: never 1, "the run failed"
        traceback.print_exc()
        print("mutexlab: internal error (the traceback above is the lab's bug)",
              file=sys.stderr)
        return 5
    print(f"mutexlab: imported {args.run_dir} as {out} (outcome {outcome})", file=sys.stderr)
    print(out)
    return 0 if outcome == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
