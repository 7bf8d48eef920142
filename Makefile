# SPDX-License-Identifier: GPL-2.0
# mutexlab: `make bench VARIANT=x` measures a mutex design, `make test` tests
# the lab. Settings are environment variables, defined once with their
# defaults in lab/settings.toml; `make help` lists them.

SHELL := /bin/bash
PYTHON := /usr/bin/python3

# Every setting of lab/settings.toml is passed through to the scripts;
# unset ones take the table's defaults (make help lists them).
export $(shell $(PYTHON) lab/settings.py names)

.PHONY: bench check compare regress verify calibrate bundle import lava-job test test-host deps deps-test variants checkpatch help

# Each job is a verb of the lab's command (python3 lab --help), which checks
# the settings, prints the plan with DRY_RUN=1, and ends with the set made.
bench:
	@$(PYTHON) lab bench

# Correctness of a design: KASAN kernel, one boot per check, a verdict.
check:
	@$(PYTHON) lab check

# Designs side by side: VARIANTS run interleaved, or SETS reused; plots and
# report.md in results/compare/<UTC time>/.
compare:
	@$(PYTHON) lab compare

# Did NEW get worse than BASE? Result set folders, or VARIANT[:N] for the
# newest N sets, each set one boot. Each row reads slower, not slower than
# THRESHOLD, or cannot tell; the last line printed is the comparison's
# verdict. It fails when `python3 lab regress` does (a row slower, bad
# input, nothing judged, a row that cannot tell with STRICT=1), but GNU make
# reports every failed recipe as its own status 2: a script that needs the
# verdict's status runs `python3 lab regress` (1, 2, 3, 4; README).
regress:
	@$(PYTHON) lab regress

# Each design's lock-word protocol as a SPIN model, every interleaving for 2
# and 3 tasks; a result set in RESULTS_DIR/verify/<UTC time>-<host>/.
verify:
	@$(PYTHON) lab verify

# make regress's own calibration: A/A false alarms (NEW=BASE) and power.
calibrate:
	@$(PYTHON) lab calibrate

# make bench packed for another host (ACCEL=kvm or tcg): run its run.sh
# there, then make import RUN=<its output> here. make lava-job BUNDLE=<a
# bundle made with RESULTS_CHANNEL=console> writes a LAVA job for it; make
# import RUN=<the job's log> BUNDLE=<the bundle> brings its results back.
bundle:
	@$(PYTHON) lab bundle

import:
	@$(PYTHON) lab import

# Its settings are checked before LAVA is installed: a missing BUNDLE used
# to cost an installation of about 134 packages first.
lava-job:
	@$(PYTHON) lab lava-job --check-settings
	@$(MAKE) -s deps-test
	@$(PYTHON) lab lava-job

# Host-side tests first (seconds), then the ones that build and boot kernels.
test: deps-test
	$(PYTHON) -m pytest -ra --durations=15 tests

test-host: deps-test
	$(PYTHON) -m pytest -ra -m 'not kernel' tests

deps:
	@lab/deps.sh

# The tests also run a LAVA job with LAVA's own dispatcher (installed as
# root; for another user the LAVA tests skip without it).
deps-test: deps
	@lab/deps.sh lava

variants:
	@$(PYTHON) lab variants

checkpatch: deps
	@lab/checkpatch.sh

help:
	@sed -n '/^```sh/,/^```$$/{/```/d;p}' README.md
	@echo 'Targets: bench check compare regress verify calibrate bundle import lava-job test test-host deps variants checkpatch help'
	@echo 'Settings of make bench (lab/settings.toml; QUICK=1 and FULL=1 change the sweep defaults):'
	@$(PYTHON) lab/settings.py help bench
	@echo 'Settings of make check:'
	@$(PYTHON) lab/settings.py help check
	@$(PYTHON) lab/catalog.py help
	@echo "Settings of make compare, besides make bench's:"
	@$(PYTHON) lab/settings.py help compare --besides bench
	@echo 'Settings of make regress (see analysis/regress.py):'
	@$(PYTHON) lab/settings.py help regress
	@echo 'Settings of make verify (VARIANTS default: every variant with a model.pml):'
	@$(PYTHON) lab/settings.py help verify
	@echo "Settings of make calibrate, besides make bench's:"
	@$(PYTHON) lab/settings.py help calibrate --besides bench
