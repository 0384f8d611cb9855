#!/usr/bin/env python3
"""Checks the environment it got without ever printing a secret.

usage: env_probe.py SHA256_OF_EXPECTED_HF_TOKEN
Summary: token_ok (1 when HF_TOKEN hashes to the argument), knob (MY_KNOB as a number).
"""
import hashlib
import json
import os
import sys

token = os.environ.get("HF_TOKEN", "")
ok = int(hashlib.sha256(token.encode()).hexdigest() == sys.argv[1])
knob = float(os.environ.get("MY_KNOB", "-1"))
with open(os.environ["PERFGATE_METRICS"], "a") as out:
    out.write(json.dumps({"step": 0, "step_time_ms": 1.0, "throughput": 1.0}) + "\n")
    out.write(json.dumps({"summary": {"token_ok": ok, "knob": knob}}) + "\n")
