#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The lab's workloads and checks (lab/catalog.toml), validated on load.

Python reads it with load(); the shell scripts with this file's commands,
which print plain tab-separated fields, one entry per line:

  lab/catalog.py checks CHECK_MS PEER_SECS
                                        name runner runs_for expected seconds
                                        release_window tcg_threads
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
JUDGES = ("ktap", "kasan", "watchpoint", "locktorture_stats", "ww_selftest")


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
    judge: str
    exercises: tuple
    runs_for: str
    expected_s: int
    release_window: bool
    tcg_threads: str
    profiles: tuple
    help: str
    module_tests: int = 0

    CHOICES = {"runner": ("module", "peer"), "property": PROPERTIES,
               "judge": JUDGES,
               "runs_for": ("check_ms", "peer_secs", "fixed"),
               "tcg_threads": ("multi", "single")}

    def expected_seconds(self, check_ms, peer_secs):
        """The boot's expected run time, s, which sizes its watchdog."""
        return self.expected_s + {"check_ms": check_ms // 1000,
                                  "peer_secs": peer_secs,
                                  "fixed": 0}[self.runs_for]


def table_entry(cls, entry, where, error, choices, subsets=None, required=()):
    """A TOML table as the dataclass cls (lists as tuples), or error naming
    what is wrong: a field missing or unknown, a value not among its
    choices ({field: allowed}), a list not within its subset ({field:
    allowed}). lab/settings.py reads its table with it too."""
    fields = cls.__dataclass_fields__
    missing = ({n for n, f in fields.items() if f.default is MISSING}
               | set(required)) - set(entry)
    unknown = set(entry) - set(fields)
    if missing or unknown:
        raise error(f"{where}: missing {sorted(missing)}, unknown {sorted(unknown)}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}
    for key, allowed in choices.items():
        if values[key] not in allowed:
            raise error(f"{where}: {key} '{values[key]}' is not one of {allowed}")
    for key, allowed in (subsets or {}).items():
        if not set(values.get(key, ())) <= set(allowed):
            raise error(f"{where}: {key} {values[key]} not in {allowed}")
    return cls(**values)


def build(cls, entry, where):
    """One entry as cls, or CatalogError naming what is wrong with it."""
    if cls is Check:
        return table_entry(cls, entry, where, CatalogError, cls.CHOICES,
                           subsets={"profiles": PROFILES},
                           required=("module_tests",) if entry.get("runner") == "module" else ())
    return table_entry(cls, entry, where, CatalogError, cls.CHOICES)


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
    c.add_argument("check_ms", type=int)
    c.add_argument("peer_secs", type=int)
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
            expected = ch.expected_seconds(args.check_ms, args.peer_secs)
            print("\t".join((ch.name, ch.runner, ch.runs_for, str(expected),
                             flag(ch.release_window), ch.tcg_threads)))
    elif args.command == "points-per-rep":
        print(points_per_rep(args.workloads.split(","), args.settings,
                             args.thread_points))
    else:
        print("\n".join(help_lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
