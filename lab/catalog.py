#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The lab's workloads and checks (lab/catalog.toml), validated on load.

Python reads it with load(); the shell scripts with this file's commands,
which print plain tab-separated fields, one entry per line:

  lab/catalog.py checks [--profile P]   name runner runs_for expected_s
                                        release_window tcg_threads
  lab/catalog.py workloads [--default]  name threads sweeps_settings
  lab/catalog.py points-per-rep WORKLOADS SETTINGS THREAD_POINTS
  lab/catalog.py help                   the lists for make help
"""
import argparse
import sys
import tomllib
from dataclasses import MISSING, dataclass
from functools import lru_cache
from pathlib import Path

CATALOG = Path(__file__).resolve().with_name("catalog.toml")
PROPERTIES = ("mutual_exclusion", "free_safe", "free_safety_control")
PROFILES = ("check", "debug")


class CatalogError(ValueError):
    pass


@dataclass(frozen=True)
class Workload:
    name: str
    threads: str
    sweeps_settings: bool
    critical_section: str
    default: bool
    help: str

    CHOICES = {"threads": ("sweep", "one", "twice_cpus"),
               "critical_section": ("swept", "empty", "one_increment")}

    def points(self, settings, thread_points):
        """Points of one repetition, as the module runs them."""
        return ((settings if self.sweeps_settings else 1)
                * (thread_points if self.threads == "sweep" else 1))


@dataclass(frozen=True)
class Check:
    name: str
    runner: str
    property: str
    exercises: tuple
    runs_for: str
    expected_s: int
    release_window: bool
    tcg_threads: str
    profiles: tuple
    help: str
    module_tests: int = 0

    CHOICES = {"runner": ("module", "peer"), "property": PROPERTIES,
               "runs_for": ("check_ms", "peer_secs", "fixed"),
               "tcg_threads": ("multi", "single")}

    def expected_seconds(self, check_ms, peer_secs):
        return self.expected_s + {"check_ms": check_ms // 1000,
                                  "peer_secs": peer_secs,
                                  "fixed": 0}[self.runs_for]


def build(cls, entry, where):
    """One entry as cls, or CatalogError naming what is wrong with it."""
    fields = cls.__dataclass_fields__
    required = {n for n, f in fields.items() if f.default is MISSING}
    if cls is Check and entry.get("runner") == "module":
        required.add("module_tests")
    missing = required - set(entry)
    unknown = set(entry) - set(fields)
    if missing or unknown:
        raise CatalogError(f"{where}: missing {sorted(missing)}, unknown {sorted(unknown)}")
    for name, choices in cls.CHOICES.items():
        if entry[name] not in choices:
            raise CatalogError(f"{where}: {name} '{entry[name]}' is not one of {choices}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}
    if cls is Check and not set(values["profiles"]) <= set(PROFILES):
        raise CatalogError(f"{where}: profiles {values['profiles']} not in {PROFILES}")
    return cls(**values)


def parse(text):
    """(workloads, checks) of the catalog's text, each a tuple in its order."""
    data = tomllib.loads(text)
    lists = {}
    for key, cls in (("workload", Workload), ("check", Check)):
        entries = [build(cls, e, f"{key} {e.get('name', i)}")
                   for i, e in enumerate(data.get(key, []))]
        names = [e.name for e in entries]
        if not entries or len(set(names)) != len(names):
            raise CatalogError(f"{key}: names must be present and distinct: {names}")
        lists[key] = tuple(entries)
    return lists["workload"], lists["check"]


@lru_cache(maxsize=None)
def load():
    return parse(CATALOG.read_text())


def workloads():
    return load()[0]


def checks():
    return load()[1]


def check(name):
    found = [c for c in checks() if c.name == name]
    if not found:
        raise KeyError(f"unknown check '{name}'; checks: {' '.join(c.name for c in checks())}")
    return found[0]


def default_checks(profile):
    return [c.name for c in checks() if profile in c.profiles]


def points_per_rep(chosen, settings, thread_points):
    return sum(w.points(settings, thread_points) for w in workloads()
               if w.name in chosen)


def help_lines():
    lines = ["Workloads (lab/catalog.toml; * in make bench's default WORKLOADS):"]
    lines += [f"  {'*' if w.default else ' '} {w.name}: {w.help}" for w in workloads()]
    lines.append("Checks (lab/catalog.toml; the profiles whose default CHECKS hold them):")
    lines += [f"  {c.name} [{','.join(c.profiles)}]: {c.help}" for c in checks()]
    return lines


def flag(value):
    return "1" if value else "0"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("checks")
    c.add_argument("--profile", choices=PROFILES)
    w = sub.add_parser("workloads")
    w.add_argument("--default", action="store_true")
    p = sub.add_parser("points-per-rep")
    p.add_argument("workloads", help="comma-separated")
    p.add_argument("settings", type=int)
    p.add_argument("thread_points", type=int)
    sub.add_parser("help")
    args = ap.parse_args(argv)
    try:
        load()
    except (CatalogError, tomllib.TOMLDecodeError) as e:
        print(f"mutexlab: error: {CATALOG}: {e}", file=sys.stderr)
        return 2
    if args.command == "checks":
        for ch in checks():
            if args.profile is None or args.profile in ch.profiles:
                print("\t".join((ch.name, ch.runner, ch.runs_for, str(ch.expected_s),
                                 flag(ch.release_window), ch.tcg_threads)))
    elif args.command == "workloads":
        for wl in workloads():
            if wl.default or not args.default:
                print("\t".join((wl.name, wl.threads, flag(wl.sweeps_settings))))
    elif args.command == "points-per-rep":
        print(points_per_rep(args.workloads.split(","), args.settings,
                             args.thread_points))
    else:
        print("\n".join(help_lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
