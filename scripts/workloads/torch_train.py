#!/usr/bin/env python3
"""Real PyTorch training for perfgate: a small ResNet-style CNN or transformer
encoder, data-parallel over --world-size processes, with perfgate's knobs.

Knobs (perfgate's names) and what they do on each device:

  --graph-mode eager|graph
      cpu:  eager PyTorch vs TorchScript: the model is traced (torch.jit.trace)
            inside the first step's forward, so the first step pays the
            "compile" like a graph compiler would (first_step_ms shows it).
      npu:  torch_npu.npu.set_compile_mode(jit_compile=False|True); when
            torchair imports, graph mode also runs the DDP model through
            torch.compile(backend=torchair.get_npu_backend(...)).
      cuda: torch.compile (inductor) where torch has it, else TorchScript.
  --fusion off|on
      cpu/cuda: the optimizer's multi-tensor (foreach=True) path, or fused=True
            where the installed torch supports it on that device (cuda; cpu
            from torch 2.4); on: TorchScript's NNC fuser is allowed on the CPU
            when torch was built with LLVM (Debian's 1.13 is not: then only
            the optimizer changes). off: foreach=False, fusers off.
      npu:  torch_npu.optim.NpuFusedSGD / NpuFusedAdamW.
  --bucket-mb F    DDP bucket_cap_mb (gloo on cpu, hccl on npu, nccl on cuda).
  --world-size N   ranks, one process each (torch.multiprocessing; rendezvous
                   over TCP on 127.0.0.1, a free port). N=1 runs in this
                   process without DDP.
  --precision fp32|bf16|fp16
      bf16: torch.autocast(device, bfloat16). fp16: autocast(float16) with a
      loss scaler (torch.cuda.amp / torch_npu.npu.amp GradScaler); fp16 is not
      available on the CPU (exit 2).
  --num-workers / --prefetch / --pin-memory / --persistent-workers
      DataLoader(num_workers, prefetch_factor (only with workers),
      pin_memory (only with an accelerator), persistent_workers (only with
      workers)). The synthetic dataset does real per-sample CPU work
      (--data-work), so too few workers make the step wait for data
      (data_wait_ms). An epoch is --epoch-steps steps, so non-persistent
      workers are restarted, as in real training.

Batch: --batch is per rank; throughput is global (batch * world_size / step
time). Every rank runs the same number of steps (with --seconds, rank 0's
clock decides and the ranks agree by an all-reduce after every step).

Metric protocol (rank 0 only): a meta record, one record per step (step,
step_time_ms, throughput, data_wait_ms, forward_ms, backward_ms (includes
DDP's overlapped all-reduce), optimizer_ms, loss, host_rss_mb,
device_mem_mb where the device reports it, t_s), then a summary record
(first_step_ms, world_size, steps, final_loss, ...). Appended to
$PERFGATE_METRICS, or printed as "PERFGATE <json>" lines when it is unset.
Times are time.perf_counter after a device synchronize on npu/cuda.

Exit codes: 0 ok; 1 the device is unavailable or a rank failed; 2 bad
command line; killed by SIGTERM when asked to stop (the whole process tree
goes, promptly).
"""
import time

T0 = time.monotonic()  # the workload's start, before the imports below

import argparse  # noqa: E402
import inspect  # noqa: E402
import itertools  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_common as C  # noqa: E402

PROG = "torch_train"


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog=PROG, description="PyTorch training workload for perfgate.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    C.add_common_args(p)
    p.add_argument("--fusion", choices=C.ONOFF, default="off")
    p.add_argument("--bucket-mb", type=C.positive_float, default=25.0, help="DDP bucket_cap_mb")
    p.add_argument("--world-size", type=C.positive_int, default=2)
    p.add_argument("--num-workers", type=C.nonneg_int, default=0)
    p.add_argument("--prefetch", type=C.positive_int, default=2,
                   help="DataLoader prefetch_factor (used only when --num-workers > 0)")
    p.add_argument("--pin-memory", choices=C.ONOFF, default="off",
                   help="DataLoader pin_memory (used only on npu/cuda: there is nothing to pin for on the CPU)")
    p.add_argument("--persistent-workers", choices=C.ONOFF, default="off",
                   help="DataLoader persistent_workers (used only when --num-workers > 0)")
    p.add_argument("--batch", type=C.positive_int, default=None,
                   help="samples per rank and step (default: cnn 16, transformer 8)")
    p.add_argument("--steps", type=C.positive_int, default=None,
                   help="steps to run (default 50, or unlimited when --seconds is given)")
    p.add_argument("--seconds", type=C.positive_float, default=None,
                   help="stop after this many seconds of training (from the first step)")
    p.add_argument("--epoch-steps", type=C.positive_int, default=25, help="steps per DataLoader epoch")
    p.add_argument("--data-work", type=C.nonneg_int, default=4,
                   help="extra CPU work per sample in the dataset (blur passes / hash rounds)")
    p.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd")
    p.add_argument("--lr", type=C.positive_float, default=None, help="default: sgd 0.05, adamw 0.001")
    p.add_argument("--start-method", choices=("auto", "spawn", "fork"), default="auto",
                   help="how ranks are started; auto: fork on the CPU (spawn re-imports torch in every rank, "
                        "2-4 s on 2 cores; the launcher runs no torch op before forking, so fork is safe), "
                        "spawn on npu/cuda (their runtimes do not survive fork)")
    p.add_argument("--dist-timeout", type=C.positive_float, default=300.0,
                   help="seconds a collective may wait for a peer before the rank fails")
    a = p.parse_args(argv)
    C.check_model_args(p, a)
    if a.batch is None:
        a.batch = 16 if a.model == "cnn" else 8
    if a.lr is None:
        a.lr = 0.05 if a.optimizer == "sgd" else 1e-3
    if a.steps is None and a.seconds is None:
        a.steps = 50
    return p, a


# --------------------------------------------------------------------------
# data

class SyntheticImages:
    """A map-style dataset (no torch needed): see torch_common.synthetic_image."""

    def __init__(self, seed, n, size, classes, work):
        self.seed, self.n, self.size, self.classes, self.work = seed, n, size, classes, work

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return C.synthetic_image(self.seed, i, self.size, self.classes, self.work)


class SyntheticTokens:
    def __init__(self, seed, n, seq_len, classes, work):
        self.seed, self.n, self.seq_len, self.classes, self.work = seed, n, seq_len, classes, work

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return C.synthetic_tokens(self.seed, i, self.seq_len, self.classes, self.work)


def worker_init(_worker_id):
    C.die_with_parent()
    C.default_signals_in_child()


def make_loader(a, rank, kind):
    import torch
    from torch.utils.data import DataLoader
    n = a.batch * a.epoch_steps
    seed = a.seed * 7919 + rank * 104729  # every rank reads its own samples
    if a.model == "cnn":
        ds = SyntheticImages(seed, n, a.image_size, a.classes, a.data_work)
    else:
        ds = SyntheticTokens(seed, n, a.seq_len, a.classes, a.data_work)
    g = torch.Generator()
    g.manual_seed(seed)
    kw = dict(batch_size=a.batch, shuffle=True, drop_last=True, generator=g, num_workers=a.num_workers)
    if a.num_workers > 0:
        kw.update(prefetch_factor=a.prefetch, persistent_workers=a.persistent_workers == "on",
                  worker_init_fn=worker_init)
        # Workers are forked, as DataLoader does by default on Linux: a spawned rank would
        # otherwise spawn them too (the start method is inherited) and every worker would
        # re-import torch at each epoch start. They touch no device, so fork is safe.
        import multiprocessing
        if "fork" in multiprocessing.get_all_start_methods():
            kw["multiprocessing_context"] = "fork"
    if a.pin_memory == "on" and kind != "cpu":  # pinning needs an accelerator to copy to
        kw["pin_memory"] = True
        if kind == "npu" and "pin_memory_device" in inspect.signature(DataLoader.__init__).parameters:
            kw["pin_memory_device"] = "npu"
    return DataLoader(ds, **kw)


def endless(loader):
    """Batches over as many epochs as it takes (each `for` is one epoch)."""
    while True:
        for b in loader:
            yield b


# --------------------------------------------------------------------------
# optimizer

def torch_version():
    import torch
    m = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def make_optimizer(a, params, kind):
    """Returns (optimizer, description)."""
    import torch
    if a.fusion == "on" and kind == "npu":
        import torch_npu
        cls = torch_npu.optim.NpuFusedSGD if a.optimizer == "sgd" else torch_npu.optim.NpuFusedAdamW
        kw = dict(lr=a.lr, momentum=0.9) if a.optimizer == "sgd" else dict(lr=a.lr)
        return cls(params, **kw), cls.__name__
    cls = torch.optim.SGD if a.optimizer == "sgd" else torch.optim.AdamW
    kw = dict(lr=a.lr, momentum=0.9) if a.optimizer == "sgd" else dict(lr=a.lr)
    sig = inspect.signature(cls.__init__).parameters
    if a.fusion == "on":
        fused_ok = "fused" in sig and (kind == "cuda" or (kind == "cpu" and torch_version() >= (2, 4)))
        if fused_ok:
            kw["fused"] = True
        elif "foreach" in sig:
            kw["foreach"] = True
    elif "foreach" in sig:
        kw["foreach"] = False
    desc = f"{cls.__name__}({', '.join(f'{k}={v}' for k, v in kw.items())})"
    return cls(params, **kw), desc


# --------------------------------------------------------------------------
# graph mode

def lazy_trace_module():
    import torch
    import torch.nn as nn

    class LazyTrace(nn.Module):
        """Traces the wrapped model with TorchScript on its first forward call (inside
        the first step, so that step pays the compile) and runs the trace afterwards.
        The trace shares the model's parameters and buffers, so DDP and the optimizer
        see the same tensors."""

        def __init__(self, model):
            super().__init__()
            self.model = model
            object.__setattr__(self, "_traced", None)
            object.__setattr__(self, "trace_s", 0.0)

        def forward(self, x):
            if self._traced is None:
                t = time.perf_counter()
                traced = torch.jit.trace(self.model, x, check_trace=False)
                object.__setattr__(self, "_traced", traced)
                object.__setattr__(self, "trace_s", time.perf_counter() - t)
            return self._traced(x)

    return LazyTrace


# --------------------------------------------------------------------------
# one rank

def run_rank(rank, a, kind, port):
    """Trains on one rank; rank 0 writes the metrics. Returns normally or raises."""
    in_process = a.world_size == 1
    if not in_process:
        C.die_with_parent()
        C.default_signals_in_child()
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    dev = C.Device(kind, rank if kind != "cpu" else 0)
    threads = C.set_threads(a.threads, a.world_size if kind == "cpu" else 1)
    torch.manual_seed(a.seed)
    out = C.MetricWriter(enabled=rank == 0)

    backend_name = "eager"
    if a.graph_mode == "graph":
        backend_name = C.graph_backend(kind)
    if kind == "npu":
        C.set_npu_compile_mode(a.graph_mode == "graph")
    cpu_fuser = False
    if backend_name == "torchscript":
        cpu_fuser = C.configure_torchscript(a.fusion)

    if not in_process:
        from datetime import timedelta
        dist.init_process_group(dev.backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=a.world_size, timeout=timedelta(seconds=a.dist_timeout))

    model = C.build_model(a).to(dev.device)
    n_params = sum(p.numel() for p in model.parameters())
    opt, opt_desc = make_optimizer(a, model.parameters(), kind)
    scaler = dev.grad_scaler(a.precision)

    net = model
    lazy = None
    if backend_name == "torchscript":
        lazy = lazy_trace_module()(model)
        net = lazy
    if not in_process:
        from torch.nn.parallel import DistributedDataParallel as DDP
        ids = None if kind == "cpu" else [dev.index]
        net = DDP(net, device_ids=ids, bucket_cap_mb=a.bucket_mb)
    compiler = None
    if backend_name in ("torchair", "inductor"):
        compiler = C.torch_compile_backend(kind)
        net = torch.compile(net, backend=compiler)

    loader = make_loader(a, rank, kind)
    batches = endless(loader)
    non_blocking = a.pin_memory == "on" and kind != "cpu"

    if rank == 0:
        dist_desc = "no DDP" if in_process else f"DDP over {dev.backend}, {a.start_method}ed ranks"
        print(f"{PROG}: {a.model} on {dev.describe()} x{a.world_size} ({dist_desc}), "
              f"graph={a.graph_mode} ({backend_name}), fusion={a.fusion} (optimizer {opt_desc}, cpu fuser "
              f"{'on' if cpu_fuser else 'off'}), precision={a.precision}, batch {a.batch}/rank, "
              f"{n_params / 1e6:.2f}M params, threads {threads}/rank "
              f"(OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}), workers {a.num_workers}",
              file=sys.stderr, flush=True)
        ms = "ms"
        out.meta(units={"step_time_ms": ms, "throughput": "samples/s", "data_wait_ms": ms, "forward_ms": ms,
                        "backward_ms": ms, "optimizer_ms": ms, "host_rss_mb": "MB", "device_mem_mb": "MB",
                        "device_mem_peak_mb": "MB", "first_step_ms": ms, "trace_ms": ms, "setup_s": "s",
                        "compile_ms": ms},
                 better={"throughput": "higher", "step_time_ms": "lower", "data_wait_ms": "lower",
                         "forward_ms": "lower", "backward_ms": "lower", "optimizer_ms": "lower",
                         "host_rss_mb": "lower", "device_mem_mb": "lower", "device_mem_peak_mb": "lower",
                         "loss": "none", "first_step_ms": "lower", "trace_ms": "lower", "setup_s": "lower",
                         "compile_ms": "lower", "final_loss": "none", "world_size": "none", "steps": "none",
                         "params_m": "none", "grad_mb": "none", "batch": "none", "threads": "none",
                         "ddp_buckets": "none", "samples": "none"},
                 facts=("world_size", "steps", "params_m", "grad_mb", "batch", "threads", "ddp_buckets", "samples"))

    stop_flag = torch.zeros(1, dtype=torch.int32, device=dev.device) if (a.seconds and not in_process) else None
    first_step_ms = None
    loss_val = float("nan")
    t_loop = None
    t_loop_mono = time.monotonic()
    steps = 0
    sync = dev.synchronize
    for step in itertools.count():
        if a.steps is not None and step >= a.steps:
            break
        t0 = time.perf_counter()
        if t_loop is None:
            t_loop, t_loop_mono = t0, time.monotonic()
        x, y = next(batches)
        x = x.to(dev.device, non_blocking=non_blocking)
        y = y.to(dev.device, non_blocking=non_blocking)
        sync()
        t1 = time.perf_counter()
        with dev.autocast(a.precision):
            logits = net(x)
            loss = F.cross_entropy(logits.float(), y)
        sync()
        t2 = time.perf_counter()
        if scaler is not None:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        sync()
        t3 = time.perf_counter()
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        t4 = time.perf_counter()
        loss_val = float(loss.detach().float().item())
        steps += 1
        dt = t4 - t0
        if first_step_ms is None:
            first_step_ms = dt * 1e3
        if rank == 0:
            rec = dict(step=step, step_time_ms=dt * 1e3, throughput=a.batch * a.world_size / dt,
                       data_wait_ms=(t1 - t0) * 1e3, forward_ms=(t2 - t1) * 1e3, backward_ms=(t3 - t2) * 1e3,
                       optimizer_ms=(t4 - t3) * 1e3, loss=loss_val, host_rss_mb=C.host_rss_mb())
            mem = dev.memory()
            if mem:
                rec["device_mem_mb"] = mem["device_mem_mb"]
            rec["t_s"] = time.monotonic() - T0
            out.step(**rec)
        if a.seconds is not None:
            done = time.perf_counter() - t_loop >= a.seconds
            if stop_flag is not None:
                stop_flag.fill_(1 if (rank == 0 and done) else 0)
                dist.all_reduce(stop_flag, op=dist.ReduceOp.MAX)
                done = bool(stop_flag.item())
            if done:
                break

    if rank == 0:
        summary = dict(first_step_ms=first_step_ms, world_size=a.world_size, steps=steps, final_loss=loss_val,
                       batch=a.batch, samples=steps * a.batch * a.world_size, params_m=n_params / 1e6,
                       grad_mb=n_params * 4 / C.MB, threads=threads, setup_s=t_loop_mono - T0)
        if lazy is not None:
            summary["trace_ms"] = lazy.trace_s * 1e3
        if compiler is not None:
            summary["compile_ms"] = compiler.seconds * 1e3
        if not in_process:
            try:
                info = net._get_ddp_logging_data() if hasattr(net, "_get_ddp_logging_data") else {}
                # After the first iteration DDP rebuilds its buckets in gradient order (bucket_cap_mb).
                sizes = info.get("rebuilt_bucket_sizes") or info.get("bucket_sizes")
                if sizes:
                    summary["ddp_buckets"] = len(str(sizes).split(","))
            except Exception:
                pass
        mem = dev.memory()
        if mem:
            summary["device_mem_peak_mb"] = mem["device_mem_peak_mb"]
        out.summary(**summary)
        out.close()
    del batches, loader
    if not in_process:
        dist.destroy_process_group()


def _rank_entry(rank, a, kind, port):
    run_rank(rank, a, kind, port)


def main(argv=None):
    parser, a = parse_args(argv)
    C.prepare_environment()
    kind = C.select_device_or_exit(parser, a, PROG)
    if a.start_method == "fork" and kind != "cpu":
        parser.error(f"--start-method fork cannot be used with --device {kind} (use spawn)")
    if a.start_method == "auto":
        a.start_method = "fork" if kind == "cpu" else "spawn"
    if a.world_size > 1 and kind != "cpu":
        import torch
        n = getattr(torch, kind).device_count()
        if n < a.world_size:
            print(f"{PROG}: --world-size {a.world_size} needs {a.world_size} {kind} devices, this host has {n}",
                  file=sys.stderr, flush=True)
            return C.EXIT_FAILED
    if kind == "cpu":
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    C.install_termination_handlers(PROG)

    if a.world_size == 1:
        run_rank(0, a, kind, None)
        return 0

    import torch.multiprocessing as mp
    port = C.free_port()
    ctx = mp.start_processes(_rank_entry, args=(a, kind, port), nprocs=a.world_size, join=False,
                             start_method=a.start_method)
    try:
        while not ctx.join(timeout=0.5):
            pass
    except mp.ProcessRaisedException as e:
        print(f"{PROG}: rank {e.error_index} failed:\n{e}", file=sys.stderr, flush=True)
        C.terminate_tree(exclude=C.resource_tracker_pids())
        return C.EXIT_FAILED
    except mp.ProcessExitedException as e:
        print(f"{PROG}: rank {e.error_index} failed: {e}", file=sys.stderr, flush=True)
        C.terminate_tree(exclude=C.resource_tracker_pids())
        return C.EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
