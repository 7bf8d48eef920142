#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Write manifest.json: everything needed to know what a result set measured.

Called by lab/bench.sh with what only it knows (variant, patches, config
fragments, run parameters); the rest is read from the result folder (run.json,
results.json, qemu-cmd.json, kernel.config, steps.txt) and the host.
"""
import argparse
import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "analysis"))
from sets import SCHEMA_VERSION, write_atomic  # noqa: E402

REQUIRED_KEYS = (
    "variant", "profile", "outcome", "series", "series_sha256",
    "config_fragments", "kernel_config_sha256", "guest_uname",
    "debian_source_version", "lab_revision", "lab_dirty", "qemu_command",
    "accel", "vcpus", "host", "parameters", "durations_s", "written_utc",
    "sizeof_mutex", "mutex_text_bytes",
)


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_json(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def git(lab_root, *args):
    try:
        return subprocess.run(["git", "-C", str(lab_root), *args],
                              capture_output=True, text=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def lab_state(lab_root, out):
    """Revision of the lab and its uncommitted diff, saved beside."""
    revision = (git(lab_root, "rev-parse", "HEAD") or "").strip() or None
    diff = git(lab_root, "diff", "HEAD") or ""
    untracked = git(lab_root, "ls-files", "--others", "--exclude-standard") or ""
    dirty = bool(diff or untracked)
    if diff:
        (out / "lab.diff").write_text(diff)
    return revision, dirty, untracked.split()


def host_info(cpuinfo="/proc/cpuinfo"):
    model = "unknown"
    for line in Path(cpuinfo).read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {"hostname": socket.gethostname(), "cpu_model": model,
            "cpus": os.cpu_count(), "kernel": platform.release()}


def text_size(obj):
    """Bytes of code in an object file: every .text* section, or None.
    Most of the mutex is __sched, which lives in .sched.text, not .text."""
    try:
        out = subprocess.run(["size", "-A", str(obj)], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    total = None
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        if fields[0].startswith(".text") or fields[0].endswith(".text"):
            total = (total or 0) + int(fields[1])
    return total


def read_steps(path):
    steps = {}
    try:
        for line in Path(path).read_text().splitlines():
            name, secs = line.split()
            steps[name] = float(secs)
    except OSError:
        pass
    return steps


def run_fields(out):
    """What a set's manifest says of its boot(s), from the set's run.json,
    results.json, verdict.json and qemu-cmd.json: the outcome, the guest,
    the accelerator. make import writes them too, onto a bundle's manifest."""
    run = load_json(out / "run.json") or {}
    results = load_json(out / "results.json") or {}
    meta = results.get("meta") or {}
    # A make check set: one boot per check, judged in verdict.json.
    verdict = load_json(out / "verdict.json")
    if verdict:
        meta = verdict.get("meta") or {}
    outcome = run.get("outcome", "not-run")
    if outcome == "ok" and results.get("problems"):
        outcome = "failed-checks"
    if verdict:
        outcome = verdict["outcome"]
    return {
        "outcome": outcome,
        "problems": results.get("problems", []),
        "failure_lines": run.get("failure_lines", []),
        "guest_uname": (f"{meta['uname_r']} {meta['uname_v']}"
                        if meta else None),
        "guest_online_cpus": meta.get("online_cpus"),
        "sizeof_mutex": meta.get("sizeof_mutex"),
        # None, not 0, on kernels without the lab's instrumentation.
        "release_window_ns": meta.get("release_window_ns"),
        "lock_events_available": (
            any(p.get("lock_events") is not None
                for p in results.get("points", [])) if meta else None),
        "module_params": meta.get("params"),
        "verdict": verdict.get("verdict") if verdict else None,
        "qemu_command": load_json(out / "qemu-cmd.json"),
        "accel": run.get("accel"),
        "accel_reason": run.get("accel_reason"),
        "written_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def build_manifest(out, params):
    run = load_json(out / "run.json") or {}
    revision, dirty, untracked = lab_state(params["lab_root"], out)
    config = out / "kernel.config"
    return {
        "variant": params["variant"],
        "profile": params["profile"],
        **run_fields(out),
        "series": [{"name": Path(p).name, "sha256": sha256(p)}
                   for p in params["patches"]],
        "series_sha256": params["series_sha256"],
        "config_fragments": [{"name": str(Path(p).relative_to(params["lab_root"])),
                              "sha256": sha256(p)}
                             for p in params["fragments"]],
        "kernel_config_sha256": sha256(config) if config.exists() else None,
        "mutex_text_bytes": text_size(params["mutex_object"]),
        "debian_source_version": params["debian_source_version"],
        "lab_revision": revision,
        "lab_dirty": dirty,
        "lab_untracked": untracked,
        "vcpus": run.get("vcpus", params["parameters"].get("vcpus")),
        "host": host_info(),
        "parameters": params["parameters"],
        "durations_s": {**read_steps(out / "steps.txt"),
                        "guest_wall": run.get("wall_s"),
                        "boot_to_first_result": run.get("boot_to_first_result_s")},
    }


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("result_dir", type=Path)
    ap.add_argument("--lab-root", required=True)
    ap.add_argument("--variant", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--series-sha256", required=True)
    ap.add_argument("--debian-source-version", required=True)
    ap.add_argument("--mutex-object", required=True,
                    help="the build's kernel/locking/mutex.o")
    ap.add_argument("--patch", action="append", default=[], dest="patches")
    ap.add_argument("--fragment", action="append", default=[],
                    dest="fragments")
    ap.add_argument("--param", action="append", default=[],
                    help="NAME=VALUE, one per run parameter")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    params = vars(args)
    params["parameters"] = dict(p.split("=", 1) for p in args.param)
    manifest = {"schema_version": SCHEMA_VERSION, **build_manifest(args.result_dir, params)}
    try:
        write_atomic(args.result_dir / "manifest.json",
                     json.dumps(manifest, indent=1) + "\n")
    except OSError as e:
        print(f"mutexlab: error: cannot write {args.result_dir / 'manifest.json'}:"
              f" {e.strerror} (is the disk full?)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
