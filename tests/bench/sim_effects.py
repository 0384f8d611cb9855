#!/usr/bin/env python3
"""perfgate-sim's effects measured side by side: the figures behind
docs/perfgate-sim.md ("What each knob does to the work") and the floors the
integration tests assert.

    tests/bench/sim_effects.py [--sim build/perfgate-sim] [--rounds 5] [--busy N] [--only NAME]

For each comparison, its configurations run as separate processes in
rounds, one trial of each per round in a shuffled order (seeded: --seed),
as perfgate's plan interleaves them. A trial's value is the median of its
steady steps (after --warmup steps). Printed per comparison: each side's
median over the trials, and the ratio slow/fast per round with its median
and range. `--busy N` runs N busy loops beside the whole measurement (the
load the timing tests must stand). Build the simulator for another
instruction set with cmake -DPERFGATE_SIM_MARCH=x86-64-v3 (AVX2 only) or
x86-64 (SSE2) to see the same comparisons there.

Noise model: none assumed; the figures are what this machine did.
"""

import argparse
import json
import random
import statistics
import subprocess
import sys
from pathlib import Path

NO_LOADING = ["--read-us", "0", "--decode-work", "0"]

# name: (steps, warmup, metrics, [(label, argv)...]); the first config is the
# faster (or the reference) side, the ratio is each other config over it.
COMPARISONS = {
    "graph-eager-1rank": (20, 3, ["cpu_ms", "step_time_ms"], [
        ("graph off", ["--graph-mode", "graph", "--fusion", "off", "--ranks", "1", *NO_LOADING]),
        ("eager off", ["--graph-mode", "eager", "--fusion", "off", "--ranks", "1", *NO_LOADING]),
    ]),
    "fusion-eager-1rank": (20, 3, ["cpu_ms", "step_time_ms"], [
        ("eager on", ["--graph-mode", "eager", "--fusion", "on", "--ranks", "1", *NO_LOADING]),
        ("eager off", ["--graph-mode", "eager", "--fusion", "off", "--ranks", "1", *NO_LOADING]),
    ]),
    "graph-eager-shipped": (30, 3, ["cpu_ms", "step_time_ms"], [
        ("graph off", ["--graph-mode", "graph", "--fusion", "off"]),
        ("eager off", ["--graph-mode", "eager", "--fusion", "off"]),
        ("eager on", ["--graph-mode", "eager", "--fusion", "on"]),
    ]),
    "first-step": (20, 3, ["first/steady"], [
        ("graph", ["--graph-mode", "graph", "--ranks", "1"]),
    ]),
    "loader": (20, 3, ["data_wait_ms", "step_time_ms"], [
        ("4 workers", ["--graph-mode", "graph", "--num-workers", "4"]),
        ("in-line", ["--graph-mode", "graph", "--num-workers", "0"]),
    ]),
    "bf16": (8, 3, ["cpu_ms", "step_time_ms"], [
        ("bf16", ["--graph-mode", "graph", "--fusion", "off", "--precision", "bf16", "--act-llc", "4", "--layers",
                  "2", "--ranks", "1", *NO_LOADING]),
        ("fp32", ["--graph-mode", "graph", "--fusion", "off", "--precision", "fp32", "--act-llc", "4", "--layers",
                  "2", "--ranks", "1", *NO_LOADING]),
    ]),
    "bucket": (20, 3, ["allreduce_ms", "allreduce_total_ms", "step_time_ms"], [
        ("25 MB", ["--graph-mode", "graph", "--bucket-mb", "25"]),
        ("1 MB", ["--graph-mode", "graph", "--bucket-mb", "1"]),
        ("200 MB", ["--graph-mode", "graph", "--bucket-mb", "200"]),
    ]),
    "bucket-shipped": (30, 3, ["allreduce_ms", "allreduce_total_ms", "step_time_ms"], [
        ("25 MB", ["--graph-mode", "graph", "--bucket-mb", "25", "--link-latency-us", "400", "--act-mb", "32"]),
        ("5 MB", ["--graph-mode", "graph", "--bucket-mb", "5", "--link-latency-us", "400", "--act-mb", "32"]),
        ("50 MB", ["--graph-mode", "graph", "--bucket-mb", "50", "--link-latency-us", "400", "--act-mb", "32"]),
        ("100 MB", ["--graph-mode", "graph", "--bucket-mb", "100", "--link-latency-us", "400", "--act-mb", "32"]),
    ]),
    "slowdown": (0, 3, ["after/before"], [
        ("x1.2 at 4 s", ["--graph-mode", "graph", "--fusion", "on", "--ranks", "1", "--seconds", "8", "--num-workers",
                         "0", "--batch", "4", "--read-us", "4000", "--act-mb", "1", "--decode-work", "0",
                         "--slowdown-at-s", "4", "--slowdown-factor", "1.2"]),
    ]),
}


def trial(sim, argv, steps):
    args = [sim, *argv] + (["--steps", str(steps)] if steps else ["--steps", "0"])
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=600).stdout
    recs = [json.loads(l[len("PERFGATE "):]) for l in out.splitlines() if l.startswith("PERFGATE ")]
    return [r for r in recs if "step" in r]


def value(steps, metric, warmup):
    if metric == "first/steady":
        return steps[0]["step_time_ms"] / statistics.median(s["step_time_ms"] for s in steps[warmup:])
    if metric == "after/before":
        # Means, not medians: on a loaded machine a step of four storage reads
        # is on time or one wake-up late, and the median jumps between the two.
        t_at = 4.0
        before = [s["step_time_ms"] for s in steps[warmup:] if s["t_s"] < t_at - 0.1]
        after = [s["step_time_ms"] for s in steps if s["t_s"] > t_at + 0.3]
        return statistics.mean(after) / statistics.mean(before)
    return statistics.median(s[metric] for s in steps[warmup:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sim", default=str(Path(__file__).resolve().parents[2] / "build" / "perfgate-sim"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=20261207)
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("--only", action="append")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    hogs = [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"]) for _ in range(a.busy)]
    try:
        for name, (steps, warmup, metrics, configs) in COMPARISONS.items():
            if a.only and name not in a.only:
                continue
            values = {label: {m: [] for m in metrics} for label, _ in configs}
            for _ in range(a.rounds):
                order = list(configs)
                rng.shuffle(order)
                for label, argv in order:
                    s = trial(a.sim, argv, steps)
                    for m in metrics:
                        values[label][m].append(value(s, m, warmup))
            print(f"{name} ({a.rounds} rounds, {a.busy} busy loops, {Path(a.sim).resolve()})")
            ref = configs[0][0]
            for m in metrics:
                parts = [f"{label} {statistics.median(values[label][m]):.3f}" for label, _ in configs]
                line = f"  {m}: " + ", ".join(parts)
                for label, _ in configs[1:]:
                    r = sorted(b / f for f, b in zip(values[ref][m], values[label][m]) if f > 0)
                    if r:
                        line += f"; {label}/{ref} {statistics.median(r):.3f} ({r[0]:.3f}-{r[-1]:.3f})"
                print(line)
            sys.stdout.flush()
    finally:
        for h in hogs:
            h.kill()


if __name__ == "__main__":
    main()
