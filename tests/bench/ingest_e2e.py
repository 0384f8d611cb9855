#!/usr/bin/env python3
"""End-to-end ingestion benchmark: one trial that emits 1M step records.

The workload copies a prepared metrics file of N step records (3 metrics
each) into $PERFGATE_METRICS, so the harness's reading, parsing and storing
dominate. Runs `perfgate run` R times and prints medians of: the harness's
wall time, records/s and samples/s (samples = metric values), and the peak
RSS of the perfgate process (wait4 rusage, which covers perfgate and the tiny
`cp`, never more than the larger of them).

With --format megatron the workload instead prints N Megatron iteration lines
(11 metrics each) on stdout and the suite reads them with `parser: megatron`:
the log presets' end-to-end rate, and a peak RSS that must not grow with N.

With --db a PostgreSQL URL (or libpq string) every run writes that database
instead of a fresh SQLite file; --writers K starts K perfgate runs at once
(each its own trial of N records) and reports their total rate.

usage: ingest_e2e.py PERFGATE_BIN [--records 1000000] [--repeats 5] [--format jsonl|megatron]
                     [--db postgresql://...] [--writers 1]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("perfgate")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--format", choices=["jsonl", "megatron"], default="jsonl")
    ap.add_argument("--db", help="a PostgreSQL URL or libpq string (default: a fresh SQLite file per run)")
    ap.add_argument("--writers", type=int, default=1)
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="perfgate-ingest-", dir=os.getcwd())
    try:
        data = os.path.join(work, "steps.jsonl" if a.format == "jsonl" else "train.log")
        per_record = 3 if a.format == "jsonl" else 11
        with open(data, "w") as f:
            for i in range(a.records):
                if a.format == "jsonl":
                    f.write(json.dumps({"step": i, "step_time_ms": 10.0 + (i % 7) * 0.1,
                                        "throughput": 3200.0 - (i % 5), "loss": 2.0 - i * 1e-6}) + "\n")
                else:
                    f.write(f" [2026-11-29 10:00:00] iteration {i + 1:8d}/ {a.records} | consumed samples: "
                            f"{(i + 1) * 512:12d} | elapsed time per iteration (ms): {1200 + i % 7:.1f} | "
                            f"throughput per GPU (TFLOP/s/GPU): 123.4 | learning rate: 1.000000E-04 | "
                            f"global batch size:   512 | lm loss: {8 - i * 1e-6:.6E} | loss scale: 65536.0 | "
                            f"grad norm: 2.345 | number of skipped iterations:   0 | number of nan iterations:   0 |\n")
        suite = os.path.join(work, "ingest.yaml")
        with open(suite, "w") as f:
            if a.format == "jsonl":
                f.write("suite: ingest\ndefaults: {repeats: 1}\nworkloads:\n"
                        f"  - name: replay\n    command: [cp, {data}, \"{{metrics_file}}\"]\n")
            else:
                f.write("suite: ingest\ndefaults: {repeats: 1, log_limit: 1MB}\nworkloads:\n"
                        f"  - name: replay\n    command: [cat, {data}]\n    metrics: {{parser: megatron}}\n")
        walls, rss = [], []
        for r in range(a.repeats):
            procs = []
            t0 = time.perf_counter()
            for w in range(a.writers):
                db = a.db or os.path.join(work, f"run{r}-{w}.db")
                procs.append(subprocess.Popen([a.perfgate, "run", suite, "--db", db, "-q", "--commit", "bench"],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
            for p in procs:
                _, status, usage = os.wait4(p.pid, 0)
                p.returncode = os.waitstatus_to_exitcode(status)
                if p.returncode != 0:
                    raise SystemExit(f"perfgate failed: {p.stderr.read().decode()}")
                rss.append(usage.ru_maxrss / 1024.0)
            walls.append(time.perf_counter() - t0)
        samples = a.records * per_record * a.writers
        med = statistics.median(walls)
        print(f"format: {a.format}, records: {a.records} x {a.writers} writer(s), samples: {samples}, runs: {a.repeats}, "
              f"database: {'PostgreSQL' if a.db else 'SQLite'}")
        print(f"perfgate run wall time: median {med:.2f} s (min {min(walls):.2f}, max {max(walls):.2f})")
        print(f"ingestion: median {a.records * a.writers / med:,.0f} records/s, {samples / med:,.0f} samples/s")
        print(f"perfgate peak RSS: median {statistics.median(rss):.1f} MB (max {max(rss):.1f} MB)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
