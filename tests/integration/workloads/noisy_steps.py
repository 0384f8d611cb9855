#!/usr/bin/env python3
"""A synthetic training loop whose numbers are known: the gate tests' workload.

Prints `PERFGATE {json}` lines on stdout (docs/metric-protocol.md): a meta
record, then --steps step records with step_time_ms and throughput
(--batch samples per step). Nothing is timed: the step times are *reported*,
drawn around --mean-ms with seeded noise, so a test knows the true effect and
the outcome does not depend on how busy the machine is.

Noise: each trial draws one level, mean x (1 + cv x N(0,1)), so the per-trial
values (median step time, harmonic-mean throughput) have a CV of about --cv;
each step adds a little noise of its own (cv / 4) around that level.

  --seed-from-env NAME    (repeatable, default PERFGATE_REPEAT) seeds the noise
                          with these environment variables' values, e.g.
                          PERFGATE_REPEAT and PERFGATE_RUN_ID: reproducible, yet
                          different per trial and run
  --scale-env NAME        multiply the step time by the number in $NAME (default 1):
                          "the code got slower" without changing the suite's
                          parameters, so the configuration stays the same
  --fail-env NAME         exit 3 after one step when $NAME is "all" or names this
                          workload ($PERFGATE_WORKLOAD)
  --nan-env NAME          report step_time_ms and throughput as NaN when $NAME is
                          "all" or names this workload: in every step, or with
                          "every:K" (K >= 2) in every K-th step only
  --kill-env NAME         SIGKILL itself after one step when $NAME lists this trial's
                          repeat (PERFGATE_REPEAT, 0-based), e.g. "0,2,3": a build
                          that crashes in some trials and not others
  --take-turns-env NAME   before the steps, append this host's name to the file
                          named in $NAME (nothing when unset) and
                          wait (at most 20 s) until every other host named there
                          has started at least as many trials, less one: two fleet
                          workers sharing one queue then run about half each
  --marker                ignored: lets a test find (and clean up) the process
"""
import argparse
import json
import math
import os
import random
import sys

p = argparse.ArgumentParser()
p.add_argument("--mean-ms", type=float, default=10.0)
p.add_argument("--cv", type=float, default=0.01)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--seed-from-env", action="append", default=None)
p.add_argument("--scale-env")
p.add_argument("--fail-env")
p.add_argument("--nan-env")
p.add_argument("--kill-env")
p.add_argument("--take-turns-env")
p.add_argument("--marker")
a = p.parse_args()

names = a.seed_from_env or ["PERFGATE_REPEAT"]
seed = "noisy_steps|" + "|".join(f"{n}={os.environ.get(n, '')}" for n in names)
rng = random.Random(seed)  # a str seed goes through SHA-512: the same on every run and machine

scale = 1.0
if a.scale_env and os.environ.get(a.scale_env):
    scale = float(os.environ[a.scale_env])


def chosen(env_name):
    """True when $env_name says "all" or names this workload."""
    value = os.environ.get(env_name, "") if env_name else ""
    return value != "" and value in ("all", os.environ.get("PERFGATE_WORKLOAD", ""))


fail = chosen(a.fail_env)
kill = bool(a.kill_env) and os.environ.get("PERFGATE_REPEAT", "") in os.environ.get(a.kill_env, "").split(",")
nan_every = 0
if chosen(a.nan_env):
    nan_every = 1
elif a.nan_env and os.environ.get(a.nan_env, "").startswith("every:"):
    nan_every = int(os.environ[a.nan_env].split(":", 1)[1])


def emit(record):
    sys.stdout.write("PERFGATE " + json.dumps(record) + "\n")


turns = os.environ.get(a.take_turns_env, "") if a.take_turns_env else ""
if turns:
    import socket
    import time
    me = socket.gethostname()
    with open(turns, "a") as f:
        f.write(me + "\n")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with open(turns) as f:
            names = f.read().split()
        mine = names.count(me)
        others = {n: names.count(n) for n in set(names) - {me}}
        if others and all(n >= mine - 1 for n in others.values()):
            break
        time.sleep(0.05)

emit({"meta": {"units": {"step_time_ms": "ms", "throughput": "samples/s"},
               "better": {"step_time_ms": "lower", "throughput": "higher"}}})
level = a.mean_ms * scale * (1 + a.cv * rng.gauss(0, 1))
for step in range(a.steps):
    ms = level * (1 + a.cv / 4 * rng.gauss(0, 1))
    if nan_every and step % nan_every == nan_every - 1:
        emit({"step": step, "step_time_ms": math.nan, "throughput": math.nan, "loss": 1.0})
    else:
        emit({"step": step, "step_time_ms": ms, "throughput": a.batch / (ms / 1e3), "loss": 2.0 / (step + 1)})
    if kill:
        sys.stdout.flush()
        os.kill(os.getpid(), 9)
    if fail:
        sys.stdout.flush()
        print(f"noisy_steps: failing on purpose ({a.fail_env}={os.environ.get(a.fail_env)})", file=sys.stderr)
        sys.exit(3)
sys.stdout.flush()
