# SPDX-License-Identifier: GPL-2.0
"""make lava-job and make import of a LAVA job's log. The fixture is real:
lava-run (Debian's lava-dispatcher 2023.01) running the job that
lab/lava_job.py made for a console-channel bundle of owner-field, and that
bundle's small files."""
import json
import shutil

import pytest

import import_run
import lava_job
from conftest import FIXTURES, run_make
from resultset import check_result_set

LAVA = FIXTURES / "lava"
schema = pytest.importorskip("lava_common.schemas", reason="lava-common (make deps-test)")


def test_the_job_passes_lavas_own_schema():
    job = lava_job.job(LAVA / "bundle")
    lava_job.validate(job)
    assert job["context"]["extra_options"] == ["-smp 2", "-no-reboot"]
    assert job["context"]["memory"] == 1024 and job["context"]["no_kvm"]
    kernel = job["actions"][0]["deploy"]["images"]["kernel"]
    assert kernel["url"].startswith("file://") and kernel["url"].endswith("/bzImage")
    assert "mutexlab.channel=console" in kernel["image_arg"]
    assert job["actions"][2]["test"]["monitors"][0]["end"] == r"mutexlab-exit\| "


@pytest.mark.parametrize("break_it", [
    lambda job: job["actions"][0]["deploy"]["images"]["kernel"].pop("url"),
    lambda job: job["actions"][2]["test"]["monitors"][0].update(name="two words"),
    lambda job: job["context"].update(bogus=1),
])
def test_a_broken_job_fails_the_schema(break_it):
    job = lava_job.job(LAVA / "bundle")
    break_it(job)
    with pytest.raises(Exception):
        lava_job.validate(job)


def test_a_bundle_with_serial_results_is_refused(tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(LAVA / "bundle", bundle)
    args = (bundle / "qemu.args").read_text()
    (bundle / "qemu.args").write_text(args + "-serial\nchardev:results\n")
    assert lava_job.main([str(bundle)]) == 2


def test_the_monitor_pattern_takes_whole_ktap_lines():
    import re
    pattern = re.compile(lava_job.MONITOR["pattern"])
    assert pattern.search("mutexlab| not ok 3 - watch/no_access # why\n").group(
        "result", "test_case_id") == ("not ok", "watch/no_access")
    # A line still arriving is not a test case yet.
    assert pattern.search("mutexlab| ok 5 - cont") is None


def test_a_lava_log_imports_as_the_run_it_was(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    source = import_run.lava_run_folder(LAVA / "lava-run.log", LAVA / "bundle", work)
    out, outcome = import_run.import_run(work, tmp_path / "results", source)
    assert outcome == "ok"
    assert check_result_set(out) == []
    results = json.loads((out / "results.json").read_text())
    assert len(results["points"]) == 9 and results["totals"]["pass"] == 10
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["imported"]["kind"] == "LAVA job"
    assert manifest["host"]["hostname"] == "lava" and manifest["accel"] == "tcg"
    # LAVA escapes the console's quotes; the records parse all the same.
    assert '\\"' not in (out / "results.raw").read_text()


def test_a_servers_log_reads_as_lava_runs(tmp_path):
    """A server's job log is the same records as a YAML list."""
    text = (LAVA / "lava-run.log").read_text()
    as_list = "".join(f"- {line}\n" for line in text.splitlines())
    assert (import_run.console_of_lava_log(as_list)
            == import_run.console_of_lava_log(text))


def test_a_log_without_a_console_is_refused(tmp_path):
    log = tmp_path / "log"
    log.write_text('{"dt": "x", "lvl": "info", "msg": "start: 0 validate"}\n')
    assert import_run.main([str(log), "--bundle", str(LAVA / "bundle"),
                            "--results-dir", str(tmp_path / "r")]) == 2


def test_make_lava_job_checks_its_settings_before_installing_lava(tmp_path):
    """Without BUNDLE it used to install LAVA and about 134 packages as
    root first (deps-test), and only then say BUNDLE was missing. Here
    dpkg-query says every package is missing and apt-get writes down that
    it was called."""
    import os
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "apt-get").write_text(f"#!/bin/sh\necho \"$@\" >>{tmp_path}/apt-get.log\nexit 1\n")
    (bin_dir / "id").write_text("#!/bin/sh\necho 0\n")  # as root
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    r = run_make("lava-job", tmp_path, PATH=f"{bin_dir}:{os.environ['PATH']}")
    assert r.returncode != 0
    assert "make lava-job needs BUNDLE=" in r.stderr
    assert not (tmp_path / "apt-get.log").exists(), (tmp_path / "apt-get.log").read_text()
