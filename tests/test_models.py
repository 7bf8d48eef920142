# SPDX-License-Identifier: GPL-2.0
"""The SPIN models: expected verdicts, mutants that each break a property,
the encodings kept in step with the C, and the counterexample replay."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import model_encoding
import model_trail
import verify
from conftest import LAB_ROOT

VARIANTS = LAB_ROOT / "variants"
PYTHON = "/usr/bin/python3"

needs_spin = pytest.mark.skipif(shutil.which("spin") is None,
                                reason="spin is not installed (make deps)")

PICK_WAITER = """\
\t\t\tatomic {
\t\t\t\tMEM;
\t\t\t\tnext = FIRST_WAITER;
\t\t\t\tSTEP("__mutex_unlock_slowpath: first waiter into wake_q")
\t\t\t}
"""
RELEASE_BOTH = """\
\t\t\tatomic {
\t\t\t\tMEM;
\t\t\t\tcount = count & ~(MUTEX_LOCKED | MUTEX_WAIT_LOCK);
\t\t\t\tholder = 0;
\t\t\t\tguard_holder = 0;
\t\t\t\tSTEP("__mutex_unlock_slowpath: fetch_andnot_release(LOCKED | WAIT_LOCK) (release point)")
\t\t\t}
"""

# Broken models of our own: (design, model file, what is broken, text,
# replacement, property that must fail, scope). Each breaks a free-safe
# design, which passes every property as it is, in one place.
MUTANTS = {
    "trylock-read-and-cmpxchg-split": (
        "tri-state", "owner-word.pml", "one step made non-atomic: __mutex_trylock_common's "
        "read and cmpxchg become two steps",
        "\t\tr = 0;\n\t\tv = owner;\n\t\tif\n",
        "\t\tr = 0;\n\t\tv = owner\n\t}\n\tatomic {\n\t\tif\n",
        "mutual_exclusion", (2, 2)),
    "wait-list-read-after-release": (
        "count-only", "count-only.pml", "two steps reordered: unlock picks the waiter to wake "
        "after the releasing fetch_andnot",
        PICK_WAITER + RELEASE_BOTH, RELEASE_BOTH + PICK_WAITER,
        "no_access_after_free", (3, 1)),
    "waiters-flag-never-set": (
        "tri-state", "owner-word.pml", "one flag update dropped: __mutex_add_waiter does not "
        "set WAITERS, so unlock never wakes anybody",
        "\t\t\towner = owner | MUTEX_FLAG_WAITERS;\n", "\t\t\tskip;\n",
        "no_lost_wakeup", (2, 1)),
    "sleep-state-set-after-guard-release": (
        "count-only", "count-only.pml", "two steps reordered: the waiter sets its sleep state "
        "after it released the guard, so a wake-up in between is lost",
        "\t\ttstate[_pid] = BLOCKED;\t\t/* __set_current_state(state) */\n"
        "\t\tmutex_unlock_wait_list();\n",
        "\t\tmutex_unlock_wait_list();\n\t\ttstate[_pid] = BLOCKED;\n",
        "no_lost_wakeup", (2, 1)),
    "waiter-count-not-dropped": (
        "count-only", "count-only.pml", "one count update dropped: __mutex_remove_waiter "
        "leaves the waiter counted",
        "\t\tcount = count - MUTEX_ONE_WAITER;\n", "\t\tskip;\n",
        "lock_word_invariant", (2, 1)),
    "no-waiter-unlock-keeps-locked": (
        "count-only", "count-only.pml", "one flag update dropped: the unlock slow path without "
        "waiters leaves MUTEX_LOCKED set",
        "\t\t\t\tcount = v & ~MUTEX_LOCKED;\n", "\t\t\t\tcount = v;\n",
        "progress", (2, 1)),
}


def mutant_models(tmp_path, name):
    """The design's model files, one of them broken, in a folder of
    their own."""
    design, model_file, _, text, replacement, _, _ = MUTANTS[name]
    sources = verify.model_sources(design)
    assert model_file in sources, f"{name}: {design}'s model has no {model_file}"
    broken = tmp_path / model_file
    source = sources[model_file].read_text()
    assert source.count(text) == 1, f"{name}: the text to break is not in {model_file} once"
    broken.write_text(source.replace(text, replacement))
    return {**sources, model_file: broken}


@needs_spin
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_model_mutant_fails_its_property(tmp_path, name):
    design, _, _, _, _, prop, (tasks, rounds) = MUTANTS[name]
    out = tmp_path / "out"
    out.mkdir()
    broken = verify.judge(design, prop, tasks, rounds,
                          mutant_models(tmp_path, name), out)
    assert broken["verdict"] == "fails", broken
    intact = verify.judge(design, prop, tasks, rounds, verify.model_sources(design), out)
    assert intact["verdict"] == "holds", intact


def test_every_property_has_a_mutant():
    assert {m[5] for m in MUTANTS.values()} == set(verify.PROPERTIES)


@needs_spin
def test_make_verify_gives_the_expected_verdicts(tmp_path):
    """The whole `make verify`: owner-field and legacy each produce a
    free-after-unlock counterexample; tri-state and count-only hold."""
    proc = subprocess.run(["make", "-s", "-C", str(LAB_ROOT), "verify",
                           f"RESULTS_DIR={tmp_path}"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = Path(proc.stdout.strip().splitlines()[-1])
    assert out.parent == tmp_path / "verify"
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["unexpected"] == []
    designs = verdict["designs"]
    assert set(designs) == set(verify.designs()) == {
        "owner-field", "legacy", "tri-state", "count-only"}
    for design, dv in designs.items():
        for prop, v in dv["properties"].items():
            assert v["verdict"] == verify.expected(design, prop), (design, prop)
            assert len(v["runs"]) == len(verify.SCOPES)
            assert all(r["states"] > 0 for r in v["runs"])
    for design in ("owner-field", "legacy"):
        runs = designs[design]["properties"]["no_access_after_free"]["runs"]
        for run in runs:
            cx = run["counterexample"]
            assert (out / design / cx["sequence_diagram"]).stat().st_size > 0
            table = (out / design / cx["interleaving"]).read_text()
            assert "(release point)" in table and "FAILS:" in table
    ktap = (out / "verdict.ktap").read_text()
    assert ktap.startswith("KTAP version 1\n")
    assert "# Totals: pass:20 fail:0" in ktap
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "verify" and manifest["outcome"] == "as-expected"
    assert "Spin Version" in manifest["spin"]


def test_verify_refuses_an_unknown_design(tmp_path):
    proc = subprocess.run([PYTHON, str(LAB_ROOT / "lab" / "verify.py"),
                           "--variants", "stock", "--results-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "no model for stock" in proc.stderr
    assert not (tmp_path / "verify").exists()


@pytest.mark.parametrize("design", verify.designs())
def test_model_encoding_matches_the_patches(design):
    assert model_encoding.mismatches(design, VARIANTS) == []
    source, image = model_encoding.source(design, VARIANTS)
    patch = model_encoding.first_patch(VARIANTS, source).read_text()
    assert model_encoding.c_encoding(patch, image), "no encoding read from the C"


@pytest.mark.parametrize("design, old, new", [
    ("tri-state", "#define MUTEX_FLAG_WAIT_LOCK\t0x08", "#define MUTEX_FLAG_WAIT_LOCK\t0x10"),
    ("count-only", "#define MUTEX_ONE_WAITER\t0x4", "#define MUTEX_ONE_WAITER\t0x8"),
    ("owner-field", " #define MUTEX_FLAG_PICKUP\t0x04", " #define MUTEX_FLAG_PICKUP\t0x08"),
    ("legacy", "atomic_cmpxchg_acquire(&lock->count, 1, 0)",
     "atomic_cmpxchg_acquire(&lock->count, 1, -1)"),
    ("legacy", "atomic_cmpxchg_acquire(&lock->count, 1, 0)",
     "atomic_cmpxchg_acquire(&lock->count, 2, 0)"),
    ("tri-state", "+#define MUTEX_FLAG_WAIT_LOCK\t0x08\n",
     "+#define MUTEX_FLAG_WAIT_LOCK\t0x08\n+#define MUTEX_FLAG_SPARE\t0x10\n"),
])
def test_a_bit_changed_in_the_patch_alone_is_a_mismatch(tmp_path, design, old, new):
    source, _ = model_encoding.source(design, VARIANTS)
    patch = model_encoding.first_patch(VARIANTS, source)
    text = patch.read_text()
    assert old in text
    changed = tmp_path / patch.name
    changed.write_text(text.replace(old, new, 1))
    problems = model_encoding.mismatches(design, VARIANTS, patch=changed)
    assert problems, "the checker missed a changed encoding"


REPLAY = """\
          MLAB 1           __mutex_unlock_slowpath: cmpxchg_release(&lock->owner, flags) (release point)
      MLAB 0       mutex_lock: returned, critical section
spin: owner-field.pml:58, Error: assertion violated
spin: text of failed assertion: assert((!(freeable)||(freer==_pid)))
          MLAB 1           raw_spin_lock(&lock->wait_lock): tries
spin: trail ends after 40 steps
"""


def test_replay_names_the_failing_step_and_plots(tmp_path):
    replay = model_trail.parse_replay(REPLAY)
    assert replay["steps"][2] == (1, "raw_spin_lock(&lock->wait_lock): tries")
    assert replay["failing_step"] == 2
    table = model_trail.interleaving_markdown(replay, 2, "t")
    assert "**FAILS: raw_spin_lock(&lock->wait_lock): tries**" in table
    assert "use after free" in table
    model_trail.plot_sequence(replay, 2, "t", tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 0


# Step labels: STEP("...") and the labels a model passes by #define.
STEP_LABEL = re.compile(r'STEP\("([^"]+)"\)|#define [A-Z_]+\s+"([^"]+)"')
# The harness's own labels that stand for no C of the design.
NOT_C = ("finished", "signal sent")


INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def model_text(sources, name):
    """A model file with the files it includes, in order."""
    text = sources[name].read_text()
    return text + "".join(model_text(sources, inc) for inc in INCLUDE.findall(text))


def step_functions(design):
    """The C functions a model's step labels name (included files too)."""
    sources = verify.model_sources(design)
    labels = [a or b for a, b in STEP_LABEL.findall(model_text(sources, f"{design}.pml"))]
    if "#define WAKE_UP" in sources[f"{design}.pml"].read_text():
        labels.remove("wake_up_q: task woken")
    return {model_trail.label_function(l) for l in labels if not l.startswith(NOT_C)}


@pytest.mark.kernel
@pytest.mark.parametrize("design", verify.designs())
def test_every_model_step_names_c_of_its_design(design):
    """A step that claims a C function the design does not call (a
    raw_spin_lock() in tri-state, a wake_up_q() in legacy) fails."""
    proc = subprocess.run([str(LAB_ROOT / "lab" / "tree.sh"), design],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    source = verify.design_source(design)
    assert source, f"no tree for {design}"
    c = source.read_text()
    def lacking(functions):
        return sorted(f for f in functions if not re.search(rf"\b{re.escape(f)}\(", c))
    assert lacking(step_functions(design)) == [], \
        f"{design}'s model names C that {source} lacks"
    # The mutant: a label borrowed from the other family of designs.
    borrowed = {"owner-field": "mutex_lock_wait_list", "legacy": "wake_up_q",
                "tri-state": "raw_spin_lock", "count-only": "__mutex_handoff"}
    assert lacking([borrowed[design]]) == [borrowed[design]]
    assert "__mutex_unlock_slowpath" in model_trail.c_definitions(c)


def lab_verify(tmp_path, variants_dir, *args):
    env = dict(os.environ, VARIANTS_DIR=str(variants_dir), RESULTS_DIR=str(tmp_path / "r"))
    return subprocess.run([PYTHON, "lab", "verify", *args], cwd=LAB_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_designs_are_found_by_their_folder(tmp_path):
    """A design with a model is one folder: make verify plans it with
    nothing outside its folder changed (it needed verify.py's DESIGNS and
    EXPECTED_FAILURES, model_encoding.py's SOURCES and the Makefile's help)."""
    variants = tmp_path / "variants"
    shutil.copytree(VARIANTS, variants)
    new = variants / "tri-state-again"
    new.mkdir()
    (new / "README.md").write_text("tri-state, once more\n")
    (new / "extends").write_text("tri-state\n")
    shutil.copy(VARIANTS / "tri-state" / "model.pml", new / "model.pml")
    (new / "model.toml").write_text('fails = ["progress"]\n'
                                    'encoding = { series = "tri-state" }\n')
    r = lab_verify(tmp_path, variants, "--dry-run")
    assert r.returncode == 0, r.stderr
    assert f"  tri-state-again: {new / 'model.pml'}," in r.stdout
    assert "must fail: progress" in r.stdout
    assert verify.designs(variants) == sorted(verify.designs() + ["tri-state-again"])
    assert verify.expected("tri-state-again", "progress", variants) == "fails"
    assert model_encoding.mismatches("tri-state-again", variants) == []


def test_a_model_without_its_declaration_is_refused_before_any_run(tmp_path):
    variants = tmp_path / "variants"
    shutil.copytree(VARIANTS, variants)
    (variants / "legacy" / "model.toml").unlink()
    r = lab_verify(tmp_path, variants)
    assert r.returncode == 2
    assert f"{variants / 'legacy' / 'model.toml'} is missing" in r.stderr
    assert not (tmp_path / "r").exists()
    (variants / "legacy" / "model.toml").write_text('fails = ["no_such_property"]\n')
    r = lab_verify(tmp_path, variants, "--dry-run")
    assert r.returncode == 2 and "fails must list properties" in r.stderr
