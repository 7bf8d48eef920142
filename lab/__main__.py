# SPDX-License-Identifier: GPL-2.0
"""mutexlab: the lab's one command. Run from the lab's root (make does):

  python3 lab VERB [--dry-run]

Settings come from the environment, as make passes them (make help, or
lab/settings.toml). Each verb checks them, runs its job and prints, as the
last line of its standard output, what it made: the result set (regress
prints its report; lava-job the job's file). --dry-run (or
DRY_RUN=1) checks every setting and prints the plan: what would be built and
booted, with what, and where the set would go; nothing is built or booted.

  bench       one boot of VARIANT measuring the sweep      lab/bench.sh
  check       VARIANT's correctness checks, a boot each    lab/check.sh
  compare     VARIANTS interleaved, or SETS, side by side  lab/compare.sh
  regress     did NEW get slower than BASE? its exit status  analysis/regress.py
              is the verdict: 0 not slower (or cannot tell
              without STRICT=1), 1 slower, 2 bad input,
              3 nothing judged, 4 cannot tell with STRICT=1
  verify      the designs' SPIN models                     lab/verify.py
  calibrate   make regress's A/A false alarms and power    lab/calibrate_regress.sh
  bundle      make bench packed for another host           lab/bundle.sh
  import      RUN (a bundle's run, a LAVA log) as a set      lab/import_run.py
  lava-job    a LAVA job that runs BUNDLE on a qemu device lab/lava_job.py
  variants    the variants there are

The shell scripts hold the kernel plumbing (trees, builds, boots); the
analysis is the library in analysis/. This file is where a job is chosen,
its settings checked before anything runs, and its set named.
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import settings

LAB_ROOT = Path(__file__).resolve().parent.parent
PYTHON = "/usr/bin/python3"


def env_flag(name):
    return os.environ.get(name, "") not in ("", "0")


def regress_command(values, dry_run):
    if not values.get("BASE") or not values.get("NEW"):
        raise settings.SettingsError("make regress needs BASE=<result set|variant>[,...] "
                                     "and NEW=<result set|variant>")
    command = [PYTHON, str(LAB_ROOT / "analysis" / "regress.py"),
               "--threshold", values["THRESHOLD"]]
    for flag, name in (("--json", "REGRESS_JSON"), ("--rounds", "ROUNDS_FILE"),
                       ("--confirm", "CONFIRM")):
        if values.get(name):
            command += [flag, values[name]]
    for flag, name in (("--mix-machines", "MIX_MACHINES"), ("--strict", "STRICT")):
        if values.get(name) == "1":
            command.append(flag)
    return command + (["--dry-run"] if dry_run else []) + [values["BASE"], values["NEW"]]


def verify_command(values, dry_run):
    command = [PYTHON, str(LAB_ROOT / "lab" / "verify.py"),
               "--results-dir", values["RESULTS_DIR"]]
    if values.get("VARIANTS"):
        command += ["--variants", values["VARIANTS"]]
    return command + (["--dry-run"] if dry_run else [])


def import_command(values, dry_run):
    if not values.get("RUN"):
        raise settings.SettingsError("make import needs RUN=<the folder a bundle's run.sh "
                                     "wrote, or a LAVA job's log with BUNDLE=>")
    command = [PYTHON, str(LAB_ROOT / "lab" / "import_run.py"), values["RUN"],
               "--results-dir", values["RESULTS_DIR"]]
    if values.get("BUNDLE"):
        command += ["--bundle", values["BUNDLE"]]
    return command + (["--dry-run"] if dry_run else [])


def lava_job_command(values, dry_run):
    if not values.get("BUNDLE"):
        raise settings.SettingsError("make lava-job needs BUNDLE=<a bundle made with "
                                     "RESULTS_CHANNEL=console>")
    command = [PYTHON, str(LAB_ROOT / "lab" / "lava_job.py"), values["BUNDLE"]]
    if values.get("LAVA_URL"):
        command += ["--url", values["LAVA_URL"]]
    return command + (["--dry-run"] if dry_run else [])


def script(name):
    """A shell job: it reads its settings from the environment itself."""
    return lambda values, dry_run: [str(LAB_ROOT / "lab" / name)]


# verb: (its job in lab/settings.toml, or a tuple of jobs, command(settings,
# dry_run), whether the job names its set in RESULT_SET_FILE); a job
# without a set prints only its own output.
VERBS = {
    "bench": ("bench", script("bench.sh"), True),
    "check": ("check", script("check.sh"), True),
    "compare": ("compare", script("compare.sh"), True),
    "regress": ("regress", regress_command, False),
    "verify": ("verify", verify_command, True),
    "calibrate": (("calibrate", "bench"), script("calibrate_regress.sh"), True),
    "bundle": ("bench", script("bundle.sh"), True),
    "import": ("import", import_command, False),
    "lava-job": ("lava-job", lava_job_command, False),
    "variants": (None, lambda values, dry_run: [
        "bash", "-c", f"source '{LAB_ROOT}/lab/lib.sh' && list_variants"], False),
}


# What stops a job: each is passed on to it, and the lab waits for the job
# to finish its set as interrupted (a job's script passes it to the runner,
# which stops QEMU). Dying at once, as Python does on SIGTERM, orphaned the
# job's script and its QEMU, and left the set's manifest saying ok.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_job(command, env, stdout=None):
    """The job's exit status, once it has ended; a stopping signal that
    reaches the lab meanwhile is passed on to it (Ctrl-C reaches both
    from the terminal: the job is then told twice, which it takes as
    once)."""
    proc = subprocess.Popen(command, env=env, stdout=stdout)

    def forward(signum, _frame):
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        status = proc.wait()
        # Killed by a signal: the shell's way of saying so, 128 + N.
        return 128 - status if status < 0 else status
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run(verb, dry_run, check_only=False):
    """The verb's job, its settings checked first; its exit status.
    check_only: the settings alone (make checks them before it installs
    what a job needs)."""
    job, command_of, names_set = VERBS[verb]
    env = dict(os.environ)
    if dry_run:
        env["DRY_RUN"] = "1"
    try:
        # A job of several (calibrate boots make bench): each one's
        # settings are checked, the first job's values win.
        values = {}
        for one in (job if isinstance(job, tuple) else (job,) if job else ()):
            values = {**settings.resolve(one, env), **values}
        command = command_of(values, dry_run)
    except settings.SettingsError as e:
        print(f"mutexlab: error: {e}", file=sys.stderr)
        return 2
    if check_only:
        return 0
    if not names_set or dry_run:
        return run_job(command, env)
    with tempfile.NamedTemporaryFile("r", prefix="mutexlab-set.") as made:
        env["RESULT_SET_FILE"] = made.name
        # The job's own output goes to stderr: stdout ends with the set.
        status = run_job(command, env, stdout=sys.stderr)
        path = made.read().strip()
    if path:
        print(path)
    return status


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 lab", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("verb", choices=VERBS)
    parser.add_argument("--dry-run", action="store_true",
                        help="check every setting and print the plan; build and boot nothing")
    parser.add_argument("--check-settings", action="store_true",
                        help="check the settings alone; build, boot and print nothing")
    args = parser.parse_args(argv)
    return run(args.verb, args.dry_run or env_flag("DRY_RUN"), args.check_settings)


if __name__ == "__main__":
    sys.exit(main())
