#!/usr/bin/env python3
"""Fails on purpose after one step and some stderr output.

usage: fail.py exit CODE | fail.py signal SIGNUM   [TAG] [--binary]
Prints 15 numbered stderr lines (with --binary, a line of bytes that are not
UTF-8 comes next), then 'FATAL <TAG>: boom', then exits with CODE or kills
itself with SIGNUM.
"""
import json
import os
import signal
import sys

args = [a for a in sys.argv[1:] if a != "--binary"]
binary = "--binary" in sys.argv[1:]
mode, value = args[0], int(args[1])
tag = args[2] if len(args) > 2 else "x"
with open(os.environ["PERFGATE_METRICS"], "a") as out:
    out.write(json.dumps({"step": 0, "step_time_ms": 1.0, "throughput": 1.0}) + "\n")
for i in range(15):
    print(f"stderr line {i}", file=sys.stderr)
sys.stderr.flush()
if binary:
    sys.stderr.buffer.write(b"\xff\xfe binary \xc0\x80 garbage \xed\xa0\x80\n")
    sys.stderr.buffer.flush()
print(f"FATAL {tag}: boom", file=sys.stderr, flush=True)
sys.stdout.flush()
if mode == "exit":
    os._exit(value)
if value not in (signal.SIGKILL, signal.SIGSTOP):
    signal.signal(value, signal.SIG_DFL)
os.kill(os.getpid(), value)
