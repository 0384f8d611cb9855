#!/usr/bin/python3
"""Device slots against one slot, same plan, side by side.

64 trials of a workload that sleeps 2 s (a stand-in for a trial that keeps
one accelerator busy while the host idles: on this 2-core machine there is
nothing else to fake), planned once with a fixed seed and run through the
real binary on 8 fake NPU slots (`--slots npu:0-7`) and on 1 slot, the two
alternating for --rounds rounds. Prints per round the wall time of each, the
ratio, and perfgate's own overhead per trial with 8 in flight:

    overhead per trial = (wall time x slots - sum of the trials' sleeps) / trials

i.e. the harness time (start, collector, samplers, store, lock) a slot
spends per trial beyond the workload. Then medians over the rounds.

    /usr/bin/python3 tests/bench/slots_scale.py [--rounds 3] [--trials 64] [--sleep 2] [--build build]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--sleep", type=float, default=2.0)
    ap.add_argument("--build", default=str(ROOT / "build"))
    a = ap.parse_args()
    perfgate = Path(a.build) / "perfgate"
    work = Path(tempfile.mkdtemp(prefix="perfgate-slots-"))
    configs = 8
    repeats = a.trials // configs
    (work / "nap.py").write_text(
        "import sys, time, json, os\n"
        "time.sleep(float(sys.argv[1]))\n"
        "open(os.environ['PERFGATE_METRICS'], 'a').write(json.dumps({'summary': {'slept_s': float(sys.argv[1])}}) + '\\n')\n")
    suite = work / "slots.yaml"
    suite.write_text(f"""suite: slots-scale
seed: 7
defaults: {{repeats: {repeats}, timeout: 5m}}
workloads:
  - name: nap
    command: [{sys.executable}, "{{suite_dir}}/nap.py", "{a.sleep}"]
    matrix: {{k: [{", ".join(str(i) for i in range(configs))}]}}
""")
    env = dict(os.environ, PERFGATE_LOCK_DIR=str(work / "locks"))
    rows = []
    for r in range(a.rounds):
        row = {}
        for slots in ("npu:0-7", "npu:0"):
            t0 = time.monotonic()
            p = subprocess.run([str(perfgate), "--db", str(work / "b.db"), "run", str(suite), "--slots", slots, "-q"],
                               env=env, capture_output=True, text=True)
            row[slots] = time.monotonic() - t0
            if p.returncode != 0:
                sys.exit(f"perfgate run --slots {slots} failed ({p.returncode}):\n{p.stderr}")
        ratio = row["npu:0"] / row["npu:0-7"]
        overhead = (row["npu:0-7"] * 8 - a.trials * a.sleep) / a.trials
        overhead1 = (row["npu:0"] - a.trials * a.sleep) / a.trials
        rows.append((row["npu:0-7"], row["npu:0"], ratio, overhead, overhead1))
        print(f"round {r + 1}: 8 slots {row['npu:0-7']:.1f} s, 1 slot {row['npu:0']:.1f} s, ratio {ratio:.2f}x, "
              f"overhead per trial {overhead * 1e3:.0f} ms with 8 in flight, {overhead1 * 1e3:.0f} ms alone", flush=True)
    med = [statistics.median(x[i] for x in rows) for i in range(5)]
    print(f"median over {a.rounds} rounds: 8 slots {med[0]:.1f} s, 1 slot {med[1]:.1f} s, ratio {med[2]:.2f}x, "
          f"overhead per trial {med[3] * 1e3:.0f} ms (8 in flight), {med[4] * 1e3:.0f} ms (alone)")


if __name__ == "__main__":
    main()
