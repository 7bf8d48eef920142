#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make verify: each design's lock-word protocol checked exhaustively by SPIN.

A design is a variant whose folder holds model.pml, its Promela model
(which includes the shared parts in models/), and model.toml, the
properties the model must fail. Every model is checked for every property
at every scope (tasks x rounds), each property in a run of its own so that
a failure is attributed to it. A counterexample is replayed into a
readable interleaving and a sequence diagram. Writes a result set,
RESULTS_DIR/verify/<UTC time>-<host>/, and prints its path. Exit status: 0
when every verdict is the expected one, 1 when one is not, 2 on an error.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import settings
from manifest import host_info, lab_state, sha256

LAB_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(LAB_ROOT / "analysis"))
import model_trail  # noqa: E402
from sets import new_set_dir  # noqa: E402

# As lab/lib.sh: VARIANTS_DIR from the environment, or the lab's own.
VARIANTS_DIR = Path(os.environ.get("VARIANTS_DIR") or LAB_ROOT / "variants")
# What every design's model includes: the harness, the tasks, shared paths.
MODELS_DIR = LAB_ROOT / "models"
# name: (the model's macro, how pan judges it, what holding means)
PROPERTIES = {
    "mutual_exclusion": ("PROP_EXCLUSION", "assertions",
                         "never two tasks in the critical section"),
    "no_access_after_free": ("PROP_FREE", "assertions",
                             "no task touches the mutex once the final "
                             "owner has it and may free it"),
    "lock_word_invariant": ("PROP_INVARIANT", "assertions",
                            "the lock word never takes a state the "
                            "design's README rules out"),
    "no_lost_wakeup": ("PROP_DEADLOCK", "end states",
                       "no state where a task sleeps or waits for ever "
                       "(invalid end state)"),
    "progress": ("PROP_PROGRESS", "ltl",
                 "<> all tasks finish, under weak fairness"),
}
# (tasks, rounds each): 4 tasks take minutes per design here.
SCOPES = ((2, 2), (3, 1))
PAN_DEPTH = 1_000_000
PAN_STAT = {
    "states": re.compile(r"^\s*(\d+) states, stored", re.M),
    "transitions": re.compile(r"^\s*(\d+) transitions", re.M),
    "depth": re.compile(r"depth reached (\d+)"),
    "errors": re.compile(r"errors: (\d+)"),
}


def designs(variants_dir=VARIANTS_DIR):
    """The variants that have a model, by name."""
    return sorted(p.parent.name for p in Path(variants_dir).glob("*/model.pml"))


def must_fail(design, variants_dir=VARIANTS_DIR):
    """The properties the design's model.toml says its model fails (the
    2013 bug in the designs that have it); every other one must hold."""
    path = Path(variants_dir) / design / "model.toml"
    if not path.is_file():
        raise RuntimeError(f"{path} is missing: it names the properties "
                           "the model must fail (fails = [] for none)")
    fails = tomllib.loads(path.read_text()).get("fails")
    if not isinstance(fails, list) or not set(fails) <= set(PROPERTIES):
        raise RuntimeError(f"{path}: fails must list properties of "
                           f"{', '.join(PROPERTIES)}, got {fails!r}")
    return set(fails)


def expected(design, prop, variants_dir=VARIANTS_DIR):
    return "fails" if prop in must_fail(design, variants_dir) else "holds"


def model_sources(design, variants_dir=VARIANTS_DIR, models_dir=MODELS_DIR):
    """{name in SPIN's folder: file}: the shared parts, and the design's
    model as <design>.pml."""
    sources = {p.name: p for p in sorted(Path(models_dir).glob("*.pml"))}
    sources[f"{design}.pml"] = Path(variants_dir) / design / "model.pml"
    return sources


def run(cmd, cwd, what):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0 and what != "pan":
        raise RuntimeError(f"{what} failed ({' '.join(cmd)}):\n"
                           f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.stdout + proc.stderr


def unreached(pan_out):
    """Coverage: the model lines of the task process the search never
    reached, and SPIN's count of unreached states ("18 of 572")."""
    block = pan_out.split("unreached in proctype task", 1)
    if len(block) < 2:
        return {"states": None, "lines": []}
    block = block[1].split("unreached in", 1)[0]
    count = re.search(r"\((\d+ of \d+) states\)", block)
    lines = sorted(set(re.findall(r"^\s+(\S+\.pml:\d+),", block, re.M)),
                   key=lambda s: (s.split(":")[0], int(s.split(":")[1])))
    return {"states": count and count.group(1), "lines": lines}


def judge(design, prop, tasks, rounds, sources, out_dir):
    """One pan run of the model files SOURCES (model_sources()); a
    counterexample is replayed into out_dir."""
    macro, mode, _ = PROPERTIES[prop]
    defines = [f"-DNTASKS={tasks}", f"-DROUNDS={rounds}", f"-D{macro}"]
    name = f"{prop}-{tasks}t{rounds}r"
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mutexlab-spin-") as work:
        for name, path in sources.items():
            shutil.copy(path, Path(work) / name)
        model = f"{design}.pml"
        run(["spin", "-a", *defines, model], work, "spin -a")
        # Safety runs look for the shortest counterexample (-i, which
        # needs -DREACH): it costs < 1 s here and makes trails readable.
        cflags = ["-O2"] + (["-DSAFETY", "-DREACH"] if mode != "ltl" else [])
        run(["gcc", *cflags, "-o", "pan", "pan.c"], work, "gcc")
        pan_args = {"assertions": ["-E", "-i"], "end states": ["-i"],
                    "ltl": ["-a", "-f"]}[mode]
        pan_out = run(["./pan", *pan_args, f"-m{PAN_DEPTH}"], work, "pan")
        (out_dir / f"{name}.pan.txt").write_text(pan_out)
        stats = {k: int(m.group(1)) if (m := r.search(pan_out)) else None
                 for k, r in PAN_STAT.items()}
        complete = "Search not completed" not in pan_out
        if stats["errors"] is None:
            raise RuntimeError(f"pan said nothing we understand for {design} "
                               f"{name}; see {out_dir / (name + '.pan.txt')}")
        verdict = "fails" if stats["errors"] else (
            "holds" if complete else "incomplete")
        result = {"property": prop, "tasks": tasks, "rounds": rounds,
                  "verdict": verdict, **stats,
                  "seconds": round(time.monotonic() - start, 2),
                  "unreached": unreached(pan_out),
                  "pan_output": f"{name}.pan.txt"}
        trails = list(Path(work).glob("*.trail"))
        if stats["errors"] and trails:
            replay = run(["spin", "-t", *defines, model], work, "spin -t")
            result["counterexample"] = write_counterexample(
                replay, design, prop, tasks, rounds, name, out_dir)
    return result


def design_source(design):
    """The design's kernel/locking/mutex.c in its cached tree (lab/tree.sh),
    or None when that tree was not made on this machine."""
    proc = subprocess.run(["bash", "-c", 'source "$1/lab/lib.sh" && tree_dir "$2"',
                           "_", str(LAB_ROOT), design], capture_output=True, text=True)
    path = Path(proc.stdout.strip()) / "kernel" / "locking" / "mutex.c"
    return path if proc.returncode == 0 and path.is_file() else None


def write_counterexample(replay_text, design, prop, tasks, rounds, name, out_dir):
    (out_dir / f"{name}.replay.txt").write_text(replay_text)
    replay = model_trail.parse_replay(replay_text)
    title = (f"{design}: {prop.replace('_', ' ')} fails "
             f"({tasks} tasks, {rounds} round(s) each)")
    source = design_source(design)
    c_lines = model_trail.c_definitions(source.read_text()) if source else None
    (out_dir / f"{name}.md").write_text(model_trail.interleaving_markdown(
        replay, tasks, title, c_lines, "kernel/locking/mutex.c"))
    model_trail.plot_sequence(replay, tasks, title, out_dir / f"{name}.png")
    return {"steps": len(replay["steps"]), "interleaving": f"{name}.md",
            "sequence_diagram": f"{name}.png", "replay": f"{name}.replay.txt",
            "failed_assertion": replay["failed_assertion"]}


def property_verdict(runs):
    verdicts = {r["verdict"] for r in runs}
    for v in ("fails", "incomplete", "holds"):
        if v in verdicts:
            return v
    return "error"


def verify(designs, variants_dir, results_dir, jobs, scopes=SCOPES):
    out = new_set_dir(Path(results_dir) / "verify", host_info()["hostname"])
    started = time.monotonic()
    jobs_list = [(d, p, t, r) for d in designs for p in PROPERTIES
                 for t, r in scopes]
    for d in designs:
        (out / d).mkdir()
    print(f"mutexlab: {len(jobs_list)} SPIN runs ({len(designs)} designs x "
          f"{len(PROPERTIES)} properties x {len(scopes)} scopes), "
          f"{jobs} at a time", flush=True)

    def one(job):
        d, p, t, r = job
        res = judge(d, p, t, r, model_sources(d, variants_dir), out / d)
        print(f"  {d:12} {p:22} {t} tasks x {r}: {res['verdict']:10} "
              f"{res['states'] or 0:>9} states {res['seconds']:6.1f} s", flush=True)
        return job, res

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, jobs_list))
    designs_out = {}
    for d in designs:
        props = {}
        for p in PROPERTIES:
            runs = [res for (jd, jp, _, _), res in results if (jd, jp) == (d, p)]
            props[p] = {"verdict": property_verdict(runs),
                        "expected": expected(d, p, variants_dir), "runs": runs}
        designs_out[d] = {"model": shown(Path(variants_dir) / d / "model.pml"),
                          "properties": props}
    unexpected = [f"{d} {p}: {v['verdict']}, expected {v['expected']}"
                  for d, dv in designs_out.items()
                  for p, v in dv["properties"].items()
                  if v["verdict"] != v["expected"]]
    verdict = {"properties": {p: desc for p, (_, _, desc) in PROPERTIES.items()},
               "designs": designs_out, "unexpected": unexpected}
    (out / "verdict.json").write_text(json.dumps(verdict, indent=1) + "\n")
    write_manifest(out, designs, variants_dir, scopes, jobs, unexpected,
                   time.monotonic() - started)
    write_ktap(out, designs_out)
    write_report(out, designs_out, scopes)
    return out, unexpected


def tool_version(cmd):
    try:
        text = subprocess.run(cmd, capture_output=True, text=True).stdout
    except OSError:
        return None
    return text.strip().splitlines()[0] if text.strip() else None


def shown(path):
    """A path as the lab's own, when it is in the lab."""
    return str(path.relative_to(LAB_ROOT)) if path.is_relative_to(LAB_ROOT) else str(path)


def write_manifest(out, designs, variants_dir, scopes, jobs, unexpected, seconds):
    sources = {shown(path): path for d in designs
               for path in model_sources(d, variants_dir).values()}
    revision, dirty, _ = lab_state(LAB_ROOT, out)
    manifest = {
        "kind": "verify", "variants": list(designs),
        "outcome": "as-expected" if not unexpected else "unexpected",
        "models_sha256": {name: sha256(path) for name, path in sorted(sources.items())},
        "scopes": [{"tasks": t, "rounds": r} for t, r in scopes],
        "properties": list(PROPERTIES), "spin": tool_version(["spin", "-V"]),
        "gcc": tool_version(["gcc", "--version"]), "jobs": jobs,
        "lab_revision": revision, "lab_dirty": dirty, "host": host_info(),
        "durations_s": {"verify": round(seconds, 1)},
        "written_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def write_ktap(out, designs_out):
    lines, n, failed = ["KTAP version 1"], 0, 0
    total = sum(len(dv["properties"]) for dv in designs_out.values())
    lines.append(f"1..{total}")
    for d, dv in designs_out.items():
        for p, v in dv["properties"].items():
            n += 1
            ok = v["verdict"] == v["expected"]
            failed += not ok
            lines.append(f"{'ok' if ok else 'not ok'} {n} - {d}/{p} "
                         f"# {v['verdict']}, expected {v['expected']}")
    lines.append(f"# Totals: pass:{n - failed} fail:{failed} xfail:0 xpass:0 "
                 "skip:0 error:0")
    (out / "verdict.ktap").write_text("\n".join(lines) + "\n")


def write_report(out, designs_out, scopes):
    props = list(PROPERTIES)
    scope_txt = ", ".join(f"{t} tasks x {r} round(s)" for t, r in scopes)
    lines = ["# Protocol models checked by SPIN", "",
             f"Scopes: {scope_txt}; a verdict holds only if it holds at every "
             "scope. Each cell: verdict (expected), states stored at the "
             "largest scope.", "",
             "| design | " + " | ".join(p.replace("_", " ") for p in props) + " |",
             "|---" * (len(props) + 1) + "|"]
    for d, dv in designs_out.items():
        cells = []
        for p in props:
            v = dv["properties"][p]
            states = max((r["states"] or 0) for r in v["runs"])
            mark = "" if v["verdict"] == v["expected"] else " **unexpected**"
            cells.append(f"{v['verdict']}{mark} ({states:,})")
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    lines += ["", "## Counterexamples", ""]
    for d, dv in designs_out.items():
        for p, v in dv["properties"].items():
            for r in v["runs"]:
                cx = r.get("counterexample")
                if cx:
                    lines.append(f"- {d}, {p.replace('_', ' ')}, {r['tasks']} "
                                 f"tasks: [{cx['steps']} steps]({d}/{cx['interleaving']}), "
                                 f"[sequence diagram]({d}/{cx['sequence_diagram']})")
    lines += ["", "Properties:", ""]
    lines += [f"- **{p.replace('_', ' ')}**: {desc}" for p, (_, _, desc) in PROPERTIES.items()]
    (out / "report.md").write_text("\n".join(lines) + "\n")


def plan(designs, variants_dir, results_dir):
    """What make verify would run: every model, property and scope."""
    lines = [f"plan: make verify (dry run: nothing run); a set in {results_dir}/verify/"]
    for d in designs:
        fails = sorted(must_fail(d, variants_dir))
        lines.append(f"  {d}: {Path(variants_dir) / d / 'model.pml'}, "
                     f"{len(PROPERTIES)} properties x scopes "
                     + ", ".join(f"{t} tasks x {r} rounds" for t, r in SCOPES)
                     + f"; must fail: {', '.join(fails) or 'none'}")
    return "\n".join(lines)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default="",
                    help="comma-separated designs (default: every variant with a model.pml)")
    ap.add_argument("--variants-dir", default=str(VARIANTS_DIR))
    ap.add_argument("--results-dir", default=settings.default("RESULTS_DIR", "verify"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--dry-run", action="store_true",
                    help="check the designs, models and tools; print the plan, run nothing")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    modelled = designs(args.variants_dir)
    chosen = [d for d in args.variants.replace(" ", ",").split(",") if d] or modelled
    unknown = [d for d in chosen if d not in modelled]
    if unknown:
        print(f"mutexlab: error: no model for {', '.join(unknown)}; models "
              f"exist for {', '.join(modelled)} (variants/<design>/model.pml)",
              file=sys.stderr)
        return 2
    missing = [t for t in ("spin", "gcc") if shutil.which(t) is None]
    if missing:
        print(f"mutexlab: error: {' and '.join(missing)} not installed "
              "(run: make deps)", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print("mutexlab: error: --jobs must be at least 1", file=sys.stderr)
        return 2
    try:
        if args.dry_run:
            print(plan(chosen, args.variants_dir, args.results_dir))
            return 0
        for d in chosen:  # before any set is made
            must_fail(d, args.variants_dir)
        out, unexpected = verify(chosen, args.variants_dir, args.results_dir,
                                 args.jobs)
    except RuntimeError as e:
        print(f"mutexlab: error: {e}", file=sys.stderr)
        return 2
    for line in unexpected:
        print(f"mutexlab: unexpected verdict: {line}", file=sys.stderr)
    # As lab/lib.sh name_set tells the job's caller the set it made.
    if os.environ.get("RESULT_SET_FILE"):
        Path(os.environ["RESULT_SET_FILE"]).write_text(f"{out}\n")
    print(out)
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
