#!/usr/bin/env python3
"""Prints the log of a training or inference tool that cannot be changed:
Megatron/MindSpeed iteration lines, MindSpore monitors, ModelZoo summaries,
ais_bench summaries, or a custom format for the regex parser. Step times are
drawn around --step-ms (1 % noise, seeded by the repeat) and the process
really takes that long, so what is read can be checked against what was meant.

  print_log.py --format megatron --steps 20 --step-ms 5 [--to stdout|stderr|FILE] [--bad-line N] [--garbage]
               [--compile-ms 15800]
"""

import argparse
import os
import random
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--format", required=True, choices=["megatron", "mindspore", "modelzoo", "ais_bench", "custom"])
p.add_argument("--steps", type=int, default=20)
p.add_argument("--step-ms", type=float, default=5.0)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--to", default="stdout", help="stdout, stderr, or a file path (appended, line-buffered)")
p.add_argument("--bad-line", type=int, default=0, help="after this step, print a recognised line that cannot be read")
p.add_argument("--garbage", action="store_true", help="interleave lines no parser knows")
p.add_argument("--nan-loss-at", type=int, default=0)
p.add_argument("--compile-ms", type=float, default=0,
               help="megatron: the first iteration reports this elapsed time (graph compile), without taking it")
a = p.parse_args()

rng = random.Random(int(os.environ.get("PERFGATE_REPEAT", "0")) + 1)
out = {"stdout": sys.stdout, "stderr": sys.stderr}.get(a.to) or open(a.to, "a", buffering=1)


def say(line):
    out.write(line + "\n")
    out.flush()


def step_ms():
    t = a.step_ms * (1 + rng.gauss(0, 0.01))
    time.sleep(t / 1000)
    return t


loss = 8.0
if a.format == "megatron":
    for i in range(1, a.steps + 1):
        t = step_ms()
        if i == 1 and a.compile_ms > 0:
            t = a.compile_ms
        loss *= 0.97
        shown = "nan" if i == a.nan_loss_at else f"{loss:.6E}"
        say(f" [2026-11-29 10:00:{i % 60:02d}] iteration {i:8d}/{a.steps:8d} | consumed samples: {i * a.batch:12d} | "
            f"elapsed time per iteration (ms): {t:.1f} | throughput per GPU (TFLOP/s/GPU): {1000 / t:.1f} | "
            f"learning rate: 1.000000E-04 | global batch size: {a.batch:5d} | lm loss: {shown} | "
            f"loss scale: 65536.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |")
        if i == 1:
            for rank in (0, 1):
                say(f"[Rank {rank}] (after 1 iterations) memory (MB) | allocated: {1000 + rank}.5 | "
                    f"max allocated: {2000 + 100 * rank}.0 | reserved: 3000.0 | max reserved: 3100.0")
        if i == a.bad_line:
            say(f" iteration {i:8d}/{a.steps:8d} | elapsed time per iteration (ms): n/a |")
        if a.garbage:
            say("WARNING: something the parser does not know | 12 | x: y")
elif a.format == "mindspore":
    steps_per_epoch = 4
    for e in range(1, a.steps // steps_per_epoch + 1):
        ts = [step_ms() for _ in range(steps_per_epoch)]
        loss *= 0.9
        say(f"epoch: {e} step: {steps_per_epoch}, loss is {loss:.4f}")
        if e == a.bad_line:
            say(f"epoch: {e} step: {steps_per_epoch}, loss is Tensor(")
        say(f"Train epoch time: {sum(ts):.3f} ms, per step time: {sum(ts) / len(ts):.3f} ms")
elif a.format == "modelzoo":
    ts = [step_ms() for _ in range(a.steps)]
    fps = a.batch * 1000 / (sum(ts) / len(ts))
    say("Network = ResNet50_ID0058_for_PyTorch")
    say("DeviceType = Ascend910")
    say(f"BatchSize = {a.batch}")
    say("RankSize = 1")
    say(f"ActualFPS = {fps:.2f}")
    say(f"TrainingTime = {a.batch * 1000 / fps:.2f}")
    say(f"ActualLoss = {loss:.4f}")
    say(f"E2ETrainingTime = {sum(ts) / 1000:.3f}")
elif a.format == "ais_bench":
    ts = sorted(step_ms() for _ in range(a.steps))
    mean = sum(ts) / len(ts)
    med = ts[len(ts) // 2]
    p99 = ts[min(len(ts) - 1, int(len(ts) * 0.99))]
    say("[INFO] -----------------Performance Summary------------------")
    say("[INFO] H2D_latency (ms): min = 0.05, max = 0.06, mean = 0.05, median = 0.05, percentile(99%) = 0.06")
    say(f"[INFO] NPU_compute_time (ms): min = {ts[0]:.3f}, max = {ts[-1]:.3f}, mean = {mean:.3f}, "
        f"median = {med:.3f}, percentile(99%) = {p99:.3f}")
    say("[INFO] D2H_latency (ms): min = 0.02, max = 0.03, mean = 0.02, median = 0.02, percentile(99%) = 0.03")
    say(f"[INFO] throughput 1000*batchsize.mean({a.batch})/NPU_compute_time.mean({mean:.3f}): {1000 * a.batch / mean:.2f}")
    say("[INFO] ------------------------------------------------------")
else:  # custom: for the regex parser
    for i in range(a.steps):
        t = step_ms()
        say(f"train step={i} time={t:.3f}ms mem={500 + i}MB")
        if i == a.bad_line:
            say(f"train step={i} time=fast ms")
    say("final accuracy: 0.875")
