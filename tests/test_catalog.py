# SPDX-License-Identifier: GPL-2.0
"""lab/catalog.toml against the bench module's C tables, and its loader.

The catalog is the host's one list of workloads and checks; the module's
tables are the code. They must name the same entries in the same order with
the same shape, or a check would run without a verdict property, or the
watchdog and the result-set checker would expect other points than the
module runs.
"""
import re
import subprocess

import pytest

import catalog
from conftest import LAB_ROOT

CHECK_C = LAB_ROOT / "bench-module" / "check.c"
BENCH_C = LAB_ROOT / "bench-module" / "bench_params.c"
THREADS_ENUM = {"SWEEP": "sweep", "ONE": "one", "TWICE_CPUS": "twice_cpus"}


def c_table(source, start):
    return re.search(re.escape(start) + r"(.*?)\n\};", source, re.S).group(1)


def module_checks(source):
    """[(name, tests)] of check.c's table of checks, in order."""
    table = c_table(source, "mutex_check checks[] = {")
    return [(name, int(tests)) for name, tests in
            re.findall(r'\{ "(\w+)", (\d+), run_\w+ \}', table)]


def module_workloads(source):
    """[(name, threads, sweeps_settings, critical_section)] of bench_params.c's
    workload_table, in order."""
    table = c_table(source, "struct workload workload_table[] = {")
    rows = []
    for entry in re.findall(r"\{ (\.name = .*?) \}", re.sub(r"/\*.*?\*/", "", table, flags=re.S),
                            re.S):
        fields = dict(re.findall(r"\.(\w+) = ([^,]+?)\s*(?:,|$)", entry))
        critical = ("empty" if fields.get("empty_cs") == "true" else
                    "one_increment" if int(fields.get("cs_delay_ms", 0)) else "swept")
        rows.append((fields["name"].strip('"'), THREADS_ENUM[fields["threads"]],
                     fields.get("sweeps_settings") == "true", critical))
    return rows


def catalog_checks():
    return [(c.name, c.module_tests) for c in catalog.checks() if c.runner == "module"]


def catalog_workloads():
    return [(w.name, w.threads, w.sweeps_settings, w.critical_section)
            for w in catalog.workloads()]


def test_module_checks_are_the_catalogs():
    assert module_checks(CHECK_C.read_text()) == catalog_checks()


def test_module_workloads_are_the_catalogs():
    assert module_workloads(BENCH_C.read_text()) == catalog_workloads()


@pytest.mark.parametrize("old, new", [
    # A check added to the C table only.
    ('{ "watch", 4, run_watch },', '{ "watch", 4, run_watch },\n\t{ "orphan", 1, run_watch },'),
    # Two checks swapped.
    ('{ "free_article", 1, run_free_article },\n\t{ "free_amdgpu", 1, run_free_amdgpu },',
     '{ "free_amdgpu", 1, run_free_amdgpu },\n\t{ "free_article", 1, run_free_article },'),
    # A KTAP plan grown by one test.
    ('{ "exclusion", 3, run_exclusion },', '{ "exclusion", 4, run_exclusion },'),
])
def test_a_check_table_mutant_is_seen(old, new):
    source = CHECK_C.read_text()
    assert old in source
    assert module_checks(source.replace(old, new)) != catalog_checks()


@pytest.mark.parametrize("old, new", [
    ('.name = "sharded", .threads = SWEEP', '.name = "sharded", .threads = ONE'),
    ('.threads = SWEEP, .sweeps_settings = true', '.threads = SWEEP'),
    ('.cs_delay_ms = 20', '.cs_delay_ms = 0'),
    ('{ .name = "uncontended", .threads = ONE, .empty_cs = true },\n', ''),
])
def test_a_workload_table_mutant_is_seen(old, new):
    source = BENCH_C.read_text()
    assert old in source
    assert module_workloads(source.replace(old, new)) != catalog_workloads()


def entry(**changes):
    fields = {"name": "x", "runner": "peer", "property": "free_safe", "judge": "ktap",
              "exercises": [], "runs_for": "fixed", "expected_s": 1,
              "release_window": False, "tcg_threads": "multi",
              "profiles": ["check"], "help": "h"}
    fields.update(changes)
    lines = [f"{k} = {v!r}".replace("False", "false").replace("True", "true")
             .replace("'", '"') for k, v in fields.items() if v is not None]
    return "[[check]]\n" + "\n".join(lines) + "\n"


WORKLOAD = ('[[workload]]\nname = "w"\nthreads = "one"\nsweeps_settings = false\n'
            'critical_section = "empty"\ndefault = true\nhelp = "h"\n')


def test_a_good_entry_loads():
    _, checks = catalog.parse(WORKLOAD + entry())
    assert checks[0].property == "free_safe"
    assert checks[0].expected_seconds(15000, 10) == 1


@pytest.mark.parametrize("changes, message", [
    ({"property": None}, "missing ['property']"),
    ({"property": "fast"}, "property 'fast' is not one of"),
    ({"runner": "module"}, "missing ['module_tests']"),
    ({"profiles": ["nightly"]}, "profiles"),
    ({"colour": "red"}, "unknown ['colour']"),
])
def test_a_bad_entry_is_refused(changes, message):
    with pytest.raises(catalog.CatalogError, match=re.escape(message)):
        catalog.parse(WORKLOAD + entry(**changes))


def test_two_entries_of_one_name_are_refused():
    with pytest.raises(catalog.CatalogError, match="distinct"):
        catalog.parse(WORKLOAD + entry() + entry())


def test_points_per_rep_follow_the_shapes():
    # 2 x 2 x 2 settings, 3 thread counts: contended 24, sharded 3, 1 + 1.
    assert catalog.points_per_rep(
        ["uncontended", "contended", "oversubscribed", "sharded"], 8, 3) == 29
    assert catalog.points_per_rep(["locktorture_cs"], 8, 3) == 3


def shell(command):
    return subprocess.run(["bash", "-c", command], cwd=LAB_ROOT,
                          capture_output=True, text=True, check=True).stdout


def test_scripts_read_the_catalog():
    """check.sh's default and known checks, bench.sh's default workloads and
    make help's lists are the catalog's."""
    plan = shell("DRY_RUN=1 RESULTS_DIR=$(mktemp -d) lab/check.sh")
    booted = re.findall(r"^  boot (\w+): (\d+) s", plan, re.M)
    assert [name for name, _ in booted] == catalog.default_checks("check")
    assert dict(booted)["ww_mutex"] == "60"
    assert dict(booted)["locktorture"] == "15"
    debug = shell("DRY_RUN=1 PROFILE=debug RESULTS_DIR=$(mktemp -d) lab/check.sh")
    assert re.findall(r"^  boot (\w+):", debug, re.M) == ["exclusion", "locktorture"]
    assert shell("source lab/lib.sh && load_settings bench && echo \"$WORKLOADS\""
                 ).strip() == "uncontended,contended,oversubscribed,sharded"
    help_text = shell("make -s help").splitlines()
    assert all(line in help_text for line in catalog.help_lines())


def test_an_unknown_check_names_the_catalogs():
    r = subprocess.run(["bash", "-c", "DRY_RUN=1 CHECKS=bogus lab/check.sh"],
                       cwd=LAB_ROOT, capture_output=True, text=True)
    assert r.returncode != 0
    assert "unknown check 'bogus'; checks: " + " ".join(
        c.name for c in catalog.checks()) in r.stderr
