#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Our counts against the kernel's own tools, from one cross-check boot.

Usage: analysis/crosscheck.py CROSSCHECK_DIR [VCPUS]
CROSSCHECK_DIR/results.raw holds sections, each after a line
"# mutexlab-section: NAME" (guest/init): "bench", the module's run of the
contended workload under `perf lock record`; "perf-lock-record", perf's
messages; "perf-lock-contention", perf's per-thread report of that
recording; "locktorture_cs", the module's run of that workload alone;
"locktorture T", the kernel log of locktorture (torture_type=mutex_lock) run
with T writers for as long as each of our points. Writes crosscheck.json and crosscheck.md
there and prints the table; exits 1 when a section is missing or unreadable,
or when our slow-path entries and perf's contentions, two counts of the same
events in the same run, disagree by more than COUNT_TOLERANCE.
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_verdict import LOCKTORTURE_WRITES  # noqa: E402
from results import parse_raw  # noqa: E402

SECTION = re.compile(r"^# mutexlab-section: (?P<name>.+)$")
# Our workers are the kthreads mutexlab/<i> (point.c's start_workers()); a
# per-thread report names them, where its callers (from frame-pointer-less
# call chains) would not.
OUR_WORKER = re.compile(r"^mutexlab/\d+$")
# Both count every entry into the slow path; they differ by the entries at
# the edges of our measured window (thread start and stop), which perf's
# recording spans: 0.01% of 1 s points, 1.1% of 300 ms ones, 5.7% of 200 ms
# ones (make test's) measured. A lost buffer or a thread miscounted is more.
COUNT_TOLERANCE = 0.10
UNITS_NS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
TIME = r"([\d.]+) (ns|us|ms|s)"
# perf's count of event sequences it could not pair (a lost event, say).
PERF_BAD = re.compile(r"bad: (?P<bad>\d+), total: (?P<total>\d+)")
PERF_ROW = re.compile(
    rf"^\s*(?P<contended>\d+)\s+{TIME}\s+{TIME}\s+{TIME}\s+(?P<pid>\d+)\s+(?P<comm>\S+)")


def split_sections(text):
    """{name: text} of the sections, in order."""
    sections, name = {}, None
    for line in text.splitlines():
        line = line.rstrip("\r")
        if m := SECTION.match(line):
            name = m.group("name")
            sections[name] = []
        elif name is not None:
            sections[name].append(line)
    return {k: "\n".join(v) + "\n" for k, v in sections.items()}


def ns(value, unit):
    return float(value) * UNITS_NS[unit]


def parse_perf_contention(text):
    """Rows of `perf lock contention -t`'s (per thread) table."""
    rows = []
    for line in text.splitlines():
        if m := PERF_ROW.match(line):
            g = m.groups()
            rows.append({"contended": int(g[0]), "wait_total_ns": ns(g[1], g[2]),
                         "wait_max_ns": ns(g[3], g[4]), "avg_wait_ns": ns(g[5], g[6]),
                         "pid": int(m.group("pid")), "comm": m.group("comm")})
    return rows


def is_ours(comm):
    return bool(OUR_WORKER.match(comm))


def our_counts(points):
    """Summed over our points: acquisitions, slow-path entries (the lab's
    lock event, null without it), and the time spent in mutex_lock()."""
    slow = [(p.get("lock_events") or {}).get("mutex_slowpath") for p in points]
    every = {p.get("latency_every") for p in points}
    return {
        "acquisitions": sum(p["total"] for p in points),
        "slowpath": None if None in slow else sum(slow),
        # Exact only when every lock was timed (latency_every=1).
        "lock_time_ns": (sum(p.get("latency_sum_ns") or 0 for p in points)
                         if every == {1} else None),
    }


def locktorture_totals(sections):
    """{threads: locktorture's final Writes Total} of each run."""
    out = {}
    for name, text in sections.items():
        if not name.startswith("locktorture "):
            continue
        writes = list(LOCKTORTURE_WRITES.finditer(text))
        out[int(name.split()[1])] = (
            {"total": int(writes[-1]["total"]), "fail": int(writes[-1]["fail"])}
            if writes else None)
    return out


def ratio(a, b):
    return a / b if a is not None and b else None


def crosscheck(text, vcpus=None):
    sections = split_sections(text)
    problems = [f"no '{s}' section" for s in ("bench", "perf-lock-contention")
                if s not in sections]
    bench = parse_raw(sections.get("bench", ""), vcpus)
    problems += [f"bench: {p}" for p in bench["problems"]]
    perf_rows = parse_perf_contention(sections.get("perf-lock-contention", ""))
    if "perf-lock-contention" in sections and not perf_rows:
        problems.append("perf lock contention reported no rows")
    ours = our_counts(bench["points"])
    perf_ours = [r for r in perf_rows if is_ours(r["comm"])]
    bad = PERF_BAD.search(sections.get("perf-lock-contention", ""))
    perf = {"contended": sum(r["contended"] for r in perf_ours),
            "bad_sequences": int(bad["bad"]) if bad else 0,
            "wait_total_ns": sum(r["wait_total_ns"] for r in perf_ours),
            "others_contended": sum(r["contended"] for r in perf_rows
                                    if not is_ours(r["comm"]))}
    alone = parse_raw(sections.get("locktorture_cs", ""), vcpus)
    if "locktorture_cs" not in sections:
        problems.append("no 'locktorture_cs' section")
    problems += [f"locktorture_cs: {p}" for p in alone["problems"]]
    contended_ratio = ratio(ours["slowpath"], perf["contended"])
    if contended_ratio is not None and abs(contended_ratio - 1) > COUNT_TOLERANCE:
        problems.append(f"our slow-path entries ({ours['slowpath']}) and perf's "
                        f"contentions ({perf['contended']}) disagree beyond "
                        f"{COUNT_TOLERANCE:.0%}")
    elif ours["slowpath"] and not perf["contended"]:
        problems.append("perf saw no contention in our workers")
    torture = locktorture_totals(sections)
    by_threads = []
    for t, lt in sorted(torture.items()):
        if lt is None:
            problems.append(f"locktorture {t}: no 'Writes:' statistics")
        def acquisitions(points):
            return sum(p["total"] for p in points if p["threads"] == t) or None
        row = {"threads": t, "locktorture_total": lt and lt["total"],
               "locktorture_fail": lt and lt["fail"],
               "ours_locktorture_cs": acquisitions(alone["points"]),
               "ours_contended": acquisitions(bench["points"])}
        row["locktorture_cs_ratio"] = ratio(row["ours_locktorture_cs"],
                                            row["locktorture_total"])
        row["contended_ratio"] = ratio(row["ours_contended"], row["locktorture_total"])
        by_threads.append(row)
    if not torture:
        problems.append("no locktorture section")
    return {
        "perf": {**perf, "rows": perf_rows},
        "ours": ours,
        "contended_ratio": contended_ratio,
        "wait_ratio": ratio(ours["lock_time_ns"], perf["wait_total_ns"]),
        "locktorture": by_threads,
        "meta": bench["meta"],
        "problems": problems,
    }


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def format_markdown(r):
    o, p = r["ours"], r["perf"]
    lines = ["# Cross-check against the kernel's own tools", "",
             "## perf lock contention (our worker threads), same run", "",
             "| | ours | perf | ours / perf |", "|---|---|---|---|",
             f"| contentions (our slow-path entries) | {fmt(o['slowpath'], 'd')} | "
             f"{p['contended']} | {fmt(r['contended_ratio'], '.3f')} |",
             f"| time waiting, ms (ours: all of mutex_lock(), timestamps included) | "
             f"{fmt(o['lock_time_ns'] and o['lock_time_ns'] / 1e6, '.1f')} | "
             f"{p['wait_total_ns'] / 1e6:.1f} | {fmt(r['wait_ratio'], '.3f')} |",
             "", f"Acquisitions: {o['acquisitions']}; contentions perf saw "
             f"in other threads: {p['others_contended']}; event "
             f"sequences perf could not pair: {p['bad_sequences']}.", "",
             "## locktorture (torture_type=mutex_lock), same kernel, time and threads", "",
             "| threads | locktorture Total | ours, locktorture_cs | ratio | "
             "ours, contended | ratio |", "|---|---|---|---|---|---|"]
    for t in r["locktorture"]:
        lines.append(f"| {t['threads']} | {fmt(t['locktorture_total'], 'd')} | "
                     f"{fmt(t['ours_locktorture_cs'], 'd')} | "
                     f"{fmt(t['locktorture_cs_ratio'], '.3f')} | "
                     f"{fmt(t['ours_contended'], 'd')} | {fmt(t['contended_ratio'], '.0f')} |")
    lines += ["", "locktorture_cs holds the lock as locktorture's writers do "
              "(mdelay(20 ms)), so its ratio checks our counting; contended "
              "holds it for its C loops (and ran under perf), so its ratio is "
              "the workloads' difference, not an error."]
    lines += [f"- problem: {x}" for x in r["problems"]]
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    folder = Path(argv[1])
    vcpus = int(argv[2]) if len(argv) == 3 else None
    report = crosscheck((folder / "results.raw").read_text(errors="replace"), vcpus)
    (folder / "crosscheck.json").write_text(json.dumps(report, indent=1) + "\n")
    text = format_markdown(report)
    (folder / "crosscheck.md").write_text(text)
    print(text)
    for problem in report["problems"]:
        print(f"mutexlab: cross-check problem: {problem}", file=sys.stderr)
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
