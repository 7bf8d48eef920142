# SPDX-License-Identifier: GPL-2.0
"""Shared test set-up: import paths, markers, and the lab's entry points."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The hooks that keep a run within TEST_DEADLINE (.ci/run sets it).
from deadline import pytest_runtest_protocol, pytest_runtest_setup  # noqa: F401

LAB_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = LAB_ROOT / "tests" / "fixtures"
for sub in ("analysis", "guest", "lab"):
    sys.path.insert(0, str(LAB_ROOT / sub))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "kernel: needs the kernel tree; may build and boot (minutes)")


# Kernel test modules that run before the others: the designs' kernels are
# the ones the test-only mutants' builds start from (lab/build.sh's seeds),
# so late-write-slow recompiles count-only's mutex.c instead of a kernel.
KERNEL_MODULES_FIRST = ("test_designs",)


def pytest_collection_modifyitems(config, items):
    """Host tests first (seconds to a minute), so that a broken one fails
    before any kernel is built; each group keeps its order."""
    def rank(item):
        if item.get_closest_marker("kernel") is None:
            return 0
        return 1 if item.module.__name__ in KERNEL_MODULES_FIRST else 2
    items.sort(key=rank)


def run_make(target, tmp_path, **settings):
    """Run `make TARGET` with settings as environment; results in tmp_path.
    A bench's cross-check boot only where the test asks for one."""
    env = dict(os.environ)
    env["RESULTS_DIR"] = str(tmp_path / "results")
    env["CROSSCHECK"] = "0"
    env.update({k: str(v) for k, v in settings.items()})
    return subprocess.run(["make", "-s", "-C", str(LAB_ROOT), target],
                          env=env, capture_output=True, text=True)


def result_sets(results_dir, variant):
    return sorted((Path(results_dir) / variant).glob("*"))


@pytest.fixture
def fixture_text():
    return lambda name: (FIXTURES / name).read_text()


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs (root only: mount)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
            capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)
