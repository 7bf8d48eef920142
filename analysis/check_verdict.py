#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Judge a `make check` result set: one folder per check, each one boot.

Usage: analysis/check_verdict.py [--vmlinux VMLINUX] CHECK_SET_DIR
       analysis/check_verdict.py --tally CHECK_SET_DIR...
Writes verdict.json and verdict.ktap into CHECK_SET_DIR and prints them.
With --vmlinux (the kernel that ran), a watchpoint's evidence names the
accessing instruction, disassembled.
Exit status: 0 all checks passed, 1 a check failed, 2 nothing to judge.
With --tally, counts per check the sets (already judged) in which it failed.

A check passes when its guest ended cleanly (no oops, BUG, WARNING, KASAN
report or hung task on the console; exit status 0) and its own results say
so: the lab's checks in KTAP, locktorture in its final statistics, and when
the slow-path events it exists to exercise happened. An access after
release is seen by two detection methods, neither of them the variant's own
claim: KASAN on the console (the catalog's kasan checks), and hardware
watchpoints on the mutex (its watchpoint check), which need no release
point marked by the design. verdict.json names the methods that ran and whether each was seen
to work on its control.
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lab"))
import catalog  # noqa: E402
from results import parse_raw  # noqa: E402
import trap_site  # noqa: E402

# Which property each check speaks for, in the order they are reported, and
# the lock events each exists to exercise (lab/catalog.toml): a check the
# catalog lacks cannot be run by lab/check.sh, so none is left unjudged.
PROPERTIES = {c.name: c.property for c in catalog.checks()}
EXERCISES = {c.name: c.exercises for c in catalog.checks() if c.exercises}
# How each check's boot is read (lab/catalog.toml's judge): no check is
# named here, so that a new one is its C table and its catalog entry.
JUDGE_OF = {c.name: c.judge for c in catalog.checks()}
# How each check's boot is read (lab/catalog.toml's judge): no check is
# named here, so that a new one is its C table and its catalog entry.
JUDGE_OF = {c.name: c.judge for c in catalog.checks()}
# watch's tests that prove its method rather than judge the design.
WATCH_METHOD_TESTS = ("control_caught", "every_access_kind_traps",
                      "raced_unlocks")
# A guest that stopped making progress: a task blocked past the hung-task
# timeout (the runner makes it a panic), or an RCU stall.
HANG_LINE = re.compile(r"INFO: task .* blocked for more than|rcu: INFO: .*stall|"
                       r"self-detected stall")
LOCKTORTURE_WRITES = re.compile(
    r"Writes:\s+Total:\s+(?P<total>\d+)\s+Max/Min:\s+(?P<max>\d+)/(?P<min>\d+)"
    r"\s*(?P<starved>\?\?\?)?\s+Fail:\s+(?P<fail>\d+)")
KASAN_TITLE = re.compile(r"BUG: KASAN: (?P<kind>[\w-]+) in (?P<where>\S+)")
KASAN_ACCESS = re.compile(r"(?P<rw>Read|Write) of size (?P<size>\d+) at addr")
# A stack frame as the kernel prints it: " func+0x1a/0x40 [module]"; "? "
# marks a guess of the unwinder, left out of the evidence.
FRAME = re.compile(
    r"^\s+(?P<guess>\? )?(?P<frame>[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+)")
STACK_FRAMES = 8
# KASAN's, the allocator's and the reporter's own frames: the evidence is the
# code that made the access or freed the object, below them.
INTERNAL_FRAME = re.compile(
    r"^_*(kasan|asan|check_region|slab|kmem_cache|kfree|kmalloc|do_kmalloc|"
    r"dump_stack|print_report|print_address|describe_object|kvfree|"
    r"memcg_slab|qlist|quarantine|rcu_do_batch|__raw_callee)")


def read(path):
    try:
        return Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""


def console_lines(text):
    """Console lines without the "[    1.234567] " timestamp."""
    return [re.sub(r"^\[\s*\d+\.\d+\]\s?", "", l) for l in text.splitlines()]


def stack_after(lines, start, limit=STACK_FRAMES):
    """The frames of the first stack that follows lines[start]."""
    frames, seen_any = [], False
    for line in lines[start + 1:]:
        m = FRAME.match(line)
        if m:
            seen_any = True
            if not (m.group("guess") or INTERNAL_FRAME.match(m.group("frame"))):
                frames.append(m.group("frame"))
            if len(frames) == limit:
                break
        elif seen_any and not line.strip().startswith("<"):
            break
    return frames


def kasan_evidence(console_text):
    """The first KASAN report: what, where, the access and the freeing site."""
    lines = console_lines(console_text)
    for i, line in enumerate(lines):
        m = KASAN_TITLE.search(line)
        if not m:
            continue
        report = {"title": line.strip(), "kind": m.group("kind"),
                  "where": m.group("where"), "access": None,
                  "access_stack": stack_after(lines, i), "freed_stack": []}
        for j in range(i + 1, min(i + 200, len(lines))):
            if report["access"] is None and KASAN_ACCESS.search(lines[j]):
                report["access"] = lines[j].strip()
            if lines[j].startswith("Freed by task"):
                report["freed_stack"] = stack_after(lines, j)
                break
        return report
    return None


def judge_module_check(run, raw_text):
    parsed = parse_raw(raw_text)
    details = {"records": parsed["checks"], "tests": parsed["tests"],
               "meta": parsed["meta"]}
    return not parsed["problems"], parsed["problems"], details


def coverage(name, details):
    """{event: count} of the events the check exists to exercise, or None
    where the kernel counts none (stock); and the events that never
    happened."""
    events = next((r.get("lock_events") for r in details.get("records") or []
                   if "lock_events" in r), None)
    wanted = EXERCISES.get(name, ())
    if not wanted or events is None:
        return None, []
    return dict(events), [e for e in wanted if not events.get(e)]


def watch_record(details):
    """The watchpoint check's record: the one that lists its hits."""
    return next((r for r in (details or {}).get("records") or []
                 if "accesses_after_release" in r), None)


def watch_failed_property(details):
    """watch fails free_safe on an access after release; a miss of its own
    control (or no race opened) says its method proved nothing."""
    failed = {t["name"].rsplit("/", 1)[-1] for t in details.get("tests") or []
              if not t["ok"]}
    if "no_access_after_release" in failed:
        return "free_safe"
    if failed & set(WATCH_METHOD_TESTS):
        return "detection_control"
    return None


def judge_locktorture(run, raw_text):
    writes = [m.groupdict() for m in LOCKTORTURE_WRITES.finditer(raw_text)]
    problems = []
    if not writes:
        problems.append("no locktorture 'Writes:' statistics")
    elif int(writes[-1]["fail"]):
        problems.append(f"locktorture Fail: {writes[-1]['fail']}")
    if "End of test: SUCCESS" not in raw_text:
        problems.append("no 'End of test: SUCCESS'")
    final = ({k: int(v) for k, v in writes[-1].items() if k != "starved"}
             if writes else None)
    if final:
        final["starved"] = bool(writes[-1]["starved"])
    return not problems, problems, {"writes": final}


def judge_ww_mutex(run, raw_text):
    # test-ww_mutex fails its init (and so insmod) when a test fails.
    problems = []
    if run.get("guest_exit_status") != "0":
        problems.append("test-ww_mutex failed to load: a test failed")
    if "All ww mutex selftests passed" not in raw_text:
        problems.append("no 'All ww mutex selftests passed'")
    return not problems, problems, {}


# The peer suites' own output; the lab's checks are read from their KTAP.
READERS = {"locktorture_stats": judge_locktorture, "ww_selftest": judge_ww_mutex}


def with_access(hits, vmlinux):
    """Each hit with the instruction that made the access, where known."""
    if not vmlinux:
        return hits
    return [dict(hit, access=trap_site.access_before(vmlinux, hit["trapped_at"]))
            for hit in hits]


def judge_check(name, folder, vmlinux=None):
    folder = Path(folder)
    run = json.loads(read(folder / "run.json") or "{}")
    raw_text = read(folder / "results.raw")
    if not run:
        return {"check": name, "ok": False, "problems": ["the check never ran"],
                "failed_property": None, "evidence": None}
    read_boot = READERS.get(JUDGE_OF[name], judge_module_check)
    ok, problems, details = read_boot(run, raw_text)
    outcome = run.get("outcome")
    evidence = None
    counts, missed = coverage(name, details)
    prop = None
    if outcome != "ok":
        ok = False
        problems.insert(0, f"guest outcome: {outcome}")
        evidence = {"failure_lines": run.get("failure_lines", [])[:10],
                    "kasan": kasan_evidence(read(folder / "console.log"))}
        prop = failed_property(name, run)
    elif JUDGE_OF[name] == "watchpoint" and not ok:
        prop = watch_failed_property(details) or PROPERTIES[name]
        record = watch_record(details) or {}
        if record.get("accesses_after_release"):
            evidence = {"accesses_after_release": with_access(
                record["accesses_after_release"], vmlinux)}
    elif not ok:
        prop = PROPERTIES[name]
    if missed and ok:
        ok, prop = False, "coverage"
        problems.append("never happened in this run: " + ", ".join(missed))
    return {"check": name, "ok": ok, "problems": problems,
            "failed_property": prop, "coverage": counts,
            "evidence": evidence, "details": details,
            "guest_wall_s": run.get("wall_s"), "append": run.get("append")}


# Outcomes that say nothing about the design: interrupted by the user,
# QEMU that did not run the guest, vCPU threads that VCPU_PIN=1 could not
# bind (guest/qemu_runner.py).
LAB_OUTCOMES = ("interrupted", "qemu-error", "unpinned")


def failed_property(check, run):
    """The property a failed check speaks against: a guest that hung (the
    watchdog, a hung task, a stall: a lost wake-up, say) fails progress,
    whatever the check was for; a run the lab ended before the guest could
    speak (LAB_OUTCOMES), none; anything else (its own results, a KASAN
    report, a crash) the check's own property."""
    outcome = run.get("outcome")
    if outcome in LAB_OUTCOMES:
        return None
    if outcome == "timeout" or any(HANG_LINE.search(line)
                                   for line in run.get("failure_lines") or []):
        return "progress"
    return PROPERTIES[check]


def property_verdicts(results):
    verdicts = {}
    for prop in sorted(set(PROPERTIES.values())):
        judged = [r for r in results if PROPERTIES[r["check"]] == prop]
        failed = {r["failed_property"] for r in judged if not r["ok"]}
        good, bad = ("yes", "no") if prop == "free_safe" else ("ok", "broken")
        if not judged:
            verdicts[prop] = "not checked"
        elif prop in failed:
            verdicts[prop] = bad
        elif "progress" in failed:
            verdicts[prop] = "unknown: a check hung (see progress)"
        elif "detection_control" in failed:
            verdicts[prop] = "unknown: a detector missed its control (see methods)"
        elif "coverage" in failed:
            verdicts[prop] = ("unknown: a check never exercised what it "
                              "exists for (see its coverage)")
        elif failed:
            verdicts[prop] = "unknown: a check did not finish"
        else:
            verdicts[prop] = good
    # Every check's guest must finish: a hang in any of them is a failed
    # progress property (a lost wake-up, a waiter that never gets the lock).
    verdicts["progress"] = ("not checked" if not results else
                            "broken" if any(r["failed_property"] == "progress"
                                            for r in results) else "ok")
    # Without a window the hazard is a few instructions wide: a pass then
    # says little (the stock variant has no window to open).
    # watch needs no window: its pass stands on its own.
    free = [r for r in results if PROPERTIES[r["check"]] == "free_safe"]
    if verdicts["free_safe"] == "yes" and not any(
            JUDGE_OF[r["check"]] == "watchpoint" for r in free) and not all(
            ((r.get("details") or {}).get("meta") or {}).get("release_window_ns")
            for r in free):
        verdicts["free_safe"] = "yes, but without a release window: weak evidence"
    # A detector that fires on the control proves nothing about the design.
    if (verdicts["free_safety_control"] == "broken"
            and verdicts["free_safe"] != "not checked"):
        verdicts["free_safe"] = "unknown: the control failed"
    return verdicts


def detection_methods(results):
    """The ways an access after release was looked for in this set, what
    each can see, and whether each was seen to work on its control."""
    methods = {}
    kasan = [r for r in results if JUDGE_OF[r["check"]] == "kasan"]
    if kasan:
        control = next((r for r in results
                        if PROPERTIES[r["check"]] == "free_safety_control"), None)
        windows = sorted({((r.get("details") or {}).get("meta") or {})
                          .get("release_window_ns") or 0 for r in kasan})
        methods["kasan_release_window"] = {
            "checks": [r["check"] for r in kasan],
            "sees": "an access to the object once it is freed; the race is "
                    "widened only at the release points the design marks",
            "release_window_ns": windows,
            "control": (f"{control['check']} (a spinlock) clean" if control and control["ok"]
                        else f"{control['check']} (a spinlock) reported: the harness is at fault"
                        if control else "no control ran in this set"),
            "control_ok": bool(control and control["ok"]),
        }
    watch = next((r for r in results if JUDGE_OF[r["check"]] == "watchpoint"), None)
    if watch:
        record = watch_record(watch.get("details"))
        rec = record or {}
        traps_on = rec.get("traps_on") or {}
        methods["hw_watchpoint"] = {
            "checks": [watch["check"]],
            "sees": "any access by an unlocking task to the mutex's bytes after "
                    "another task's mutex_lock() returned; every access of the "
                    "unlocking task is followed by a random delay, marked or not",
            "watched_bytes": rec.get("watched_bytes"),
            "mutex_bytes": rec.get("mutex_bytes"),
            "traps_on": traps_on,
            "raced_unlocks": rec.get("raced_unlocks"),
            "unlocks": rec.get("unlocks"),
            "control": (f"caught {rec.get('control_caught')} of "
                        f"{rec.get('control_reads')} late reads by the harness"
                        if record else "no record: the check did not finish"),
            "control_ok": bool(record and rec.get("control_caught")
                               and traps_on and all(traps_on.values())),
        }
    return methods


def ktap(results):
    lines = ["KTAP version 1", f"1..{len(results)}"]
    for n, r in enumerate(results, 1):
        why = f" # {r['problems'][0]}" if r["problems"] else ""
        lines.append(f"{'ok' if r['ok'] else 'not ok'} {n} - {r['check']}{why}")
        ev = r["evidence"] or {}
        for hit in (ev.get("accesses_after_release") or [])[:2]:
            lines.append(f"# {hit['task']} trapped at {hit['trapped_at']}")
            if hit.get("access"):
                lines.append(f"# access: {hit['access']}")
            lines.append(f"# stack: {' < '.join(hit['stack'][:4])}")
        if ev.get("kasan"):
            k = ev["kasan"]
            lines.append(f"# {k['title']}")
            lines.append(f"# {k['access']}")
            lines.append(f"# access: {' < '.join(k['access_stack'][:4])}")
            lines.append(f"# freed:  {' < '.join(k['freed_stack'][:4])}")
        elif ev.get("failure_lines"):
            lines += [f"# {l}" for l in ev["failure_lines"][:3]]
    passed = sum(r["ok"] for r in results)
    lines.append(f"# Totals: pass:{passed} fail:{len(results) - passed} "
                 "xfail:0 xpass:0 skip:0 error:0")
    return "\n".join(lines) + "\n"


def judge_set(out, vmlinux=None):
    out = Path(out)
    folders = [d for d in sorted(out.iterdir()) if d.is_dir()
               and d.name in PROPERTIES]
    # The order the checks are listed in, not the alphabet's.
    order = list(PROPERTIES)
    folders.sort(key=lambda d: order.index(d.name))
    results = [judge_check(d.name, d, vmlinux) for d in folders]
    # What the lab's module said of the guest, from the first check that ran.
    meta = next((r["details"]["meta"] for r in results
                 if (r.get("details") or {}).get("meta")), None)
    # A run stopped by Ctrl-C or SIGTERM says nothing about the design.
    interrupted = any(json.loads(read(d / "run.json") or "{}").get("outcome")
                      == "interrupted"
                      for d in folders)
    passed = results and all(r["ok"] for r in results)
    return {"outcome": ("interrupted" if interrupted else
                        "checks-passed" if passed else "checks-failed"),
            "verdict": property_verdicts(results),
            "methods": detection_methods(results),
            "meta": meta, "checks": results}


def tally(set_dirs):
    """{check: {"runs": n, "failed": n, "evidence": [first KASAN title...]}}"""
    counts = {}
    for d in set_dirs:
        verdict = json.loads(read(Path(d) / "verdict.json"))
        for c in verdict["checks"]:
            entry = counts.setdefault(c["check"], {"runs": 0, "failed": 0,
                                                   "evidence": []})
            entry["runs"] += 1
            if not c["ok"]:
                entry["failed"] += 1
                kasan = (c["evidence"] or {}).get("kasan")
                entry["evidence"].append(kasan["title"] if kasan
                                         else "; ".join(c["problems"][:1]))
    return counts


def print_tally(counts):
    print(f"{'check':<14} {'runs':>4} {'failed':>6}  first evidence")
    for name, c in counts.items():
        first = c["evidence"][0] if c["evidence"] else ""
        print(f"{name:<14} {c['runs']:>4} {c['failed']:>6}  {first}")


def main(argv):
    if len(argv) > 2 and argv[1] == "--tally":
        print_tally(tally(argv[2:]))
        return 0
    vmlinux = None
    if len(argv) == 4 and argv[1] == "--vmlinux":
        vmlinux, argv = argv[2], argv[:1] + argv[3:]
    if len(argv) != 2:
        sys.exit(__doc__)
    out = Path(argv[1])
    verdict = judge_set(out, vmlinux)
    if not verdict["checks"]:
        print(f"mutexlab: error: no check folders in {out}", file=sys.stderr)
        return 2
    (out / "verdict.json").write_text(json.dumps(verdict, indent=1) + "\n")
    text = ktap(verdict["checks"])
    (out / "verdict.ktap").write_text(text)
    print(text, end="")
    for prop, value in verdict["verdict"].items():
        print(f"{prop}: {value}")
    for method, m in verdict["methods"].items():
        print(f"method {method}: control {'ok' if m['control_ok'] else 'NOT SEEN'}"
              f" ({m['control']})")
    return 0 if verdict["outcome"] == "checks-passed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
