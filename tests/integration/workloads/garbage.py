#!/usr/bin/env python3
"""Writes good step records mixed with malformed lines, on both protocol channels.

Metrics file ($PERFGATE_METRICS), in this order:
  line 1  {"step": 0, ...}                     good
  line 2  binary garbage (no newline inside)   bad
  line 3  {"step": 1, ...}                     good
  line 4  {"step": 2, "throughput": 12        bad (half a JSON object)
  line 5  {"step": 2, ...}                     good
  line 6  [1, 2, 3]                            bad (not an object)
  line 7  {"step": 3, ...}                     good
  line 8  {"step": 4, "throughput":           bad (cut off, no newline, at EOF)
stdout:
  'PERFGATE {"summary": {"first_step_ms": 7'   bad (half a JSON object)
  'PERFGATE {"step": 9, "note": "x"}'          bad (no numeric metric)
  ordinary lines without the prefix            ignored
So: 4 good steps with throughput 200 and step_time_ms 5, and 6 malformed lines.
"""
import json
import os

GOOD = lambda s: (json.dumps({"step": s, "step_time_ms": 5.0, "throughput": 200.0}) + "\n").encode()
garbage = bytes(b for b in range(256) if b != 0x0A) * 3

with open(os.environ["PERFGATE_METRICS"], "ab") as out:
    out.write(GOOD(0))
    out.write(garbage + b"\n")
    out.write(GOOD(1))
    out.write(b'{"step": 2, "throughput": 12\n')
    out.write(GOOD(2))
    out.write(b"[1, 2, 3]\n")
    out.write(GOOD(3))
    out.write(b'{"step": 4, "throughput":')
print("hello, not a protocol line")
print('PERFGATE {"summary": {"first_step_ms": 7')
print('PERFGATE {"step": 9, "note": "x"}')
print("bye", flush=True)
