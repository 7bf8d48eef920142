# SPDX-License-Identifier: GPL-2.0
# mutexlab: `make bench VARIANT=x` measures a mutex design, `make test` tests
# the lab. Settings are environment variables read by lab/bench.sh, which
# holds their defaults; `make help` lists them.

SHELL := /bin/bash
PYTHON := /usr/bin/python3

# Passed through to the scripts; unset ones take the scripts' defaults.
export VARIANT PROFILE VCPUS MEM_MB ACCEL DURATION_MS WARMUP_MS REPS CS_LOOPS \
	THREADS RESULTS_DIR GUEST_APPEND LAB_CACHE VARIANTS_DIR JOBS \
	RELEASE_WINDOW_NS CHECKS CHECK_MS PEER_SECS LATENCY_EVERY WORKLOADS \
	THINK_LOOPS QUICK FULL PIN SHARDS BASE NEW THRESHOLD REGRESS_JSON ROUNDS_FILE CONFIRM \
	VARIANTS ROUNDS SETS PLOTS CROSSCHECK CROSSCHECK_THREADS DRY_RUN

.PHONY: bench check compare regress verify test test-host deps variants checkpatch help

bench:
	@lab/bench.sh

# Correctness of a design: KASAN kernel, one boot per check, a verdict.
check:
	@lab/check.sh

# Designs side by side: VARIANTS run interleaved, or SETS reused; plots and
# report.md in results/compare/<UTC time>/.
compare:
	@lab/compare.sh

# Did NEW get worse than BASE? Result set folders, or VARIANT[:N] for the
# newest N sets, each set one boot; exit status 1 on a regression, 3 when
# nothing could be judged (fewer than 2 boots a side).
regress:
	@$(PYTHON) analysis/regress.py --threshold "$${THRESHOLD:-5}" \
		$${REGRESS_JSON:+--json "$$REGRESS_JSON"} \
		$${ROUNDS_FILE:+--rounds "$$ROUNDS_FILE"} $${CONFIRM:+--confirm "$$CONFIRM"} \
		"$${BASE:?BASE=<result set|variant>[,...] is required}" \
		"$${NEW:?NEW=<result set|variant> is required}"

# Each design's lock-word protocol as a SPIN model, every interleaving for 2
# and 3 tasks; a result set in RESULTS_DIR/verify/<UTC time>-<host>/.
verify:
	@$(PYTHON) lab/verify.py $${VARIANTS:+--variants "$$VARIANTS"} \
		$${RESULTS_DIR:+--results-dir "$$RESULTS_DIR"}

# Host-side tests first (seconds), then the ones that build and boot kernels.
test: deps
	$(PYTHON) -m pytest -ra tests

test-host: deps
	$(PYTHON) -m pytest -ra -m 'not kernel' tests

deps:
	@lab/deps.sh

variants:
	@bash -c 'source lab/lib.sh && list_variants'

checkpatch: deps
	@lab/checkpatch.sh

help:
	@sed -n '/^```sh/,/^```$$/{/```/d;p}' README.md
	@echo 'Targets: bench check compare regress verify test test-host deps variants checkpatch help'
	@echo 'Settings (bench): VARIANT PROFILE VCPUS MEM_MB ACCEL=auto|kvm|tcg'
	@$(PYTHON) lab/catalog.py help | head -1
	@echo '  SHARDS (mutexes of sharded)'
	@echo '  DURATION_MS WARMUP_MS REPS'
	@echo '  CS_LOOPS=16,800 THINK_LOOPS=0,160 PIN=0,1 (swept by contended) THREADS=1,2,4'
	@echo '  LATENCY_EVERY QUICK=1 FULL=1 PLOTS=0 CROSSCHECK=0 CROSSCHECK_THREADS RESULTS_DIR'
	@echo '  RELEASE_WINDOW_NS LAB_CACHE (default ~/.cache/mutexlab) JOBS; see lab/bench.sh'
	@echo '  DRY_RUN=1 (bench, check): check the settings, print the plan, build and boot nothing'
	@echo 'Settings (check): VARIANT PROFILE=check|debug VCPUS MEM_MB ACCEL CHECK_MS PEER_SECS'
	@$(PYTHON) lab/catalog.py help | tail -n +2
	@echo '  RELEASE_WINDOW_NS (default 1000000 for the free_* checks); see lab/check.sh'
	@echo '  Workloads and checks: lab/catalog.toml'
	@echo 'Settings (compare): VARIANTS ROUNDS (3) or SETS, and the bench settings'
	@echo 'Settings (regress): BASE NEW (result sets, or VARIANT[:N] for the newest N; comma-separated)'
	@echo '  THRESHOLD (percent, 5) ROUNDS_FILE (pair the sets of BASE and NEW by round)'
	@echo '  CONFIRM=N (rerun each flagged point N boots a side; only a row flagged again counts)'
	@echo '  REGRESS_JSON (also write the report as JSON); see analysis/regress.py'
	@echo 'Settings (verify): VARIANTS (default: owner-field legacy tri-state count-only) RESULTS_DIR'
