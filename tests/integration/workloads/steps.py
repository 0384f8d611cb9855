#!/usr/bin/env python3
"""Reports --steps step records to $PERFGATE_METRICS, sleeping --sleep seconds per step.

--marker is ignored: it only lets a test find (and clean up) this process.
--touch creates a file first, so a test can tell whether the workload ran at all.
"""
import argparse
import json
import os
import time

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=5)
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--throughput", type=float, default=100.0)
p.add_argument("--touch")
p.add_argument("--marker")
a = p.parse_args()

if a.touch:
    open(a.touch, "a").close()
with open(os.environ["PERFGATE_METRICS"], "a", buffering=1) as out:
    out.write(json.dumps({"meta": {"units": {"throughput": "samples/s", "step_time_ms": "ms"}}}) + "\n")
    for step in range(a.steps):
        t0 = time.perf_counter()
        if a.sleep:
            time.sleep(a.sleep)
        dt_ms = (time.perf_counter() - t0) * 1e3
        out.write(json.dumps({"step": step, "step_time_ms": dt_ms, "throughput": a.throughput}) + "\n")
