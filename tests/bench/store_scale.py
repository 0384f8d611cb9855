#!/usr/bin/env python3
"""The same history read from SQLite and from PostgreSQL, side by side.

Builds in SQLite (a fresh file in a temporary folder):
- a gate of about 10,000 comparisons: 100 configurations x 100 metrics, 3
  repeats, 3 baseline runs and a candidate (1,200 trials, 120k summaries);
- the dashboard's database of tests/bench/dashboard_scale.py (1,000 runs of
  a 2 x 2 sweep and a soak of --soak-records x 4 samples).
Copies both into PostgreSQL with `perfgate db copy` (timed), on a throwaway
server of its own (scripts/services/postgres.sh), then times on each backend,
alternating, median of --repeats: `perfgate gate` (no reruns) and `perfgate
dashboard`.

usage: store_scale.py PERFGATE_BIN [--runs 1000] [--soak-records 1250000] [--repeats 3]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import dashboard_scale  # noqa: E402  (its database builder)

POSTGRES_SH = HERE.parents[1] / "scripts" / "services" / "postgres.sh"


def timed(argv, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, **kw)
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(map(str, argv))} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return time.perf_counter() - t0, p


def build_gate(perfgate, db, work):
    metrics = [f"m{i:03d}" for i in range(100)]
    for k in range(100):
        with open(os.path.join(work, f"g{k}.jsonl"), "w") as f:
            for step in range(5):
                f.write("{" + f'"step": {step}, ' + ", ".join(f'"{m}_ms": {10 + k + i * 0.01 + step * 0.001:.4f}'
                                                              for i, m in enumerate(metrics)) + "}\n")
    suite = os.path.join(work, "wide.yaml")
    with open(suite, "w") as f:
        f.write("suite: wide\ndefaults: {repeats: 3}\nworkloads:\n  - name: w\n"
                f"    command: [cp, \"{work}/g{{k}}.jsonl\", \"{{metrics_file}}\"]\n"
                f"    matrix: {{k: [{', '.join(map(str, range(100)))}]}}\n")
    for tag in ("base", "base", "base", "cand"):
        subprocess.run([perfgate, "--db", db, "run", suite, "-q", "--tag", tag], check=True, stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("perfgate")
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--soak-records", type=int, default=1_250_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    perfgate = os.path.abspath(a.perfgate)
    work = tempfile.mkdtemp(prefix="perfgate-storescale-", dir=os.getcwd())
    env = dict(os.environ, PERFGATE_PG_DIR=f"/tmp/perfgate-pg-scale-{os.getpid()}", PERFGATE_PG_PORT="54377")
    try:
        url = subprocess.run([str(POSTGRES_SH), "start"], env=env, check=True, capture_output=True,
                             text=True).stdout.strip()
        dbs = {"gate": os.path.join(work, "gate.db"), "dash": os.path.join(work, "dash.db")}
        t0 = time.perf_counter()
        build_gate(perfgate, dbs["gate"], work)
        print(f"built the gate database (1,200 trials x 100 metrics) in {time.perf_counter() - t0:.0f} s", flush=True)
        t0 = time.perf_counter()
        dashboard_scale.build(perfgate, dbs["dash"], work, a.runs, a.soak_records)
        print(f"built the dashboard database ({a.runs} runs, {a.soak_records * 4:,} soak samples) in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        pg = {}
        for name, db in dbs.items():
            head, _, query = url.partition("?")
            subprocess.run(["psql", url, "-qAtX", "-c", f"CREATE DATABASE scale_{name}"], check=True)
            pg[name] = head.rsplit("/", 1)[0] + f"/scale_{name}?" + query
            took, p = timed([perfgate, "db", "copy", db, pg[name]])
            print(f"db copy {name}: {took:.1f} s ({p.stdout.strip()[:80]}...)", flush=True)
        gate = {"sqlite": [], "postgresql": []}
        dash = {"sqlite": [], "postgresql": []}
        comparisons = None
        for _ in range(a.repeats):
            for backend, spec in (("sqlite", dbs), ("postgresql", pg)):
                took, p = timed([perfgate, "--db", spec["gate"], "gate", "--run", "latest:cand", "--baseline",
                                 "tag:base,last:3", "--metric", "m*_ms", "--no-rerun", "--format", "json"])
                gate[backend].append(took)
                comparisons = p.stdout.count('"verdict":')
                took, _ = timed([perfgate, "--db", spec["dash"], "dashboard", "--out", os.path.join(work, "d-" + backend),
                                 "-q"])
                dash[backend].append(took)
        for what, d in (("gate, %d comparisons" % comparisons, gate), (f"dashboard, {a.runs} runs + soak", dash)):
            s, p = statistics.median(d["sqlite"]), statistics.median(d["postgresql"])
            print(f"{what}: SQLite median {s:.2f} s, PostgreSQL median {p:.2f} s, ratio {p / s:.2f}")
    finally:
        subprocess.run([str(POSTGRES_SH), "stop"], env=env, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
