# SPDX-License-Identifier: GPL-2.0
"""lab/settings.toml and lab/settings.py: defaults, presets, validation, and
the lists made from the table."""
import os
import re
import subprocess

import pytest

import settings
from conftest import LAB_ROOT


def test_bench_defaults_come_from_the_table():
    values = settings.resolve("bench", {})
    assert values["VCPUS"] == str(os.cpu_count())
    assert values["WORKLOADS"] == "uncontended,contended,oversubscribed,sharded"
    assert (values["CS_LOOPS"], values["THINK_LOOPS"], values["PIN"]) == ("16,800", "0,160", "0,1")
    assert values["RELEASE_WINDOW_NS"] == "0"
    assert values["RESULTS_DIR"] == str(LAB_ROOT / "results")
    assert values["THREADS"] == ",".join(map(str, settings.thread_sweep(os.cpu_count())))
    # Left to the scripts that own them.
    assert "LAB_CACHE" not in values and "VARIANTS_DIR" not in values


@pytest.mark.parametrize("vcpus, threads, mem_mb", [
    ("1", "1,2", "1024"), ("2", "1,2,4", "1024"), ("6", "1,2,4,6,12", "1536"),
    ("8", "1,2,4,8,16", "2048"), ("128", "1,2,4,8,16,32,64,128,256", "32768"),
])
def test_the_sweep_and_the_guest_grow_with_the_vcpus(vcpus, threads, mem_mb):
    values = settings.resolve("bench", {"VCPUS": vcpus})
    assert (values["THREADS"], values["MEM_MB"]) == (threads, mem_mb)
    assert settings.resolve("check", {"VCPUS": vcpus})["MEM_MB"] == mem_mb


def test_a_filled_in_default_names_each_thread_count_once():
    assert settings.resolve("bench", {"QUICK": "1", "VCPUS": "1"})["THREADS"] == "1,2"
    assert settings.resolve("bench", {"QUICK": "1", "VCPUS": "2"})["THREADS"] == "1,2,4"
    # What a user gives is theirs.
    assert settings.resolve("bench", {"THREADS": "1,1"})["THREADS"] == "1,1"


def test_check_defaults_follow_the_profile():
    values = settings.resolve("check", {})
    assert values["RELEASE_WINDOW_NS"] == "1000000"
    assert values["CHECKS"].split()[-1] == "ww_mutex"
    debug = settings.resolve("check", {"PROFILE": "debug"})
    assert debug["CHECKS"] == "exclusion locktorture"


def test_quick_and_full_change_only_the_unset():
    quick = settings.resolve("bench", {"QUICK": "1", "VCPUS": "4", "REPS": "7"})
    assert quick["THREADS"] == "1,4,8"
    assert quick["REPS"] == "7"
    assert (quick["DURATION_MS"], quick["CS_LOOPS"], quick["PIN"]) == ("300", "16", "0")
    full = settings.resolve("bench", {"FULL": "1"})
    assert (full["REPS"], full["DURATION_MS"], full["CS_LOOPS"]) == ("10", "2000", "16,800")
    with pytest.raises(settings.SettingsError, match="exclude each other"):
        settings.resolve("bench", {"QUICK": "1", "FULL": "1"})


@pytest.mark.parametrize("name, good, bad, message", [
    ("VCPUS", "255", "256", "VCPUS must be an integer from 1 to 255 (QEMU's pc machine)"),
    ("REPS", "1", "0", "REPS must be an integer from 1 to 1000"),
    ("DURATION_MS", "5", "99999999999", "DURATION_MS must be an integer"),
    ("SHARDS", "128", "48", "SHARDS must be a power of two"),
    ("CS_LOOPS", "1,2,3,4,5,6,7,8", "1,2,3,4,5,6,7,8,9", "up to 8 comma-separated"),
    ("THINK_LOOPS", "0,160", "0,,1", "THINK_LOOPS: '' is not an integer"),
    ("THREADS", "1,1024", "1,x", "THREADS: 'x' is not an integer from 1 to 1024"),
    ("PIN", "1,0", "0,1,0", "PIN must be up to 2"),
    ("PLOTS", "0", "yes", "PLOTS takes 0 or 1"),
    ("ACCEL", "kvm", "xen", "ACCEL must be auto, kvm, tcg, icount"),
    ("WORKLOADS", "locktorture_cs", "contended,nope", "unknown workload 'nope'"),
    ("JOBS", "4096", "abc", "JOBS must be an integer from 1 to 4096"),
])
def test_each_type_takes_good_values_and_names_bad_ones(name, good, bad, message):
    assert settings.resolve("bench", {name: good})[name] == good
    with pytest.raises(settings.SettingsError) as e:
        settings.resolve("bench", {name: bad})
    assert message in str(e.value)


@pytest.mark.parametrize("job", ["bench", "check", "compare"])
def test_icount_takes_one_vcpu_only(job):
    """QEMU 7.2 hangs at SMP bring-up under icount: refused before a build."""
    assert settings.resolve(job, {"ACCEL": "icount", "VCPUS": "1"})["ACCEL"] == "icount"
    with pytest.raises(settings.SettingsError,
                       match="ACCEL=icount needs VCPUS=1, got VCPUS=2"):
        settings.resolve(job, {"ACCEL": "icount", "VCPUS": "2"})
    assert settings.resolve(job, {"ACCEL": "tcg", "VCPUS": "2"})["VCPUS"] == "2"


def test_checks_are_checked_against_the_catalog():
    with pytest.raises(settings.SettingsError, match="unknown check 'nope'"):
        settings.resolve("check", {"CHECKS": "exclusion nope"})


def test_the_lists_made_from_the_table():
    """What the Makefile exports, the manifests record and make regress
    compares: the lists the scripts and regress.py held before the table."""
    names = {s.name for s in settings.table()}
    assert {"VARIANT", "VCPUS", "RESULTS_DIR", "LAB_CACHE", "VARIANTS_DIR", "BASE",
            "NEW", "CONFIRM", "CROSSCHECK_THREADS", "DRY_RUN"} <= names
    # The 39 the Makefile exported by hand before the table, and
    # RESULTS_CHANNEL, RUN, MIX_MACHINES, BUNDLE, LAVA_URL and VCPU_PIN
    # since, and make calibrate's six, which its script defaulted and
    # checked itself.
    assert {"PAIRS", "SETS_PER_SIDE", "BASE_VARIANTS_DIR", "NEW_VARIANTS_DIR",
            "BASE_APPEND", "NEW_APPEND"} <= names
    assert len(names) == 53
    assert set(settings.comparable()) == {"vcpus", "accel", "cs_loops", "think_loops",
                                          "duration_ms", "pin", "shards"}
    record = {job: {s.name for s in settings.table() if job in s.record}
              for job in ("bench", "check")}
    assert record["bench"] == {
        "VCPUS", "MEM_MB", "ACCEL", "WORKLOADS", "DURATION_MS", "WARMUP_MS", "REPS",
        "CS_LOOPS", "THINK_LOOPS", "LATENCY_EVERY", "THREADS", "PIN", "SHARDS",
        "QUICK", "FULL", "RELEASE_WINDOW_NS", "GUEST_APPEND", "UNSAFE_APPEND",
        "RESULTS_CHANNEL", "VCPU_PIN"}
    assert record["check"] == {"VCPUS", "MEM_MB", "ACCEL", "CHECKS", "CHECK_MS",
                               "RELEASE_WINDOW_NS", "PEER_SECS", "GUEST_APPEND",
                               "UNSAFE_APPEND", "PROFILE", "RESULTS_CHANNEL", "VCPU_PIN"}


@pytest.mark.parametrize("entry, message", [
    ('name = "X"\njobs = ["bench"]\ntype = "count"\nto = "module"\n', "missing ['help']"),
    ('name = "X"\njobs = ["bench"]\ntype = "float"\nto = "module"\nhelp = "h"\n',
     "type 'float'"),
    ('name = "X"\njobs = ["nightly"]\ntype = "flag"\nto = "module"\nhelp = "h"\n', "jobs"),
])
def test_a_bad_entry_is_refused(entry, message):
    with pytest.raises(settings.SettingsError, match=message.replace("[", r"\[")):
        settings.parse("[[setting]]\n" + entry)


def test_the_shell_gets_values_whole():
    """load_settings: a value with spaces and '=' arrives as it was given,
    exported to what the job runs."""
    value = "mutexlab.test_a=1 b c=2=3"
    out = subprocess.run(
        ["bash", "-c", 'source lab/lib.sh && load_settings bench && '
                       'printf "%s|%s" "$GUEST_APPEND" "$(printenv REPS)"'],
        cwd=LAB_ROOT, env={**os.environ, "GUEST_APPEND": value},
        capture_output=True, text=True, check=True).stdout
    assert out == value + "|5"


@pytest.mark.parametrize("value, refused", [
    # The issue's: it replaced the lab's init, threads, length, panic and
    # console level, and the manifest still said threads 1,2,4 and 300 ms.
    ("rdinit=/bin/sh mutexlab.threads=3 mutexlab.duration_ms=3600000 panic=0 loglevel=0",
     "replace the lab's own rdinit mutexlab.threads mutexlab.duration_ms panic loglevel"),
    ("mutexlab.check=free_article", "replace the lab's own mutexlab.check"),
    ("a=1\nb", "is not a kernel parameter"),
    ("a  b", "is not a kernel parameter"),
    ("x='y z'", "is not a kernel parameter"),
    ("mutexlab.test_bug=1 mutex.test_delay_loops=20 nokaslr", None),
])
def test_extra_kernel_parameters_cannot_replace_the_lab_s_own(value, refused):
    env = {"GUEST_APPEND": value, "VCPUS": "2"}
    if refused is None:
        assert settings.resolve("bench", env)["GUEST_APPEND"] == value
        return
    with pytest.raises(settings.SettingsError, match=re.escape(refused)):
        settings.resolve("bench", env)
    if "replace" in refused:
        # Asked for, it is allowed, and the manifest records that it was.
        got = settings.resolve("bench", {**env, "UNSAFE_APPEND": "1"})
        assert got["GUEST_APPEND"] == value and got["UNSAFE_APPEND"] == "1"
        assert "bench" in next(s for s in settings.table()
                               if s.name == "UNSAFE_APPEND").record
    for name in ("BASE_APPEND", "NEW_APPEND"):
        with pytest.raises(settings.SettingsError, match=re.escape(refused)):
            settings.resolve("calibrate", {name: value, "VCPUS": "2"})


def test_a_bad_value_ends_the_shell_job_with_its_name():
    r = subprocess.run(["bash", "-c", "source lab/lib.sh && load_settings check && echo went-on"],
                       cwd=LAB_ROOT, env={**os.environ, "PEER_SECS": "x"},
                       capture_output=True, text=True)
    assert r.returncode != 0 and "went-on" not in r.stdout
    assert "PEER_SECS must be an integer from 1 to 86400, got 'x'" in r.stderr


def test_make_help_lists_every_setting_of_bench_and_check():
    help_text = subprocess.run(["make", "-s", "help"], cwd=LAB_ROOT, capture_output=True,
                               text=True, check=True).stdout
    for job in ("bench", "check"):
        for s in settings.of_job(job):
            assert f"  {s.name}" in help_text, s.name


def test_scripts_take_their_defaults_from_the_table():
    """RESULTS_DIR was defaulted in six places, ROUNDS as 3 in one and 5 in
    another; now lab/settings.toml holds them and no script names them."""
    for module in ("analysis/regress.py", "lab/verify.py"):
        assert 'LAB_ROOT / "results"' not in (LAB_ROOT / module).read_text(), module
    for script in (LAB_ROOT / "lab").glob("*.sh"):
        text = script.read_text()
        assert "RESULTS_DIR:-$LAB_ROOT" not in text, script.name
        assert "ROUNDS:-5" not in text and "ROUNDS:=3" not in text, script.name
    out = subprocess.run(["bash", "-c", "source lab/lib.sh && setting_default ROUNDS compare"
                          " && setting_default RESULTS_DIR check"],
                         cwd=LAB_ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["3", str(LAB_ROOT / "results")]
    r = subprocess.run(["bash", "-c", "source lab/lib.sh && setting_default BASE regress"],
                       cwd=LAB_ROOT, capture_output=True, text=True)
    assert r.returncode != 0 and "BASE has no default for regress" in r.stderr


MODULE_C = sorted((LAB_ROOT / "bench-module").glob("*.c"))


def test_the_module_takes_its_defaults_from_the_table():
    """check_ms was 3000 in check.c and 15000 in the table, and the
    module's default workloads left out sharded: a setting that names its
    module parameter now gives the module its default (lab/build.sh writes
    defaults.h from the table), and the C initialises it from there."""
    header = settings.c_defaults()
    c = "\n".join(path.read_text() for path in MODULE_C)
    named = [s for s in settings.table() if s.param]
    assert {s.param for s in named} >= {"duration_ms", "workloads", "check_ms", "cs_loops"}
    for s in named:
        macro = f"MUTEXLAB_DEFAULT_{s.param.upper()}"
        job = "bench" if "bench" in s.jobs else "check"
        value = settings.default(s.name, job)
        shown = (f"{{ {', '.join(value.split(','))} }}" if s.type == "counts"
                 else value if s.type in ("count", "power_of_two") else f'"{value}"')
        assert f"#define {macro} {shown}\n" in header, s.name
        # A real parameter of the module, initialised from the macro.
        assert re.search(rf"module_param(_array)?(_named)?\({s.param},", c), s.param
        assert re.search(rf"(\.|\b){s.param} = {macro}[,;]", c), s.param
