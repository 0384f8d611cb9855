#!/usr/bin/env python3
"""A trial that only sleeps, for device-slot tests: it records where it ran.

Appends one JSON line to --record when it starts and one when it ends (the
trial directory, the devices it was given, its CPU affinity, the time), and
reports the device it saw as a summary. --marker is ignored: it lets a test
find (and clean up) this process.
"""
import argparse
import json
import os
import time

p = argparse.ArgumentParser()
p.add_argument("--sleep", type=float, default=1.0)
p.add_argument("--record", required=True)
p.add_argument("--devices-arg", default="", help="what the suite passed as {slot.devices}")
p.add_argument("--slow-device", help="on this device (ASCEND_RT_VISIBLE_DEVICES) sleep --slow-factor times longer")
p.add_argument("--slow-factor", type=float, default=1.5)
p.add_argument("--marker")
a = p.parse_args()
if a.slow_device is not None and os.environ.get("ASCEND_RT_VISIBLE_DEVICES") == a.slow_device:
    a.sleep *= a.slow_factor


def record(event):
    line = json.dumps({"event": event, "t": time.time(), "pid": os.getpid(), "sleep": a.sleep,
                       "trial_dir": os.environ.get("PERFGATE_TRIAL_DIR", ""),
                       "visible": os.environ.get("ASCEND_RT_VISIBLE_DEVICES"),
                       "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
                       "slurm_task": os.environ.get("SLURM_ARRAY_TASK_ID"),
                       "slot": os.environ.get("PERFGATE_SLOT"),
                       "slot_devices": os.environ.get("PERFGATE_SLOT_DEVICES"),
                       "devices_arg": a.devices_arg,
                       "cpus": sorted(os.sched_getaffinity(0))}) + "\n"
    # One write with O_APPEND: lines of trials side by side never interleave.
    fd = os.open(a.record, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


record("start")
time.sleep(a.sleep)
record("end")
with open(os.environ["PERFGATE_METRICS"], "a") as out:
    out.write(json.dumps({"meta": {"units": {"slept_s": "s"}, "better": {"slept_s": "lower"}}}) + "\n")
    out.write(json.dumps({"summary": {"slept_s": a.sleep}}) + "\n")
