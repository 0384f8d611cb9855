#!/usr/bin/env python3
"""Never finishes on its own (unless --exit-after), in ways that test process control.

--child          start a child that ignores SIGTERM and sleeps forever; wait until
                 it has set that up (it creates $PERFGATE_TRIAL_DIR/child-ready)
--ignore-term    ignore SIGTERM in this process too
--exit-after S   exit 0 after S seconds (leaving the child behind)
--ready-file F   create F once the signal handling above is set up, so a test
                 can signal it without guessing how long a loaded machine takes
--marker M       ignored; lets the test find the processes (the child gets it too)
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--child", action="store_true")
p.add_argument("--as-child", action="store_true")
p.add_argument("--ignore-term", action="store_true")
p.add_argument("--exit-after", type=float)
p.add_argument("--ready")
p.add_argument("--ready-file")
p.add_argument("--marker", default="")
a = p.parse_args()

if a.as_child:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    open(a.ready, "w").close()
    while True:
        time.sleep(60)

if a.ignore_term:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if a.child:
    ready = os.path.join(os.environ["PERFGATE_TRIAL_DIR"], "child-ready")
    subprocess.Popen([sys.executable, os.path.abspath(__file__), "--as-child", "--ready", ready, "--marker", a.marker])
    while not os.path.exists(ready):
        time.sleep(0.01)
if a.ready_file:
    open(a.ready_file, "w").close()
with open(os.environ["PERFGATE_METRICS"], "a") as out:
    out.write(json.dumps({"step": 0, "step_time_ms": 1.0, "throughput": 1.0}) + "\n")
if a.exit_after is not None:
    time.sleep(a.exit_after)
    sys.exit(0)
while True:
    time.sleep(60)
