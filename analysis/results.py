#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Parse the bench module's results channel: KTAP verdicts and data records
(JSON objects on KTAP diagnostic lines).

Usage: analysis/results.py RESULTS.raw RESULTS.json [VCPUS]
Writes the parsed results and prints a summary; exits 1 when the run failed
(a test not ok, the plan not met, no totals, a malformed line, a guest with
fewer CPUs than VCPUS or timestamps from the jiffies clock). The runner's
host-load.json beside RESULTS.raw, when there is one, gives each point what
else used the host's CPUs meanwhile; a point where that passed
DISTURBED_OTHER_CPUS is marked disturbed, and make regress leaves it out.
"""
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fairness import jain_index, max_min_ratio, starved  # noqa: E402
from latency import latency_ns  # noqa: E402
from sets import SCHEMA_VERSION, not_finite, write_atomic  # noqa: E402

# Average host CPUs that processes other than QEMU kept busy during a point
# beyond which the point is disturbed (see guest/host_load.py).
DISTURBED_OTHER_CPUS = 0.2
KTAP_RESULT = re.compile(
    r"^(?P<ok>ok|not ok) (?P<number>\d+)(?: - (?P<name>[^#]*?))?\s*"
    r"(?:#\s*(?P<directive>.*))?$")
KTAP_PLAN = re.compile(r"^1\.\.(\d+)$")
KTAP_TOTALS = re.compile(r"^# Totals: (.*)$")
RECORD_PREFIX = "# {"


def record_text(line):
    """The JSON of a data record line, or None. The module writes each
    record on a KTAP diagnostic line, "# {...}", which KTAP parsers skip;
    sets from before that have it bare, "{...}"."""
    if line.startswith(RECORD_PREFIX):
        return line[len(RECORD_PREFIX) - 1:]
    return line if line.startswith("{") else None


def parse_raw(text, vcpus=None):
    """Split the channel into KTAP results and JSON records."""
    parsed = {"schema_version": SCHEMA_VERSION, "ktap_version": None, "plan": None, "tests": [],
              "totals": None, "meta": None, "points": [],
              "unlock_probe": None, "checks": [], "problems": []}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        if record := record_text(line):
            parse_record(parsed, record, lineno)
        elif line.startswith("KTAP version "):
            parsed["ktap_version"] = line.split()[-1]
        elif m := KTAP_PLAN.match(line):
            parsed["plan"] = int(m.group(1))
        elif m := KTAP_TOTALS.match(line):
            parsed["totals"] = dict(
                (k, int(v)) for k, v in re.findall(r"(\w+):(\d+)", m.group(1)))
        elif m := KTAP_RESULT.match(line):
            parsed["tests"].append({
                "number": int(m.group("number")),
                "ok": m.group("ok") == "ok",
                "name": (m.group("name") or "").strip(),
                "directive": m.group("directive"),
            })
        elif line.startswith("#"):
            continue
        else:
            parsed["problems"].append(f"line {lineno}: not KTAP or JSON: {line!r}")
    check_complete(parsed)
    check_guest(parsed, vcpus)
    return parsed


def check_guest(parsed, vcpus):
    """Numbers from a guest unlike the one asked for are worse than none."""
    meta = parsed["meta"]
    if not meta:
        return
    if vcpus is not None and meta["online_cpus"] != vcpus:
        parsed["problems"].append(
            f"the guest brought up {meta['online_cpus']} of {vcpus} vCPUs")
    if "jiffies" in meta.get("clocksource", ""):
        parsed["problems"].append(
            f"the guest's clocksource is {meta['clocksource']}: timestamps "
            "are ticks, not measurements")


def parse_record(parsed, line, lineno):
    """One JSON record into parsed; a line that is not a record the module
    writes (not JSON, NaN, nested without end, a point whose counts make
    no rate) is a problem of the set, never an exception."""
    try:
        record = json.loads(line, parse_constant=not_finite)
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        kind = record.pop("type", None)
        if kind == "point":
            point = with_rates(record, parsed["meta"])
    except (ValueError, RecursionError, KeyError, TypeError, ArithmeticError) as err:
        if isinstance(err, json.JSONDecodeError):
            what = f"bad JSON ({err})"
        elif isinstance(err, RecursionError):
            what = "bad record (nested too deep)"
        else:
            what = f"bad record ({type(err).__name__}: {err})"
        parsed["problems"].append(f"line {lineno}: {what}: {line[:200]!r}")
        return
    if kind == "meta":
        parsed["meta"] = record
    elif kind == "point":
        parsed["points"].append(point)
    elif kind == "unlock_probe":
        parsed["unlock_probe"] = record
    elif kind == "check":
        parsed["checks"].append(record)
    else:
        parsed["problems"].append(f"line {lineno}: unknown record type {kind!r}")


def series_of(point):
    """The series a point belongs to: its workload and, where it has a
    critical section, the settings it ran with; the module's KTAP names
    without the thread count and repetition. Points of one series differ
    only in threads and repetition."""
    if point["workload"] == "uncontended":
        return "uncontended"
    pin = "pinned" if point.get("pinned") else "unpinned"
    # Sets from before think time and placement were settings ran neither.
    think = point.get("think_loops", 0)
    return f"{point['workload']}/C{point['cs_loops']}/W{think}/{pin}"


def with_rates(point, meta=None):
    """Throughput and latency of a point; meta is the boot's meta record
    (its clock cost is taken out of the latencies)."""
    point["total"] = sum(point["acquisitions"])
    point["per_sec"] = point["total"] * 1e9 / point["elapsed_ns"]
    point["latency_ns"] = latency_ns(point, meta)
    return point


def is_disturbed(point):
    """The host kept its CPUs busy during the point. (Not the points'
    loop_ps: measured here it spreads 2.5-7.6 ns a loop on a quiet host and
    does not rise while another process takes a CPU, so it would drop
    quiet repetitions and keep disturbed ones.)"""
    return bool((point.get("host") or {}).get("disturbed"))


def attach_host_load(parsed, host_load):
    """Give each point its host interval (the runner's host-load.json), in
    the order both arrived; a count that differs attaches nothing."""
    intervals = host_load.get("points") or []
    # Under icount the guest's clock counts its instructions: what the
    # host did cannot move a point, which keeps its repetitions.
    host_moves_points = host_load.get("guest_clock", "host") == "host"
    if len(intervals) != len(parsed["points"]):
        parsed["host_load_note"] = (f"{len(intervals)} host intervals for "
                                    f"{len(parsed['points'])} points: not attached")
        return
    for point, interval in zip(parsed["points"], intervals):
        if interval is None or interval.get("other_cpus") is None:
            continue
        point["host"] = {**interval,
                         "disturbed": (host_moves_points
                                       and interval["other_cpus"] > DISTURBED_OTHER_CPUS)}
    parsed["host_boot"] = host_load.get("boot")


def check_complete(parsed):
    problems = parsed["problems"]
    if parsed["ktap_version"] is None:
        problems.append("no 'KTAP version' line: the module never started")
    if parsed["plan"] is not None and len(parsed["tests"]) != parsed["plan"]:
        problems.append(f"plan was 1..{parsed['plan']} but "
                        f"{len(parsed['tests'])} results arrived")
    if parsed["totals"] is None:
        problems.append("no '# Totals' line: the run did not finish")
    for test in parsed["tests"]:
        if not test["ok"]:
            problems.append(f"not ok {test['number']} - {test['name']}"
                            + (f" # {test['directive']}" if test["directive"] else ""))


def coefficient_of_variation(values):
    """stdev / mean over repetitions; None with fewer than two."""
    if len(values) < 2 or statistics.mean(values) == 0:
        return None
    return statistics.stdev(values) / statistics.mean(values)


def summarise(points):
    """Per (series, threads): throughput median, range and CV over reps,
    and fairness (median Jain's index, worst max/min, starved reps)."""
    groups = {}
    for p in points:
        groups.setdefault((series_of(p), p["threads"]), []).append(p)
    rows = []
    for (series, t), group in sorted(groups.items()):
        rates = [p["per_sec"] for p in group]
        jains = [j for j in (jain_index(p["acquisitions"]) for p in group)
                 if j is not None]
        rows.append({
            "series": series, "workload": group[0]["workload"], "threads": t,
            "reps": len(rates),
            "disturbed_reps": sum(is_disturbed(p) for p in group),
            "median_per_sec": statistics.median(rates),
            # For uncontended: the cost of one lock/unlock pair.
            "ns_per_acq": 1e9 / statistics.median(rates),
            "min_per_sec": min(rates), "max_per_sec": max(rates),
            "cv": coefficient_of_variation(rates),
            "jain_median": statistics.median(jains) if jains else None,
            "max_min_ratio_worst": max(max_min_ratio(p["acquisitions"])
                                       for p in group),
            "starved_reps": sum(starved(p["acquisitions"]) for p in group),
            **latency_medians(group),
            "switches_per_acq": per_acquisition(group, "context_switches"),
            "cpu_ns_per_acq": per_acquisition(group, "cpu_ns"),
        })
    return rows


def latency_medians(group):
    """Median over reps of each point's p50, p99 and p99.9 (ns); None where
    latency was not sampled; and the percentiles that had too few samples
    behind them in some rep."""
    out = {}
    for name in ("p50", "p99", "p99_9"):
        values = [p["latency_ns"][name] for p in group if p.get("latency_ns")]
        out[f"latency_{name}_ns"] = statistics.median(values) if values else None
    out["latency_thin"] = sorted({name for p in group if p.get("latency_ns")
                                  for name in p["latency_ns"].get("thin", [])})
    return out


def per_acquisition(group, key):
    """Median over reps of KEY / acquisitions; None where not measured
    (result sets from before the module reported it)."""
    ratios = [p[key] / p["total"] for p in group
              if p.get(key) is not None and p["total"]]
    return statistics.median(ratios) if ratios else None


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def format_summary(summary):
    rows = [f"{'series':<34} {'threads':>7} {'reps':>4} "
            f"{'median Mops/s':>13} {'range':>17} {'CV':>6} "
            f"{'Jain':>5} {'starved':>7} {'csw/acq':>8} {'cpu ns/acq':>10}"
            f" {'p50 ns':>7} {'p99 ns':>7} {'p99.9 ns':>8}"]
    for s in summary:
        cv = f"{100 * s['cv']:.1f}%" if s["cv"] is not None else "-"
        jain = f"{s['jain_median']:.3f}" if s["jain_median"] is not None else "-"
        rows.append(f"{s['series']:<34} {s['threads']:>7} {s['reps']:>4} "
                    f"{s['median_per_sec'] / 1e6:>13.3f} "
                    f"{s['min_per_sec'] / 1e6:>8.3f}-{s['max_per_sec'] / 1e6:<8.3f}"
                    f" {cv:>6} {jain:>5} {s['starved_reps']:>3}/{s['reps']:<3}"
                    f" {fmt(s['switches_per_acq'], '.4f'):>8}"
                    f" {fmt(s['cpu_ns_per_acq'], '.0f'):>10}"
                    f" {fmt(s['latency_p50_ns'], '.0f'):>7}"
                    f" {fmt(s['latency_p99_ns'], '.0f'):>7}"
                    f" {fmt(s['latency_p99_9_ns'], '.0f'):>8}")
    return "\n".join(rows)


def parse_run(raw_path, vcpus=None):
    """results.json's content for a run's results.raw: parsed, each point
    given its host interval where the runner measured one (host-load.json
    beside it; a run imported from another host has none: host_boot is
    null), and summarised."""
    parsed = parse_raw(Path(raw_path).read_text(errors="replace"), vcpus)
    parsed["host_boot"] = None
    host_load = Path(raw_path).parent / "host-load.json"
    if host_load.is_file():
        attach_host_load(parsed, json.loads(host_load.read_text()))
    parsed["summary"] = summarise(parsed["points"])
    return parsed


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit(__doc__)
    vcpus = int(argv[3]) if len(argv) == 4 else None
    parsed = parse_run(argv[1], vcpus)
    try:
        write_atomic(argv[2], json.dumps(parsed, indent=1) + "\n")
    except OSError as e:
        print(f"mutexlab: error: cannot write {argv[2]}: {e.strerror}"
              " (is the disk full?)", file=sys.stderr)
        return 2
    print(format_summary(parsed["summary"]))
    disturbed = sum(is_disturbed(p) for p in parsed["points"])
    if "host_load_note" in parsed:
        print(f"mutexlab: host load: {parsed['host_load_note']}", file=sys.stderr)
    elif disturbed:
        print(f"mutexlab: {disturbed} of {len(parsed['points'])} points ran while "
              f"other processes kept more than {DISTURBED_OTHER_CPUS} host CPUs "
              "busy: marked disturbed, make regress leaves them out",
              file=sys.stderr)
    for problem in parsed["problems"]:
        print(f"mutexlab: result problem: {problem}", file=sys.stderr)
    return 1 if parsed["problems"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
