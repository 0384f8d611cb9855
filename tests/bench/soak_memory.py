#!/usr/bin/env python3
"""Memory of a long soak: perfgate's peak RSS while it ingests a 72-hour soak.

A 72-hour soak at 20 steps/s is about 5.2 million step records. The workload
replays a prepared metrics file of that many records (step time, throughput,
loss, host RSS per step, with a step time every 50 ms) into $PERFGATE_METRICS,
under `perfgate soak` with the proc sampler at 1 Hz, so ingestion, the
bounded per-metric summaries and the streaming soak analysis at the end all
run. Prints perfgate's peak RSS (wait4 rusage) and wall time, medians over
--repeats runs.

usage: soak_memory.py PERFGATE_BIN [--records 5200000] [--repeats 3]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("perfgate")
    ap.add_argument("--records", type=int, default=5_200_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="perfgate-soakmem-", dir=os.getcwd())
    try:
        data = os.path.join(work, "steps.jsonl")
        with open(data, "w") as f:
            for i in range(a.records):
                f.write('{"step": %d, "t_s": %.2f, "step_time_ms": %.3f, "throughput": %.1f, "loss": %.5f, '
                        '"host_rss_mb": %.1f}\n' % (i, i * 0.05, 50.0 + (i % 7) * 0.1, 640.0 - (i % 5),
                                                    2.0 - i * 1e-7, 800.0 + (i % 11)))
        suite = os.path.join(work, "soak.yaml")
        with open(suite, "w") as f:
            f.write("suite: soak-memory\ndefaults: {repeats: 1, warmup: {steps: 10}, samplers: [proc], "
                    "sample_interval: 1s}\nworkloads:\n"
                    f"  - name: replay\n    command: [cp, {data}, \"{{metrics_file}}\"]\n")
        walls, rss = [], []
        for r in range(a.repeats):
            db = os.path.join(work, f"run{r}.db")
            t0 = time.perf_counter()
            p = subprocess.Popen([a.perfgate, "soak", suite, "--db", db, "-q", "--duration", "1h", "--window", "60s",
                                  "--commit", "bench"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            _, status, usage = os.wait4(p.pid, 0)
            walls.append(time.perf_counter() - t0)
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"perfgate failed: {p.stderr.read().decode()}")
            rss.append(usage.ru_maxrss / 1024.0)
            os.remove(db)
        print(f"records: {a.records} (4 metrics each), runs: {a.repeats}")
        print(f"perfgate soak wall time (ingest + analysis): median {statistics.median(walls):.1f} s")
        print(f"perfgate peak RSS: median {statistics.median(rss):.1f} MB (max {max(rss):.1f} MB)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
