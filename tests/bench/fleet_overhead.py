#!/usr/bin/env python3
"""Scheduling overhead per trial through Slurm and the database queue
(docs/cluster.md, "Measured").

16 trials of an instant workload (/bin/true) over 4 workers of a Slurm job
array (`--executor slurm --nodes 4`), against the same 16 trials through the
local slotted executor on 4 slots, both into the same PostgreSQL server,
alternating, ROUNDS times. Reports the median wall time of the whole command
and per trial for each, and the ratio. Starts a throwaway PostgreSQL and
one-node Slurm cluster with the project's scripts (and stops them).

    python3 tests/bench/fleet_overhead.py [--rounds 5] [--perfgate build/perfgate]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sh(*argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw).stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--perfgate", default=str(ROOT / "build" / "perfgate"))
    a = ap.parse_args()
    services = ROOT / "scripts" / "services"
    env = dict(os.environ, PERFGATE_PG_DIR="/tmp/perfgate-bench-pg", PERFGATE_PG_PORT="54391",
               PERFGATE_SLURM_DIR="/tmp/perfgate-bench-slurm", PERFGATE_SLURM_PORT="16901")
    url = sh(str(services / "postgres.sh"), "start", env=env)
    env["SLURM_CONF"] = sh(str(services / "slurm.sh"), "start", env=env)
    try:
        tmp = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
        suite = tmp / "instant.yaml"
        suite.write_text("suite: instant\ndefaults: {repeats: 8, warmup: {steps: 0}}\nworkloads:\n"
                         "  - name: true\n    command: [/bin/true, '{k}']\n    matrix: {k: [a, b]}\n")
        times = {"slurm": [], "local": []}
        for r in range(a.rounds):
            for kind in ("slurm", "local") if r % 2 == 0 else ("local", "slurm"):
                db = f"bench_{uuid.uuid4().hex[:10]}"
                sh("psql", url, "-qAtX", "-c", f"CREATE DATABASE {db}", env=env)
                spec = url.replace("/perfgate?", f"/{db}?")
                argv = [a.perfgate, "--db", spec, "run", str(suite), "-q", "--artifacts", str(tmp)]
                if kind == "slurm":
                    argv += ["--executor", "slurm", "--nodes", "4"]
                else:
                    argv += ["--slots", "{kind: dev, devices: [0-3], per_trial: 1, env: BENCH_DEV}"]
                t0 = time.perf_counter()
                p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp)
                wall = time.perf_counter() - t0
                if p.returncode != 0:
                    sys.exit(f"{kind} run failed ({p.returncode}):\n{p.stderr}")
                times[kind].append(wall)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(json.dumps({
            "trials": 16, "workers_or_slots": 4, "rounds": a.rounds,
            "slurm_wall_s": [round(x, 3) for x in times["slurm"]],
            "local_wall_s": [round(x, 3) for x in times["local"]],
            "slurm_median_s": round(med["slurm"], 3), "local_median_s": round(med["local"], 3),
            "slurm_per_trial_ms": round(med["slurm"] / 16 * 1000, 1),
            "local_per_trial_ms": round(med["local"] / 16 * 1000, 1),
            "ratio": round(med["slurm"] / med["local"], 2)}, indent=1))
    finally:
        subprocess.run([str(services / "slurm.sh"), "stop"], env=env, capture_output=True)
        subprocess.run([str(services / "postgres.sh"), "stop"], env=env, capture_output=True)


if __name__ == "__main__":
    main()
