#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Stands in for lab/bench.sh in the confirmation tests: writes a result
set of the one point asked for, as bench.sh's environment describes it.
Empty settings (make exports the unset ones empty) take the defaults. A
GUEST_APPEND with "slow" makes the kernel 10% slower; every boot is
about 1% off the last (a counter in RESULTS_DIR)."""
import json
import os
import sys
from pathlib import Path


def main():
    env = os.environ
    results = Path(env["RESULTS_DIR"])
    results.mkdir(parents=True, exist_ok=True)
    counter = results / ".boots"
    boot = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(boot))
    out = results / env["VARIANT"] / f"20261205T{boot:06d}Z-fake"
    out.mkdir(parents=True)
    rate = 1e6 * (0.9 if "slow" in env.get("GUEST_APPEND", "") else 1.0)
    rate *= 1 + 0.01 * ((boot * 7) % 3 - 1)
    workload = env["WORKLOADS"]
    points = [{"workload": workload, "threads": int(env.get("THREADS") or 1),
               "rep": rep, "cs_loops": int(env.get("CS_LOOPS") or 0),
               "think_loops": int(env.get("THINK_LOOPS") or 0),
               "pinned": env.get("PIN") == "1",
               "per_sec": rate * (1 + 0.002 * rep), "latency_ns": None}
              for rep in range(1, int(env.get("REPS") or 5) + 1)]
    (out / "results.json").write_text(json.dumps({"points": points}))
    (out / "manifest.json").write_text(json.dumps(
        {"variant": env["VARIANT"], "outcome": "ok",
         "parameters": {"guest_append": env.get("GUEST_APPEND", "")}}))
    # As lab/lib.sh new_result_folder names the set it made.
    if env.get("RESULT_SET_FILE"):
        Path(env["RESULT_SET_FILE"]).write_text(f"{out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
