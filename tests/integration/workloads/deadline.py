"""Reports what it was told about its deadline, then steps until it is stopped.

argv: --deadline-arg {deadline} --duration-arg {duration_s}; first stdout line
is a JSON object with those and PERFGATE_DEADLINE; then a step record every
0.1 s, ignoring the deadline on purpose (the harness must end it).
"""
import argparse
import json
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--deadline-arg")
p.add_argument("--duration-arg")
a = p.parse_args()
print(json.dumps({"deadline_env": os.environ.get("PERFGATE_DEADLINE"), "deadline_arg": a.deadline_arg,
                  "duration_arg": a.duration_arg}), flush=True)
step = 0
while True:
    print("PERFGATE " + json.dumps({"step": step, "step_time_ms": 100.0}), flush=True)
    step += 1
    time.sleep(0.1)
