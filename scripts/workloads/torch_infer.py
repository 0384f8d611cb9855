#!/usr/bin/env python3
"""Real PyTorch inference for perfgate: the models of torch_train.py (a small
ResNet-style CNN or transformer encoder) served request by request, one batch
size after another, with perfgate's knobs.

Knobs:
  --graph-mode eager|graph
      cpu:  eager vs TorchScript: torch.jit.trace + torch.jit.freeze per input
            shape, built inside the first request that has that shape (a static-
            shape graph compiler's behaviour: a new shape is a new graph).
      npu:  torch_npu.npu.set_compile_mode(jit_compile=True), plus
            torch.compile(backend=torchair.get_npu_backend(...), dynamic=False)
            when torchair imports.
      cuda: torch.compile(dynamic=False) where torch has it, else TorchScript.
  --precision fp32|bf16|fp16   torch.autocast(device, dtype); no fp16 on the CPU.
  --batch-sizes 1,8,32         served in this order, --requests each.
  --warmup-requests N          per batch size, before the measured requests;
                               not reported as steps (but the very first
                               request of the run is first_request_ms).
  --dynamic-shapes off|on      on: every request picks its input size at random
                               (seeded) among 0.75x, 1x, 1.25x and 1.5x the base
                               image side / sequence length (multiples of 8);
                               off: always the base size.

Compiles and recompiles (graph modes; eager reports 0):
  compiles    graphs built in the whole run (TorchScript traces, or calls of
              the torch.compile backend).
  recompiles  graphs built at a batch size after that batch size's first one:
              the cost of shape changes. The first graph of each batch size
              is the compile a static-shape deployment pays anyway, so with
              --dynamic-shapes off recompiles is 0 by definition and with on
              it counts every new shape seen (warm-up requests included).
              Not reported on npu without torchair (jit_compile's operator
              compilation cannot be counted from Python).

Metric protocol: a meta record; per measured request a step record (step,
latency_ms, batch_size, throughput = batch_size / latency in samples/s,
t_s); at the end one summary record with, for each batch size N,
latency_p50_ms_bsN, latency_p90_ms_bsN, latency_p99_ms_bsN, qps_bsN
(requests per second served one at a time = 1000 / mean latency) and
throughput_bsN (samples/s), plus recompiles, compiles, compile_ms,
first_request_ms (also as first_step_ms, the name perfgate's reports show
in their "first step" column) and requests. A request's latency is host input -> device
-> forward -> output back on the host, with a device synchronize on npu/cuda;
making the random input is not timed.
"""
import time

T0 = time.monotonic()  # the workload's start, before the imports below

import argparse  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_common as C  # noqa: E402

PROG = "torch_infer"


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog=PROG, description="PyTorch inference workload for perfgate.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    C.add_common_args(p)
    p.add_argument("--batch-sizes", type=C.int_list, default=[1, 8, 32], metavar="N,N,...",
                   help="comma-separated batch sizes, served in this order")
    p.add_argument("--requests", type=C.positive_int, default=20, help="measured requests per batch size")
    p.add_argument("--warmup-requests", type=C.nonneg_int, default=2, help="unreported requests per batch size")
    p.add_argument("--dynamic-shapes", choices=C.ONOFF, default="off")
    a = p.parse_args(argv)
    C.check_model_args(p, a)
    return p, a


class Runner:
    """Calls the model the --graph-mode way and counts graph builds per batch size."""

    def __init__(self, model, a, kind, backend):
        import torch
        self.torch = torch
        self.model = model
        self.a = a
        self.backend = backend
        self.cache = {}  # torchscript: input shape -> frozen trace
        self.compiles = {}  # batch size -> graphs built
        self.compile_s = 0.0
        self.countable = backend in ("eager", "torchscript", "torchair", "inductor")
        self.compiled = None
        self.counter = None
        if backend in ("torchair", "inductor"):
            self.counter = C.torch_compile_backend(kind)
            self.compiled = torch.compile(model, backend=self.counter, dynamic=False)

    def __call__(self, x, bs):
        if self.backend == "torchscript":
            key = tuple(x.shape)
            fn = self.cache.get(key)
            if fn is None:
                t = time.perf_counter()
                fn = self.torch.jit.freeze(self.torch.jit.trace(self.model, x, check_trace=False))
                self.compile_s += time.perf_counter() - t
                self.cache[key] = fn
                self.compiles[bs] = self.compiles.get(bs, 0) + 1
            return fn(x)
        if self.compiled is not None:
            before = self.counter.calls
            out = self.compiled(x)
            if self.counter.calls > before:
                self.compiles[bs] = self.compiles.get(bs, 0) + self.counter.calls - before
            self.compile_s = self.counter.seconds
            return out
        return self.model(x)

    def total_compiles(self):
        return sum(self.compiles.values())

    def recompiles(self):
        return sum(max(0, n - 1) for n in self.compiles.values())


def main(argv=None):
    parser, a = parse_args(argv)
    C.prepare_environment()
    kind = C.select_device_or_exit(parser, a, PROG)
    C.install_termination_handlers(PROG)
    import torch

    dev = C.Device(kind)
    threads = C.set_threads(a.threads, 1)
    torch.manual_seed(a.seed)
    backend = C.graph_backend(kind) if a.graph_mode == "graph" else "eager"
    if kind == "npu":
        C.set_npu_compile_mode(a.graph_mode == "graph")
    if backend == "torchscript":
        C.configure_torchscript("off")

    model = C.build_model(a).to(dev.device).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    n_params = sum(p.numel() for p in model.parameters())
    run = Runner(model, a, kind, backend)
    sizes = C.dynamic_sizes(a) if a.dynamic_shapes == "on" else C.dynamic_sizes(a)[:1]
    gen = torch.Generator().manual_seed(a.seed)

    out = C.MetricWriter()
    print(f"{PROG}: {a.model} on {dev.describe()}, graph={a.graph_mode} ({backend}), precision={a.precision}, "
          f"batch sizes {a.batch_sizes}, {a.requests} requests each (+{a.warmup_requests} warm-up), "
          f"dynamic shapes {a.dynamic_shapes} (sizes {sizes}), {n_params / 1e6:.2f}M params, threads {threads} "
          f"(OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')})",
          file=sys.stderr, flush=True)
    units = {"latency_ms": "ms", "throughput": "samples/s", "first_request_ms": "ms", "first_step_ms": "ms",
             "compile_ms": "ms"}
    better = {"latency_ms": "lower", "throughput": "higher", "batch_size": "none", "first_request_ms": "lower",
              "first_step_ms": "lower", "compile_ms": "lower", "recompiles": "lower", "compiles": "lower",
              "requests": "none", "params_m": "none", "threads": "none"}
    for bs in a.batch_sizes:
        for q in (50, 90, 99):
            units[f"latency_p{q}_ms_bs{bs}"] = "ms"
            better[f"latency_p{q}_ms_bs{bs}"] = "lower"
        units[f"qps_bs{bs}"] = "requests/s"
        better[f"qps_bs{bs}"] = "higher"
        units[f"throughput_bs{bs}"] = "samples/s"
        better[f"throughput_bs{bs}"] = "higher"
    out.meta(units=units, better=better, facts=("params_m", "threads"))

    summary = {}
    first_request_ms = None
    step = 0
    with torch.no_grad():
        for bs in a.batch_sizes:
            rng = random.Random(a.seed * 1000003 + bs)
            lat = []
            for i in range(a.warmup_requests + a.requests):
                size = rng.choice(sizes)
                x = C.random_input(a, bs, "cpu", size=size, generator=gen)
                dev.synchronize()
                t0 = time.perf_counter()
                xd = x.to(dev.device)
                with dev.autocast(a.precision):
                    y = run(xd, bs)
                y = y.float().cpu()
                dev.synchronize()
                ms = (time.perf_counter() - t0) * 1e3
                if first_request_ms is None:
                    first_request_ms = ms
                if i < a.warmup_requests:
                    continue
                lat.append(ms)
                out.step(step=step, latency_ms=ms, batch_size=bs, throughput=bs / (ms / 1e3),
                         t_s=time.monotonic() - T0)
                step += 1
            s = sorted(lat)
            mean = sum(lat) / len(lat)
            summary[f"latency_p50_ms_bs{bs}"] = C.percentile(s, 50)
            summary[f"latency_p90_ms_bs{bs}"] = C.percentile(s, 90)
            summary[f"latency_p99_ms_bs{bs}"] = C.percentile(s, 99)
            summary[f"qps_bs{bs}"] = 1e3 / mean
            summary[f"throughput_bs{bs}"] = bs * 1e3 / mean

    if run.countable:
        summary["recompiles"] = run.recompiles()
        summary["compiles"] = run.total_compiles()
        summary["compile_ms"] = run.compile_s * 1e3
    # first_step_ms too: perfgate's "first step" column reads that name.
    summary.update(first_request_ms=first_request_ms, first_step_ms=first_request_ms, requests=step,
                   params_m=n_params / 1e6, threads=threads)
    out.summary(**summary)
    out.close()
    print(f"{PROG}: done: {step} requests, compiles {run.total_compiles()}, recompiles {run.recompiles()}",
          file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
