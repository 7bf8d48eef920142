# SPDX-License-Identifier: GPL-2.0
"""Bad input to the lab's entry points fails at once, with a clear message."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import LAB_ROOT, run_make

PYTHON = "/usr/bin/python3"


def test_unknown_variant_fails_listing_the_variants(tmp_path):
    r = run_make("bench", tmp_path, VARIANT="nope")
    assert r.returncode != 0
    assert "unknown VARIANT 'nope'" in r.stderr
    assert "owner-field" in r.stderr
    assert not (tmp_path / "results").exists()


def test_bad_settings_are_refused(tmp_path):
    for setting, value in (("THREADS", "1,x"), ("REPS", "0"),
                           ("ACCEL", "xen"), ("VCPUS", "-1"), ("PIN", "2"),
                           ("THINK_LOOPS", "-3"), ("LATENCY_EVERY", "x"),
                           ("SHARDS", "48"), ("PLOTS", "yes"),
                           ("CS_LOOPS", "16,0"), ("CS_LOOPS", "1,2,3,4,5,6,7,8,9"),
                           ("THINK_LOOPS", "0,,1"), ("PIN", "0,1,0"),
                           ("CROSSCHECK", "yes"),
                           # Each of these used to pass, failing only after
                           # tree, build and boot.
                           ("THREADS", "0"), ("THREADS", "5000"),
                           ("VCPUS", "1000"), ("WORKLOADS", "bogus"),
                           ("WORKLOADS", "contended,nope"),
                           ("DURATION_MS", "99999999999"), ("JOBS", "abc"),
                           ("JOBS", "0"), ("MEM_MB", "1"), ("REPS", "100000")):
        # DRY_RUN: a validator that broke would print a plan, not build.
        r = run_make("bench", tmp_path, DRY_RUN=1, **{setting: value})
        assert r.returncode != 0, setting
        assert setting in r.stderr, r.stderr


def test_bad_check_settings_are_refused(tmp_path):
    for setting, value, message in (
            ("CHECKS", "nonsense", "unknown check 'nonsense'"),
            ("CHECK_MS", "0", "CHECK_MS"), ("PEER_SECS", "x", "PEER_SECS"),
            ("RELEASE_WINDOW_NS", "-5", "RELEASE_WINDOW_NS")):
        r = run_make("check", tmp_path, DRY_RUN=1, **{setting: value})
        assert r.returncode != 0, setting
        assert message in r.stderr, r.stderr
    assert not (tmp_path / "results").exists()


def test_mutants_extend_a_real_variant(tmp_path):
    mutants = LAB_ROOT / "tests" / "mutants"
    listed = run_make("variants", tmp_path, VARIANTS_DIR=mutants).stdout.split()
    assert listed == ["late-read-fast", "late-read-helper", "late-read-wake",
                      "late-write-fast", "late-write-release",
                      "late-write-slow", "slow-lock",
                      "touch-after-release", "trylock-steals"]

    def series(mutant):
        patches = subprocess.run(
            ["bash", "-c", f"source lab/lib.sh && variant_patches {mutant}"],
            cwd=LAB_ROOT, env={"VARIANTS_DIR": str(mutants), "PATH": "/usr/bin:/bin"},
            capture_output=True, text=True, check=True).stdout.split()
        return [p.split("/")[-2] for p in patches]
    # common, then owner-field's, then the mutant's own.
    assert series("trylock-steals") == [
        "common", "common", "owner-field", "trylock-steals"]
    # A base that extends another: tri-state is owner-field plus its own two.
    assert series("late-read-helper") == [
        "common", "common", "owner-field", "tri-state", "tri-state",
        "late-read-helper"]


def test_designs_are_listed_and_stack_their_series(tmp_path):
    listed = run_make("variants", tmp_path).stdout.split()
    assert listed == ["count-only", "legacy", "owner-field", "stock", "tri-state"]
    patches = subprocess.run(
        ["bash", "-c", "source lab/lib.sh && variant_patches count-only"],
        cwd=LAB_ROOT, env={"PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True).stdout.split()
    # common, then legacy's (which count-only fixes), then its own two.
    assert [p.split("/")[-2] for p in patches] == [
        "common", "common", "legacy", "count-only", "count-only"]


def test_mutant_extending_an_unknown_variant_is_refused(tmp_path):
    mutant = tmp_path / "mutants" / "orphan"
    mutant.mkdir(parents=True)
    (mutant / "README.md").write_text("test\n")
    (mutant / "extends").write_text("no-such-variant\n")
    r = run_make("check", tmp_path, VARIANT="orphan",
                 VARIANTS_DIR=tmp_path / "mutants")
    assert r.returncode != 0
    assert "extends 'no-such-variant'" in r.stderr


def test_variants_listing_skips_common_and_test_variants(tmp_path):
    listed = run_make("variants", tmp_path).stdout.split()
    assert "owner-field" in listed
    assert "common" not in listed and "broken-patch" not in listed
    tests_only = run_make("variants", tmp_path,
                          VARIANTS_DIR=LAB_ROOT / "tests" / "variants")
    assert tests_only.stdout.split() == ["broken-patch"]


def test_shell_scripts_parse():
    for script in list((LAB_ROOT / "lab").glob("*.sh")) + \
            [LAB_ROOT / "guest" / "mkinitramfs.sh", LAB_ROOT / ".ci" / "run"]:
        subprocess.run(["bash", "-n", str(script)], check=True)
    subprocess.run(["sh", "-n", str(LAB_ROOT / "guest" / "init")], check=True)


def test_release_window_needs_the_common_series(tmp_path):
    r = run_make("bench", tmp_path, VARIANT="stock", RELEASE_WINDOW_NS=5)
    assert r.returncode != 0
    assert "stock has no release window" in r.stderr


# Every script of the lab: a new one cannot be left out.
SHELL_SCRIPTS = sorted(str(p.relative_to(LAB_ROOT)) for p in
                       [*LAB_ROOT.glob("lab/*.sh"), *LAB_ROOT.glob("guest/*.sh"),
                        LAB_ROOT / ".ci" / "run"])


def shellcheck(*args):
    return subprocess.run(["shellcheck", "-S", "warning", "-x", *args],
                          cwd=LAB_ROOT, capture_output=True, text=True)


def test_shell_scripts_pass_shellcheck():
    r = shellcheck("-s", "bash", *SHELL_SCRIPTS)
    assert r.returncode == 0, r.stdout
    r = shellcheck("-s", "sh", "guest/init")
    assert r.returncode == 0, r.stdout


def test_shellcheck_catches_a_mutant(tmp_path):
    mutant = tmp_path / "mutant.sh"
    mutant.write_text("#!/bin/bash\nset -euo pipefail\ncd \"$1\"\n"
                      "unused=1\nrm -rf \"$dir\"/*\n")
    r = shellcheck(str(mutant))
    assert r.returncode != 0
    assert "SC2154" in r.stdout  # $dir is referenced but never assigned


def test_bad_workloads_are_refused(tmp_path):
    r = run_make("bench", tmp_path, WORKLOADS="contended;rm")
    assert r.returncode != 0
    assert "WORKLOADS" in r.stderr


def test_quick_and_full_exclude_each_other(tmp_path):
    r = run_make("bench", tmp_path, QUICK=1, FULL=1)
    assert r.returncode != 0
    assert "exclude each other" in r.stderr
    r = run_make("bench", tmp_path, QUICK="yes")
    assert r.returncode != 0 and "QUICK takes 0 or 1" in r.stderr


def test_build_refuses_a_tree_that_does_not_hold_its_series(tmp_path):
    """build.sh's kernel key names the series: building a stale tree would
    record a kernel under a series it was not built from."""
    trees = tmp_path / "trees"
    trees.mkdir()
    env = {"PATH": "/usr/bin:/bin", "LAB_CACHE": str(tmp_path)}
    for stamp in (None, "stale"):
        if stamp:
            (trees / "owner-field.series").write_text(stamp + "\n")
        r = subprocess.run(["lab/build.sh", "owner-field", "bench"], cwd=LAB_ROOT,
                           env=env, capture_output=True, text=True)
        assert r.returncode != 0
        assert "does not hold its current series (run lab/tree.sh owner-field)" in r.stderr
    assert not (tmp_path / "build").exists()


def test_names_that_would_reach_outside_the_lab_are_refused(tmp_path):
    """A newline made `grep -xF` see two names: `owner-field` passed and
    lab/tree.sh deleted and reused a folder outside the cache."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("mine")
    env = {"LAB_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    for bad in ("owner-field\n../../victim", "../victim", "..", "owner field"):
        r = subprocess.run([str(LAB_ROOT / "lab" / "tree.sh"), bad], env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0, repr(bad)
        assert "VARIANT" in r.stderr and "is not a name" in r.stderr, r.stderr
    assert (victim / "keep").read_text() == "mine"
    assert not (tmp_path / "cache").exists()
    r = run_make("bench", tmp_path, VARIANT="owner-field", PROFILE="../bench")
    assert r.returncode != 0
    assert "PROFILE '../bench' is not a name" in r.stderr
    assert not (tmp_path / "results").exists()


def test_runs_started_in_the_same_second_get_folders_of_their_own(tmp_path):
    """Both runs used to write into one folder; QEMU's channels truncated
    each other's files."""
    script = ('source "$1/lab/lib.sh"; for i in 1 2 3; do '
              'unique_folder "$2/results/owner-field/20261204T000000Z-vm"; done')
    r = subprocess.run(["bash", "-c", script, "_", str(LAB_ROOT), str(tmp_path)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    made = r.stdout.split()
    base = str(tmp_path / "results" / "owner-field" / "20261204T000000Z-vm")
    assert made == [base, base + "-2", base + "-3"]
    assert all((tmp_path / m).is_dir() for m in made)
    # A folder that cannot be made is an error, not a hunt for a free name.
    (tmp_path / "a-file").write_text("")
    r = subprocess.run(["bash", "-c", 'source "$1/lab/lib.sh"; unique_folder "$2/x"',
                        "_", str(LAB_ROOT), str(tmp_path / "a-file")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "cannot create" in r.stderr, r.stderr


def test_a_kasan_kernel_boots_with_four_level_paging(tmp_path):
    """A KASAN guest panicked at boot when an interrupt came while
    identify_cpu() had cleared the LA57 bit that KASAN's address test reads
    (lab/lib.sh kernel_append): KASAN kernels get no5lvl, others nothing."""
    appended = {}
    for profile, kasan in (("check", "CONFIG_KASAN=y"),
                           ("bench", "# CONFIG_KASAN is not set")):
        build = tmp_path / profile
        build.mkdir()
        (build / ".config").write_text(f"CONFIG_64BIT=y\n{kasan}\n")
        r = subprocess.run(["bash", "-c", 'source "$1/lab/lib.sh"; kernel_append "$2"',
                            "_", str(LAB_ROOT), str(build)],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        appended[profile] = r.stdout.split()
    assert appended == {"check": ["no5lvl"], "bench": []}


def test_a_saved_reference_keeps_the_numbers_not_the_logs(tmp_path):
    """The copy holds each pooled set's manifest, steps and numbers (written
    without indentation), rounds that name the copies, and no console."""
    made = tmp_path / "made" / "owner-field" / "20261206T230422Z-vm"
    made.mkdir(parents=True)
    results = {"points": [{"per_sec": 340367.8, "latency_hdr_ns": {
        "sub_bits": 4, "counts": [[75, 6], [76, 115]]}}]}
    (made / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (made / "manifest.json").write_text('{"variant": "owner-field"}\n')
    (made / "steps.txt").write_text("guest 171.5\n")
    (made / "console.log").write_text("boot\n")
    compare_dir = tmp_path / "compare" / "20261206T230422Z"
    compare_dir.mkdir(parents=True)
    for name in ("report.md", "throughput.png", "throughput.svg"):
        (compare_dir / name).write_text(name)
    (compare_dir / "comparison.json").write_text(json.dumps({"sets": [str(made)]}))
    (compare_dir / "rounds.txt").write_text(f"1 owner-field {made}\n")

    def save():
        return subprocess.run(["bash", str(LAB_ROOT / "lab" / "save_reference.sh"),
                               str(compare_dir), str(tmp_path / "reference")],
                              capture_output=True, text=True, timeout=60)

    r = save()
    assert r.returncode == 0, r.stderr
    ref = tmp_path / "reference" / compare_dir.name
    copy = ref / "sets" / "owner-field" / made.name
    assert sorted(f.name for f in copy.iterdir()) == \
        ["manifest.json", "results.json", "steps.txt"]
    text = (copy / "results.json").read_text()
    assert json.loads(text) == results and "\n" not in text.strip()
    assert (ref / "rounds.txt").read_text() == \
        f"1 owner-field sets/owner-field/{made.name}\n"
    assert (ref / "report.md").is_file() and (ref / "throughput.svg").is_file()
    r = save()
    assert r.returncode != 0 and "exists; remove it first" in r.stderr


def test_build_progress_stays_off_stdout():
    """A script's stdout is what it reports: interleave.sh's rounds once
    held the build's progress lines, and make compare found no sets."""
    script = ('source "$1/lab/lib.sh"; '
              'for i in $(seq 1 450); do echo "  CC obj$i.o"; done | show_progress')
    r = subprocess.run(["bash", "-c", script, "_", str(LAB_ROOT)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert r.stderr.splitlines() == ["  ... 200 lines:   CC obj200.o",
                                     "  ... 400 lines:   CC obj400.o"]


def test_every_script_is_shellchecked():
    assert {"lab/calibrate_regress.sh", "lab/compare.sh", "lab/crosscheck.sh",
            "lab/save_reference.sh", "lab/bench.sh", ".ci/run"} <= set(SHELL_SCRIPTS)


def old_set(results, variant, name):
    path = results / variant / name
    path.mkdir(parents=True)
    (path / "results.json").write_text('{"points": []}')
    (path / "verdict.json").write_text('{"outcome": "checks-passed"}')
    return path


@pytest.mark.parametrize("script, settings, message", [
    ("check_repeat.sh", {"VARIANT": "nope", "RUNS": "2"}, "made no check set"),
    ("calibrate_regress.sh", {"BASE": "nope", "PAIRS": "2"}, "the nope run failed"),
])
def test_repeated_runs_that_all_fail_count_nothing(tmp_path, script, settings, message):
    """They used to count an old set in place of each failed run, or to
    print '0 of 20 flagged' and exit 0."""
    results = tmp_path / "results"
    old_set(results, "nope", "check-20260101T000000Z-vm")
    old_set(results, "nope", "20260101T000000Z-vm")
    env = dict(os.environ, RESULTS_DIR=str(results), **settings)
    r = subprocess.run([str(LAB_ROOT / "lab" / script)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr
    assert "flagged" not in r.stdout and "runs" not in r.stdout


@pytest.mark.parametrize("target", ["bench", "check"])
def test_a_dry_run_checks_and_plans_without_building(tmp_path, target):
    cache = tmp_path / "cache"
    r = run_make(target, tmp_path, DRY_RUN=1, VARIANT="tri-state", QUICK=1,
                 LAB_CACHE=str(cache))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"plan: make {target} VARIANT=tri-state")
    assert "tri-state/build-" in r.stdout
    if target == "bench":
        assert "variants/tri-state/0002-" in r.stdout and "QUICK=1" in r.stdout
    else:
        assert "boot free_article:" in r.stdout
    assert not cache.exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize("target, settings, plan", [
    ("compare", {"VARIANTS": "tri-state owner-field"},
     "plan: make compare: 3 round(s) of tri-state owner-field"),
    ("verify", {"VARIANTS": "legacy"}, "plan: make verify"),
    ("calibrate", {"BASE": "tri-state"}, "plan: calibrate: 5 comparison(s) of tri-state"),
])
def test_every_job_has_a_dry_run(tmp_path, target, settings, plan):
    cache = tmp_path / "cache"
    r = run_make(target, tmp_path, DRY_RUN=1, LAB_CACHE=str(cache), **settings)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(plan), r.stdout
    assert not cache.exists() and not (tmp_path / "results").exists()


def test_a_regress_dry_run_names_the_sets_it_would_compare(tmp_path):
    from test_regress import write_boots
    write_boots(tmp_path / "results", "a", {1: 1e6}, boots=2)
    write_boots(tmp_path / "results", "b", {1: 1e6}, boots=2, first=2)
    r = run_make("regress", tmp_path, DRY_RUN=1, BASE="a:2", NEW="b:2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("plan: make regress, 2 base and 2 new boot(s), paired")
    # write_boots names them as an interleaved run would: paired.
    assert [line.split("/")[-1] for line in lines[2:]] == [
        "20261201T000000Z-vm", "20261202T000000Z-vm",
        "20261201T010000Z-vm", "20261202T010000Z-vm"]
    assert not list((tmp_path / "results").glob("*/*/regress*"))


@pytest.mark.parametrize("target, settings, message", [
    ("compare", {"VARIANTS": "tri-state bogus"}, "unknown VARIANT 'bogus'"),
    ("compare", {}, 'give VARIANTS="a b ..."'),
    # Passed DRY_RUN; a real run then built every kernel and failed in seq.
    ("compare", {"VARIANTS": "tri-state", "ROUNDS": "abc"},
     "ROUNDS must be an integer from 1 to 1000"),
    ("regress", {"BASE": "nope", "NEW": "a"}, "nope: neither a result set"),
    ("regress", {}, "make regress needs BASE="),
    ("verify", {"VARIANTS": "bogus"}, "no model for bogus"),
    ("bundle", {"ACCEL": "tcg", "VCPU_PIN": "1"}, "VCPU_PIN=1 is for make bench"),
    ("calibrate", {"NEW": "bogus"}, "unknown VARIANT 'bogus'"),
    ("calibrate", {"SETS_PER_SIDE": "1"}, "SETS_PER_SIDE must be an integer from 2"),
    ("calibrate", {"PAIRS": "0"}, "PAIRS must be an integer from 1"),
    ("calibrate", {"REPS": "x"}, "REPS must be an integer"),
    # nan compares false with every change: no row could ever be flagged.
    ("calibrate", {"THRESHOLD": "nan"}, "THRESHOLD must be a percentage from 0"),
    ("regress", {"BASE": "a", "NEW": "a", "THRESHOLD": "-3"},
     "THRESHOLD must be a percentage from 0"),
])
def test_a_dry_run_refuses_bad_input(tmp_path, target, settings, message):
    r = run_make(target, tmp_path, DRY_RUN=1, **settings)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr


def test_the_command_lists_its_verbs_and_refuses_others():
    r = subprocess.run([PYTHON, "lab", "--help"], cwd=LAB_ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 0
    for verb in ("bench", "check", "compare", "regress", "verify", "calibrate"):
        assert f"  {verb} " in r.stdout
    r = subprocess.run([PYTHON, "lab", "bogus"], cwd=LAB_ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 2 and "invalid choice: 'bogus'" in r.stderr


def test_check_profiles_are_check_and_debug(tmp_path):
    r = run_make("check", tmp_path, DRY_RUN=1, VARIANT="tri-state", PROFILE="debug")
    assert r.returncode == 0, r.stderr
    assert "tri-state/build-debug (profile debug)" in r.stdout
    # The correctness checks only: lockdep turns the fast paths off.
    assert "boot free_article" not in r.stdout and "boot exclusion" in r.stdout
    r = run_make("check", tmp_path, DRY_RUN=1, VARIANT="tri-state", PROFILE="bench")
    assert r.returncode != 0 and "PROFILE=check or PROFILE=debug" in r.stderr


@pytest.mark.parametrize("script, settings, message", [
    ("check_repeat.sh", {"VARIANT": "nope", "RUNS": "1"}, "made no check set"),
    ("calibrate_regress.sh", {"BASE": "nope", "PAIRS": "2"}, "the nope run failed"),
])
def test_repeated_runs_into_a_new_results_dir_say_why_they_stop(
        tmp_path, script, settings, message):
    """With no set of the variant yet, finding "the newest set" was a failed
    pipeline under pipefail: check_repeat.sh ended at once, saying nothing."""
    env = dict(os.environ, RESULTS_DIR=str(tmp_path / "new"), **settings)
    r = subprocess.run([str(LAB_ROOT / "lab" / script)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr[-2000:]


FAKE_JOB = """source lab/lib.sh
BUILD=$1; VARIANT=v
[ "$2" = early ] && exit 3
new_result_folder
name_set "$OUT"
# Another run of the same variant, started later, makes a newer set.
mkdir -p "$RESULTS_DIR/v/99991231T235959Z-other"
exit 1
"""


@pytest.mark.parametrize("when, made", [("late", True), ("early", False)])
def test_a_job_names_the_set_it_made_not_the_newest(tmp_path, when, made):
    """set_made_by (check_repeat.sh, calibrate_regress.sh, interleave.sh):
    the set the job itself made, even when another run made a newer one;
    none when the job failed before making one."""
    build = tmp_path / "build"
    build.mkdir()
    (build / ".config").write_text("CONFIG_X=y\n")
    job = tmp_path / "job.sh"
    job.write_text(FAKE_JOB)
    r = subprocess.run(
        ["bash", "-c", f'source lab/lib.sh && set_made_by bash {job} {build} {when}; echo "status $?"'],
        cwd=LAB_ROOT, env=dict(os.environ, RESULTS_DIR=str(tmp_path / "results")),
        capture_output=True, text=True, timeout=60)
    lines = r.stdout.splitlines()
    assert lines[-1] == ("status 1" if made else "status 3")
    if made:
        (path,) = lines[:-1]
        assert "/results/v/" in path and "other" not in path
        assert (Path(path) / "kernel.config").is_file()
    else:
        assert lines == ["status 3"]
