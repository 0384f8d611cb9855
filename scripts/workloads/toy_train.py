#!/usr/bin/env python3
"""A small real training-like workload for the smoke suite (numpy on CPU).

Each step runs a two-layer MLP forward and backward on a synthetic batch, so
the knobs change real work:
  --graph-mode eager  runs the batch as many small per-sample matrix products
               graph  runs it as one batched product (fewer, larger calls)
  --precision  fp32 | fp16  (storage dtype of activations and weights)
  --bucket-mb  gradients are "reduced" (summed into a buffer) in buckets of this size
It speaks the perfgate metric protocol: one JSON line per step appended to
$PERFGATE_METRICS. Until perfgate-sim exists this is the smoke workload.
"""
import argparse
import json
import os
import sys
import time

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--graph-mode", choices=["eager", "graph"], default="graph")
    p.add_argument("--precision", choices=["fp32", "fp16"], default="fp32")
    p.add_argument("--bucket-mb", type=float, default=25)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    dtype = np.float32 if a.precision == "fp32" else np.float16
    rng = np.random.default_rng(a.seed)
    w1 = (rng.standard_normal((a.width, a.width)) * 0.05).astype(dtype)
    w2 = (rng.standard_normal((a.width, 10)) * 0.05).astype(dtype)
    grads = [np.zeros_like(w1), np.zeros_like(w2)]
    flat_bytes = sum(g.nbytes for g in grads)
    bucket_bytes = max(1, int(a.bucket_mb * 1024 * 1024))
    reduce_buf = np.zeros(max(1, min(flat_bytes, bucket_bytes) // np.dtype(dtype).itemsize), dtype=dtype)

    out = open(os.environ["PERFGATE_METRICS"], "a", buffering=1) if "PERFGATE_METRICS" in os.environ else sys.stdout
    out.write(json.dumps({"meta": {"units": {"throughput": "samples/s", "step_time_ms": "ms"}}}) + "\n")
    t_start = time.perf_counter()
    for step in range(a.steps):
        t0 = time.perf_counter()
        x = rng.standard_normal((a.batch, a.width)).astype(dtype)
        y = rng.integers(0, 10, a.batch)
        if a.graph_mode == "eager":
            # One small call per sample and op: the per-op dispatch cost eager mode pays.
            h = np.stack([np.maximum(x[i] @ w1, 0) for i in range(a.batch)])
            logits = np.stack([h[i] @ w2 for i in range(a.batch)])
        else:
            h = np.maximum(x @ w1, 0)
            logits = h @ w2
        logits = logits - logits.max(axis=1, keepdims=True)
        prob = np.exp(logits.astype(np.float32))
        prob /= prob.sum(axis=1, keepdims=True)
        loss = float(-np.log(prob[np.arange(a.batch), y] + 1e-9).mean())
        d = prob
        d[np.arange(a.batch), y] -= 1
        d = (d / a.batch).astype(dtype)
        grads[1] = h.T @ d
        dh = (d @ w2.T) * (h > 0)
        grads[0] = x.T @ dh
        # Bucketed "all-reduce": one pass per bucket over the flattened gradients.
        for g in grads:
            flat = g.reshape(-1)
            for start in range(0, flat.size, reduce_buf.size):
                chunk = flat[start:start + reduce_buf.size]
                reduce_buf[:chunk.size] += chunk
        w1 -= (0.01 * grads[0]).astype(dtype)
        w2 -= (0.01 * grads[1]).astype(dtype)
        dt = time.perf_counter() - t0
        out.write(json.dumps({"step": step, "step_time_ms": dt * 1e3, "throughput": a.batch / dt,
                              "loss": loss, "t_s": time.perf_counter() - t_start}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
