#!/usr/bin/env python3
"""Floods a stream with output while reporting a few good steps.

usage: flood.py BYTES [stdout|stderr] [lines|oneline]
'lines' writes BYTES of 100-byte lines; 'oneline' writes BYTES of one line that
starts with the 'PERFGATE ' prefix and never ends (a runaway protocol line).
The last line of the stream is 'FLOOD-END'.
"""
import json
import os
import sys

total = int(sys.argv[1])
stream = sys.stdout.buffer if (len(sys.argv) < 3 or sys.argv[2] == "stdout") else sys.stderr.buffer
shape = sys.argv[3] if len(sys.argv) > 3 else "lines"

with open(os.environ["PERFGATE_METRICS"], "a") as out:
    for step in range(5):
        out.write(json.dumps({"step": step, "step_time_ms": 2.0, "throughput": 500.0}) + "\n")

line = (b"flood " * 20)[:99] + b"\n"
chunk = line * 10000  # ~1 MB
written = 0
if shape == "oneline":
    stream.write(b"PERFGATE {\"summary\": {\"x\": 1")
    piece = b"0" * len(chunk)
    while written < total:
        stream.write(piece)
        written += len(piece)
    stream.write(b"\n")
else:
    while written < total:
        stream.write(chunk)
        written += len(chunk)
stream.write(b"FLOOD-END\n")
stream.flush()
