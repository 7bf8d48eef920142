# SPDX-License-Identifier: GPL-2.0
"""A SPIN counterexample as a readable interleaving and a sequence diagram.

`spin -t` replays a trail; every step of the lab's models prints
`MLAB <task> <C function: what it does>` (models/harness.pml), and SPIN
names the assertion that failed. This module turns that replay into a list
of steps, a Markdown table and a sequence-diagram plot: one lane per task,
time downwards, the release points and the failing access marked.
"""
import re

STEP_LINE = re.compile(r"MLAB\s+(\d+)\s+(.*?)\s*$")
LABEL_FUNCTION = re.compile(r"[A-Za-z_]\w*")
# A kernel-style function definition: the name at the start of a line, or
# after its return type, and no semicolon (not a declaration).
DEFINITION = re.compile(r"^(?:[A-Za-z_][\w \t*]*[ \t*])?([A-Za-z_]\w*)\([^;]*$")
FAILED_ASSERTION = re.compile(r"text of failed assertion: (.*)$")
RELEASE_MARK = "(release point)"


def parse_replay(text):
    """{steps: [(task, what)], failed_assertion, failing_step, ends_in_cycle}.

    The replay reports a failed assertion before it prints the label of the
    step that holds it (the models check first, then print), so the failing
    step is the one printed next."""
    steps, failed, failing_step = [], None, None
    for line in text.splitlines():
        m = STEP_LINE.search(line)
        if m:
            steps.append((int(m.group(1)), m.group(2)))
            continue
        m = FAILED_ASSERTION.search(line)
        if m and failed is None:
            failed = m.group(1)
            failing_step = len(steps)
    if failing_step is not None:
        failing_step = min(failing_step, len(steps) - 1)
    return {"steps": steps, "failed_assertion": failed,
            "failing_step": failing_step,
            "ends_in_cycle": "START OF CYCLE" in text}


def label_function(label):
    """The C function a step's label names: the identifier it starts with."""
    m = LABEL_FUNCTION.match(label)
    return m and m.group(0)


def c_definitions(source_text):
    """{function: first line of its definition} in a C file."""
    lines = {}
    for number, line in enumerate(source_text.splitlines(), 1):
        m = DEFINITION.match(line)
        if m and not line.startswith((" ", "\t", "#")):
            lines.setdefault(m.group(1), number)
    return lines


def with_location(what, c_lines, c_file):
    line = c_lines.get(label_function(what)) if c_lines else None
    return f"{what} ({c_file}:{line})" if line else what


def task_name(task, ntasks):
    return f"task {task}" if task < ntasks else "environment"


def interleaving_markdown(replay, ntasks, title, c_lines=None, c_file="mutex.c"):
    """A table, one column per task; c_lines ({function: line}) adds where
    each step's function is defined in the design's C."""
    where = (f" and, where the design's tree was at hand, the line of "
             f"{c_file} that defines that function") if c_lines else ""
    lines = [f"# {title}", "",
             "Each row is one atomic step of the model; the text names the C "
             f"function and operation it stands for{where}.", "",
             "| # | " + " | ".join(task_name(t, ntasks) for t in range(ntasks + 1))
             + " |", "|---" * (ntasks + 2) + "|"]
    for i, (task, what) in enumerate(replay["steps"]):
        cells = [""] * (ntasks + 1)
        what = with_location(what, c_lines, c_file)
        if i == replay["failing_step"]:
            what = f"**FAILS: {what}**"
        elif RELEASE_MARK in what:
            what = f"**{what}**"
        cells[min(task, ntasks)] = what
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    if replay["failed_assertion"]:
        lines += ["", f"At step {replay['failing_step'] + 1} the assertion "
                  f"`{replay['failed_assertion']}` fails: "
                  + explain(replay["failed_assertion"])]
    if replay["ends_in_cycle"]:
        lines += ["", "The trail ends in a cycle that repeats for ever: some "
                  "task never finishes (a lost wake-up or a starved waiter)."]
    return "\n".join(lines) + "\n"


def explain(assertion):
    if "freeable" in assertion:
        return ("a task touches the mutex after the final owner took it and "
                "may have freed it (use after free).")
    if "cs" in assertion:
        return "two tasks are inside the critical section (mutual exclusion)."
    return "the lock word is in a state the design's README rules out."


def plot_sequence(replay, ntasks, title, path):
    """One lane per task, one row per step; release points and the last
    step (where the property failed) are marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = replay["steps"]
    lanes = ntasks + 1
    height = max(3.0, 0.32 * len(steps) + 1.5)
    fig, ax = plt.subplots(figsize=(3.4 * lanes, height))
    for lane in range(lanes):
        ax.axvline(lane, color="0.85", zorder=0)
    for row, (task, what) in enumerate(steps):
        lane = min(task, ntasks)
        release = RELEASE_MARK in what
        last = row == replay["failing_step"]
        color = "tab:red" if last else "tab:blue" if release else "0.2"
        ax.plot(lane, row, "o", color=color, markersize=4)
        ax.annotate(what if len(what) < 70 else what[:67] + "...",
                    (lane, row), xytext=(6, 0), textcoords="offset points",
                    va="center", fontsize=6.5, color=color,
                    fontweight="bold" if release or last else "normal")
    ax.set_xticks(range(lanes))
    ax.set_xticklabels([task_name(t, ntasks) for t in range(lanes)])
    ax.xaxis.tick_top()
    ax.set_xlim(-0.3, lanes - 0.1)
    ax.set_ylim(len(steps), -1)
    ax.set_yticks([])
    footer = "blue: release points"
    if replay["failed_assertion"]:
        footer += f"; red: the step where `{replay['failed_assertion']}` fails"
    ax.set_title(title, fontsize=9, pad=22)
    fig.text(0.01, 0.005, footer, fontsize=7)
    for side in ("left", "right", "bottom"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
