#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The lab's settings table (lab/settings.toml): defaults, validation, and
the lists the Makefile, make help, the manifests and make regress use.

  lab/settings.py resolve JOB     the job's settings from the environment,
                                  defaults filled in, every value checked;
                                  NAME=VALUE records separated by NUL bytes
                                  (lab/lib.sh load_settings reads them), or
                                  the first problem on stderr and exit 1
  lab/settings.py names [--record JOB]
                                  every setting (make exports them), or those
                                  JOB's manifest records
  lab/settings.py default NAME JOB
                                  NAME's default for JOB, filled in
  lab/settings.py help JOB [--besides JOB2]
                                  one line per setting of JOB (not JOB2's)
  lab/settings.py c-defaults      the bench module's defaults, a C header
"""
import argparse
import os
import re
import sys
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import catalog

LAB_ROOT = Path(__file__).resolve().parent.parent
TABLE = Path(__file__).resolve().with_name("settings.toml")
JOBS = ("bench", "check", "build", "compare", "regress", "verify", "import",
        "lava-job", "calibrate")
TYPES = ("count", "counts", "flag", "choice", "power_of_two", "percent",
         "workloads", "checks", "text", "kernel_args", "checked")
DESTINATIONS = ("module", "qemu", "build", "host")
# Digits only, and few enough that a huge value is refused, not overflowed.
COUNT = re.compile(r"[0-9]{1,9}")
# A percentage >= 0 in plain decimals: no sign, exponent, inf or nan (nan
# compares false with every change and would hide every regression).
PERCENT = re.compile(r"[0-9]{1,3}(\.[0-9]{1,6})?")
# Kernel parameters as the lab passes them to QEMU's -append: words of
# key[=value] apart by single spaces; no newline, quote or backslash that
# the guest's command line or a shell would read otherwise.
KERNEL_ARG = re.compile(r"[A-Za-z0-9_.-]+(=[A-Za-z0-9_.,:/+=@%-]*)?")
# What extra kernel parameters may not replace without UNSAFE_APPEND=1:
# the lab's crash detection and console (qemu_runner.py BASE_APPEND, and
# what hides an oops from the console or replaces the lab's /init), and
# every mutexlab.* parameter but the module's test-only switches
# (mutexlab.test_*), which the lab never sets itself.
RESERVED_KERNEL_ARGS = ("console", "panic", "oops", "panic_on_warn", "hung_task_panic",
                        "sysctl.kernel.hung_task_timeout_secs", "loglevel", "quiet",
                        "rdinit", "init", "mutex_release_window_ns")


class SettingsError(ValueError):
    pass


@dataclass(frozen=True)
class Setting:
    name: str
    jobs: tuple
    type: str
    to: str
    help: str
    default: object = None
    quick: str = None
    full: str = None
    min: int = 0
    max: int = 999999999
    max_items: int = 1
    choices: tuple = ()
    why: str = ""
    record: tuple = ()
    comparable: bool = False
    requires: dict = None
    param: str = None

    def default_for(self, job):
        if isinstance(self.default, dict):
            return self.default.get(job)
        return self.default

    def problem(self, value):
        """Why value is refused, or None."""
        rng = f"from {self.min} to {self.max}" + (f" ({self.why})" if self.why else "")
        if self.type in ("count", "power_of_two"):
            if not COUNT.fullmatch(value) or not self.min <= int(value) <= self.max:
                return f"{self.name} must be an integer {rng}, got '{value}'"
            if self.type == "power_of_two" and int(value) & (int(value) - 1):
                return f"{self.name} must be a power of two, got '{value}'"
        elif self.type == "counts":
            items = value.split(",") if value else []
            if len(items) > self.max_items:
                return (f"{self.name} must be up to {self.max_items} comma-separated"
                        f" integers, got '{value}'")
            for item in items:
                if not COUNT.fullmatch(item) or not self.min <= int(item) <= self.max:
                    return f"{self.name}: '{item}' is not an integer {rng} (in '{value}')"
        elif self.type == "percent":
            if not PERCENT.fullmatch(value) or not self.min <= float(value) <= self.max:
                return f"{self.name} must be a percentage {rng}, got '{value}'"
        elif self.type == "kernel_args":
            for word in value.split(" ") if value else ():
                if not KERNEL_ARG.fullmatch(word):
                    return (f"{self.name}: {word!r} is not a kernel parameter "
                            "(key or key=value, letters, digits and _.,:/+=@%-, "
                            "one space between)")
        elif self.type == "flag" and value not in ("0", "1"):
            return f"{self.name} takes 0 or 1, got '{value}'"
        elif self.type == "choice" and value not in self.choices:
            return f"{self.name} must be {', '.join(self.choices)}, got '{value}'"
        elif self.type in ("workloads", "checks"):
            known = [e.name for e in (catalog.workloads() if self.type == "workloads"
                                      else catalog.checks())]
            sep = "," if self.type == "workloads" else None
            for name in value.split(sep):
                if name not in known:
                    return (f"{self.name}: unknown {self.type[:-1]} '{name}';"
                            f" {self.type}: {' '.join(known)}")
        return None


def build(entry):
    return catalog.table_entry(
        Setting, entry, f"setting {entry.get('name', '?')}", SettingsError,
        choices={"type": TYPES, "to": DESTINATIONS},
        subsets={"jobs": JOBS, "record": JOBS})


def parse(text):
    entries = tuple(build(e) for e in tomllib.loads(text).get("setting", []))
    names = [s.name for s in entries]
    if not entries or len(set(names)) != len(names):
        raise SettingsError(f"settings must be present and distinct: {names}")
    return entries


@lru_cache(maxsize=None)
def table():
    return parse(TABLE.read_text())


def of_job(job):
    return [s for s in table() if job in s.jobs]


def comparable():
    """The manifest parameters (lower case) two sets must agree on."""
    return tuple(s.name.lower() for s in table() if s.comparable)


def thread_sweep(vcpus):
    """The default thread counts: powers of two up to the vCPUs, the vCPUs
    themselves, then twice as many (waiters must sleep). 1, 2, 4 for 2
    vCPUs; 1, 2, 4, 8, 16 for 8; nine points for 128."""
    counts = {1 << i for i in range(vcpus.bit_length()) if 1 << i <= vcpus}
    return sorted(counts | {vcpus, 2 * vcpus})


def fill(template, values, job):
    """A default's placeholders, from the values resolved so far."""
    vcpus = int(values.get("VCPUS") or os.cpu_count() or 1)
    profile = values.get("PROFILE") or job
    places = {
        "nproc": str(os.cpu_count() or 1), "vcpus": str(vcpus),
        "2vcpus": str(2 * vcpus), "lab_root": str(LAB_ROOT),
        "thread_sweep": ",".join(map(str, thread_sweep(vcpus))),
        "guest_mem_mb": str(max(1024, 256 * vcpus)),
        "workloads": ",".join(w.name for w in catalog.workloads() if w.default),
        "checks": " ".join(catalog.default_checks(profile)),
    }
    return re.sub(r"\{(\w+)\}", lambda m: places[m.group(1)], template)


def preset(env):
    """quick, full or None: make bench's sweep size."""
    quick, full = env.get("QUICK") or "0", env.get("FULL") or "0"
    if quick == "1" and full == "1":
        raise SettingsError("QUICK=1 and FULL=1 exclude each other")
    return "quick" if quick == "1" else "full" if full == "1" else None


def resolve(job, env):
    """{name: value} of job's settings that have a default or a value,
    every value checked; SettingsError names the first bad one. An empty
    value counts as unset, as ${X:-default} reads it."""
    size = preset(env) if job == "bench" else None
    values = {}
    # VCPUS and PROFILE first: other defaults are made from them.
    order = sorted(of_job(job), key=lambda s: s.name not in ("VCPUS", "PROFILE"))
    for s in order:
        value = env.get(s.name) or None
        if value is None:
            default = getattr(s, size) if size and getattr(s, size) is not None else \
                s.default_for(job)
            if default is None:
                continue
            value = fill(default, values, job)
            if s.type == "counts":
                # QUICK's "1,{vcpus},{2vcpus}" at VCPUS=1 would run the
                # 1-thread point twice a repetition.
                value = ",".join(dict.fromkeys(value.split(",")))
        if s.type != "checked":
            problem = s.problem(value)
            if problem:
                raise SettingsError(problem)
        values[s.name] = value
    if values.get("UNSAFE_APPEND") != "1":
        for s in of_job(job):
            taken = reserved_kernel_args(values.get(s.name)) if s.type == "kernel_args" else []
            if taken:
                raise SettingsError(
                    f"{s.name} would replace the lab's own {' '.join(taken)}: "
                    "the manifest would not say what the guest ran, or a crash "
                    "would go unseen; UNSAFE_APPEND=1 allows it")
    for s in of_job(job):
        needed = (s.requires or {}).get(values.get(s.name), {})
        for other, value in needed.items():
            if other in values and values[other] != value:
                raise SettingsError(f"{s.name}={values[s.name]} needs {other}={value}, "
                                    f"got {other}={values[other]}")
    return {s.name: values[s.name] for s in of_job(job) if s.name in values}


def reserved_kernel_args(value):
    """The keys of value (kernel parameters) that are the lab's own."""
    keys = [word.split("=", 1)[0] for word in (value or "").split()]
    return [k for k in keys if k in RESERVED_KERNEL_ARGS
            or (k.startswith("mutexlab.") and not k.startswith("mutexlab.test_"))]


def default(name, job):
    """name's default for job, filled in; SettingsError when it has none."""
    found = [s for s in of_job(job) if s.name == name]
    if not found or found[0].default_for(job) is None:
        raise SettingsError(f"{name} has no default for {job} in {TABLE.name}")
    return fill(found[0].default_for(job), {}, job)


def c_defaults():
    """A C header: MUTEXLAB_DEFAULT_<PARAM> for each setting that names
    the module parameter it sets, its default for the first of bench and
    check it belongs to; a list also as a braced initializer with its
    length, MUTEXLAB_DEFAULT_NR_<PARAM>."""
    lines = ["/* SPDX-License-Identifier: GPL-2.0 */",
             f"/* Made by lab/settings.py c-defaults from lab/{TABLE.name}: do not edit. */",
             "#ifndef MUTEXLAB_DEFAULTS_H", "#define MUTEXLAB_DEFAULTS_H"]
    for s in table():
        if not s.param:
            continue
        job = "bench" if "bench" in s.jobs else "check"
        value = default(s.name, job)
        macro = f"MUTEXLAB_DEFAULT_{s.param.upper()}"
        if s.type == "counts":
            items = value.split(",")
            lines += [f"#define {macro} {{ {', '.join(items)} }}",
                      f"#define MUTEXLAB_DEFAULT_NR_{s.param.upper()} {len(items)}"]
        elif s.type in ("count", "power_of_two"):
            lines.append(f"#define {macro} {value}")
        else:
            lines.append(f"#define {macro} \"{value}\"")
    return "\n".join(lines + ["#endif"]) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("resolve")
    r.add_argument("job", choices=JOBS)
    n = sub.add_parser("names")
    n.add_argument("--record", choices=JOBS)
    d = sub.add_parser("default")
    d.add_argument("name")
    d.add_argument("job", choices=JOBS)
    h = sub.add_parser("help")
    h.add_argument("job", choices=JOBS)
    h.add_argument("--besides", choices=JOBS,
                   help="leave out the settings this job has too")
    sub.add_parser("c-defaults")
    args = ap.parse_args(argv)
    try:
        if args.command == "resolve":
            out = b"".join(f"{k}={v}".encode() + b"\0"
                           for k, v in resolve(args.job, os.environ).items())
            sys.stdout.buffer.write(out)
        elif args.command == "c-defaults":
            sys.stdout.write(c_defaults())
        elif args.command == "default":
            print(default(args.name, args.job))
        elif args.command == "names":
            print(" ".join(s.name for s in table()
                           if args.record is None or args.record in s.record))
        else:
            besides = {s.name for s in of_job(args.besides)} if args.besides else set()
            for s in of_job(args.job):
                if s.name in besides:
                    continue
                value = s.default_for(args.job)
                shown = (f" (default {fill(value, {}, args.job)})"
                         if value not in (None, "") else "")
                print(f"  {s.name}{shown}: {s.help}")
    except (SettingsError, catalog.CatalogError, tomllib.TOMLDecodeError) as e:
        print(f"mutexlab: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
