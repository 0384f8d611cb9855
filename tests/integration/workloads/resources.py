#!/usr/bin/env python3
"""Uses known amounts of memory and CPU in child processes, so the tree accounting can be checked.

usage: resources.py CHILDREN MB CPU_S
Starts CHILDREN children at once; each touches MB megabytes, burns CPU_S
seconds of CPU time, holds the memory until all of them got that far (plus
1.2 s), and exits. The parent waits for them and reports one step.
"""
import json
import os
import subprocess
import sys
import time

if len(sys.argv) > 1 and sys.argv[1] == "--child":
    mb, cpu_s, barrier, n = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], int(sys.argv[5])
    block = bytearray(b"\x01") * (mb * 1024 * 1024)  # touched, so it is resident
    t0 = time.process_time()
    x = 0
    while time.process_time() - t0 < cpu_s:
        x += 1
    open(f"{barrier}.{os.getpid()}", "w").close()
    deadline = time.monotonic() + 20
    while len([f for f in os.listdir(os.path.dirname(barrier)) if f.startswith(os.path.basename(barrier))]) < n:
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    time.sleep(1.2)
    sys.exit(0 if block[-1] == 1 else 1)

n, mb, cpu_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
barrier = os.path.join(os.environ["PERFGATE_TRIAL_DIR"], "barrier")
kids = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", str(mb), str(cpu_s), barrier, str(n)])
        for _ in range(n)]
codes = [k.wait() for k in kids]
with open(os.environ["PERFGATE_METRICS"], "a") as out:
    out.write(json.dumps({"step": 0, "step_time_ms": 1.0, "throughput": 1.0}) + "\n")
sys.exit(max(codes))
