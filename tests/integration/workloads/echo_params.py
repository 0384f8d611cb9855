#!/usr/bin/env python3
"""Echoes how its parameters arrived: argv, PERFGATE_PARAM_<NAME> and PERFGATE_PARAMS.

usage: echo_params.py BUCKET_MB GRAPH_MODE
Writes a few step records to $PERFGATE_METRICS, a summary on stdout through the
'PERFGATE ' prefix (argv_bucket_mb, env_bucket_mb, json_bucket_mb and whether
the graph mode agreed everywhere), and everything it saw to
$PERFGATE_TRIAL_DIR/seen.json.
"""
import json
import os
import sys

bucket_argv, graph_argv = sys.argv[1], sys.argv[2]
env_params = {k: v for k, v in os.environ.items() if k.startswith("PERFGATE_PARAM_")}
params_json = json.loads(os.environ["PERFGATE_PARAMS"])
seen = {"argv": sys.argv[1:], "env": env_params, "params": params_json,
        "metrics": os.environ.get("PERFGATE_METRICS"), "trial_dir": os.environ.get("PERFGATE_TRIAL_DIR")}
with open(os.path.join(os.environ["PERFGATE_TRIAL_DIR"], "seen.json"), "w") as f:
    json.dump(seen, f)

with open(os.environ["PERFGATE_METRICS"], "a") as out:
    for step in range(4):
        out.write(json.dumps({"step": step, "step_time_ms": 10.0 + step, "throughput": 50.0}) + "\n")

graph_ok = int(graph_argv == os.environ.get("PERFGATE_PARAM_GRAPH_MODE") == params_json.get("graph_mode"))
summary = {"argv_bucket_mb": float(bucket_argv),
           "env_bucket_mb": float(os.environ.get("PERFGATE_PARAM_BUCKET_MB", "nan")),
           "json_bucket_mb": float(params_json.get("bucket_mb", "nan")),
           "graph_mode_agrees": graph_ok}
print("some ordinary output")
print("PERFGATE " + json.dumps({"summary": summary}), flush=True)
