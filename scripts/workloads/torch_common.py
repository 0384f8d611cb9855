"""Shared helpers of perfgate's PyTorch workloads (torch_train.py, torch_infer.py).

What lives here:
  - the knob vocabulary (argparse choices and types), so both scripts reject
    the same bad values the same way (argparse: exit code 2, valid choices listed);
  - device selection: --device auto|cpu|npu|cuda, with the Ascend (torch_npu),
    CUDA and CPU mappings of synchronisation, autocast, loss scaling and
    device memory;
  - the metric emitter (perfgate's metric protocol, docs/metric-protocol.md):
    JSON lines appended to $PERFGATE_METRICS, or "PERFGATE <json>" lines on
    stdout when the variable is unset;
  - process hygiene: children die with their parent (PR_SET_PDEATHSIG),
    SIGTERM/SIGINT end the whole tree of this workload promptly;
  - the two small models (a ResNet-style CNN and a transformer encoder) and
    their synthetic inputs.

torch is imported lazily (inside functions), so that a bad command line is
rejected by argparse without paying the ~1.5 s import.
"""

import argparse
import contextlib
import ctypes
import json
import math
import os
import signal
import socket
import sys
import time

DEVICES = ("auto", "cpu", "npu", "cuda")
MODELS = ("cnn", "transformer")
GRAPH_MODES = ("eager", "graph")
PRECISIONS = ("fp32", "bf16", "fp16")
ONOFF = ("off", "on")

MB = 1024.0 * 1024.0

# Exit codes: 1 = the environment cannot run this (missing device, a rank
# failed); 2 = bad command line (argparse's own code).
EXIT_FAILED, EXIT_USAGE = 1, 2


# --------------------------------------------------------------------------
# argparse types

def _int_at_least(lowest):
    def parse(s):
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid integer: {s!r}")
        if v < lowest:
            raise argparse.ArgumentTypeError(f"must be >= {lowest}, got {v}")
        return v
    return parse


positive_int = _int_at_least(1)
nonneg_int = _int_at_least(0)


def positive_float(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {s!r}")
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {s}")
    return v


def int_list(s):
    """'1,8,32' -> [1, 8, 32] (positive, no duplicates, order kept)."""
    out = []
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        v = positive_int(part)
        if v not in out:
            out.append(v)
    if not out:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of positive integers, got {s!r}")
    return out


def add_common_args(p):
    """Knobs both workloads share, by the names the rest of perfgate uses."""
    p.add_argument("--device", choices=DEVICES, default="auto",
                   help="auto: npu if torch_npu imports and sees a device, else cuda if available, else cpu")
    p.add_argument("--model", choices=MODELS, default="cnn")
    p.add_argument("--graph-mode", choices=GRAPH_MODES, default="eager")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    p.add_argument("--width", type=positive_int, default=None,
                   help="cnn: channels of the first stage (default 16); transformer: model dim (default 64)")
    p.add_argument("--depth", type=positive_int, default=None,
                   help="cnn: residual blocks per stage (default 1); transformer: encoder layers (default 2)")
    p.add_argument("--seq-len", type=positive_int, default=32, help="transformer: tokens per sequence")
    p.add_argument("--image-size", type=positive_int, default=32, help="cnn: input height and width")
    p.add_argument("--classes", type=positive_int, default=10)
    p.add_argument("--threads", type=nonneg_int, default=0,
                   help="intra-op CPU threads per process (0: the usable cores divided by the processes)")
    p.add_argument("--seed", type=int, default=0)


def prepare_environment():
    """Process-wide settings that must precede `import torch` (call first in main).

    OMP_WAIT_POLICY=PASSIVE unless the environment says otherwise: with GNU
    OpenMP's default spin-waiting, one busy core on a shared machine (a CI
    neighbour, a compiler) stalls every parallel region of a multi-threaded
    op; on 2 cores under such load that was 10-60x slower steps and requests.
    Passive waiting costs a little wake-up latency per parallel region and
    keeps the numbers stable. Put OMP_WAIT_POLICY=ACTIVE in the suite's env to
    measure torch's default. Ranks and DataLoader workers inherit it."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


# --------------------------------------------------------------------------
# devices

class DeviceUnavailable(Exception):
    """The requested device cannot be used here; the message says why (exit 1)."""


def _import_torch_npu():
    try:
        import torch_npu  # noqa: F401  (registers torch.npu)
        return torch_npu, None
    except Exception as e:  # ImportError, or a broken CANN install raising anything
        return None, e


def resolve_device(name):
    """'auto'|'cpu'|'npu'|'cuda' -> 'cpu'|'npu'|'cuda', or DeviceUnavailable."""
    import torch
    if name == "cpu":
        return "cpu"
    if name in ("auto", "npu"):
        mod, err = _import_torch_npu()
        if mod is not None:
            try:
                ok = torch.npu.is_available() and torch.npu.device_count() > 0
            except Exception as e:  # driver trouble
                ok, err = False, e
            if ok:
                return "npu"
            if name == "npu":
                raise DeviceUnavailable(f"torch_npu is installed but no NPU is usable: cannot use --device npu"
                                        f" ({err or 'torch.npu.is_available() is False'})")
        elif name == "npu":
            if isinstance(err, ModuleNotFoundError) and (err.name or "").split(".")[0] == "torch_npu":
                raise DeviceUnavailable(f"torch_npu is not installed: cannot use --device npu ({err})")
            raise DeviceUnavailable(f"torch_npu cannot be imported: cannot use --device npu "
                                    f"({type(err).__name__}: {err})")
    if name in ("auto", "cuda"):
        if torch.cuda.is_available():
            return "cuda"
        if name == "cuda":
            raise DeviceUnavailable(
                f"CUDA is not available: cannot use --device cuda (torch {torch.__version__}, "
                f"built for CUDA {torch.version.cuda}, torch.cuda.is_available() is False)")
    return "cpu"


class Device:
    """One device kind with the few operations the workloads need."""

    BACKENDS = {"cpu": "gloo", "npu": "hccl", "cuda": "nccl"}

    def __init__(self, kind, index=0):
        import torch
        self.torch = torch
        self.kind = kind
        self.index = index
        self.backend = self.BACKENDS[kind]
        if kind == "npu":
            import torch_npu  # noqa: F401
        self.mod = getattr(torch, kind) if kind != "cpu" else None
        if self.mod is not None:
            self.mod.set_device(index)
        self.device = torch.device("cpu") if kind == "cpu" else torch.device(kind, index)

    def device_count(self):
        return 1 if self.mod is None else self.mod.device_count()

    def synchronize(self):
        if self.mod is not None:
            self.mod.synchronize()

    def memory(self):
        """{'device_mem_mb': allocated, 'device_mem_peak_mb': max allocated} where the device reports it."""
        if self.mod is None:
            return {}
        try:
            return {"device_mem_mb": self.mod.memory_allocated(self.device) / MB,
                    "device_mem_peak_mb": self.mod.max_memory_allocated(self.device) / MB}
        except Exception:
            return {}

    def dtype(self, precision):
        t = self.torch
        return {"fp32": t.float32, "bf16": t.bfloat16, "fp16": t.float16}[precision]

    def autocast(self, precision):
        """Mixed precision context: nothing for fp32, torch.autocast(device) for bf16/fp16."""
        if precision == "fp32":
            return contextlib.nullcontext()
        dtype = self.dtype(precision)
        try:
            return self.torch.autocast(device_type=self.kind, dtype=dtype)
        except (RuntimeError, ValueError):
            if self.kind == "npu":  # older torch_npu: only the torch.npu.amp spelling
                return self.torch.npu.amp.autocast(dtype=dtype)
            raise

    def grad_scaler(self, precision):
        """A loss scaler for fp16 (bf16 has fp32's range and needs none)."""
        if precision != "fp16":
            return None
        if self.kind == "cuda":
            return self.torch.cuda.amp.GradScaler()
        if self.kind == "npu":
            import torch_npu
            return torch_npu.npu.amp.GradScaler()
        return None

    def describe(self):
        if self.mod is None:
            return f"cpu ({self.torch.get_num_threads()} threads)"
        try:
            return f"{self.kind}:{self.index} ({self.mod.get_device_name(self.index)})"
        except Exception:
            return f"{self.kind}:{self.index}"


def check_precision(parser, precision, kind):
    """Rejects a precision the device cannot run (argparse error: exit 2)."""
    import torch
    if precision == "fp16" and kind == "cpu":
        parser.error("--precision fp16 is not supported on --device cpu (CPU autocast runs bfloat16 only); "
                     "choose fp32 or bf16 on the CPU, fp16 on npu or cuda")
    if precision == "bf16" and kind == "cuda" and not torch.cuda.is_bf16_supported():
        parser.error("--precision bf16 is not supported by this CUDA device; choose fp32 or fp16")


def check_model_args(parser, args):
    """Model sizes that cannot be built are command-line errors (exit 2)."""
    if args.model == "transformer":
        width, _ = model_dims(args)
        heads = max(1, width // 32)
        if width % heads:
            parser.error(f"--width {width} is not divisible by the transformer's {heads} heads (width // 32); "
                         f"use a multiple of 32 or a width below 64")


def select_device_or_exit(parser, args, prog):
    """resolve_device + check_precision; prints the reason and exits 1 / 2."""
    try:
        kind = resolve_device(args.device)
    except DeviceUnavailable as e:
        print(f"{prog}: {e}", file=sys.stderr, flush=True)
        sys.exit(EXIT_FAILED)
    check_precision(parser, args.precision, kind)
    return kind


def usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def set_threads(requested, processes):
    import torch
    n = requested or max(1, usable_cpus() // max(1, processes))
    torch.set_num_threads(n)
    return n


def graph_backend(kind):
    """What --graph-mode graph means on this device:
      cpu:  TorchScript (torch.jit.trace)
      npu:  torch_npu.npu.set_compile_mode(jit_compile=True), plus torch.compile with torchair's
            NPU backend when torchair imports
      cuda: torch.compile (inductor) where torch has it, else TorchScript
    Returns one of 'torchscript', 'torchair', 'jit_compile', 'inductor'."""
    import torch
    if kind == "npu":
        try:
            import torchair  # noqa: F401
            return "torchair"
        except Exception:
            return "jit_compile"
    if kind == "cuda" and hasattr(torch, "compile"):
        return "inductor"
    return "torchscript"


def set_npu_compile_mode(graph):
    """torch_npu's eager/graph switch: jit_compile=True compiles operators online
    (static shapes); False runs prebuilt binary kernels (better for dynamic shapes)."""
    import torch_npu
    torch_npu.npu.set_compile_mode(jit_compile=bool(graph))


class CountingBackend:
    """A torch.compile backend that counts its compilations (each new graph or shape)."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0
        self.seconds = 0.0

    def __call__(self, gm, example_inputs):
        self.calls += 1
        t = time.perf_counter()
        out = self.inner(gm, example_inputs)
        self.seconds += time.perf_counter() - t
        return out


def torch_compile_backend(kind):
    """A CountingBackend for torch.compile on npu (torchair) or cuda (inductor)."""
    import torch
    try:
        torch._dynamo.config.cache_size_limit = max(64, torch._dynamo.config.cache_size_limit)
    except Exception:
        pass
    if kind == "npu":
        import torchair
        from torchair.configs.compiler_config import CompilerConfig
        cfg = CompilerConfig()
        return CountingBackend(torchair.get_npu_backend(compiler_config=cfg))
    from torch._inductor.compile_fx import compile_fx  # the "inductor" backend
    return CountingBackend(compile_fx)


def configure_torchscript(fusion):
    """TorchScript settings on the CPU.

    Tracing under autocast bakes the casts into the graph, so JIT's own autocast
    pass is switched off (with it, torch 1.13 fails in the backward of a traced
    BatchNorm under bf16). fusion=on allows the NNC (TensorExpr) fuser on the CPU
    when torch was built with LLVM; without LLVM, NNC would interpret its kernels
    (slower than not fusing), so then it stays off. Returns whether CPU fusion is on."""
    import torch
    torch._C._jit_set_autocast_mode(False)
    llvm = bool(getattr(torch._C, "_llvm_enabled", lambda: False)())
    on = fusion == "on" and llvm
    torch._C._jit_override_can_fuse_on_cpu(on)
    torch._C._jit_set_texpr_fuser_enabled(fusion == "on")
    return on


# --------------------------------------------------------------------------
# metrics

class MetricWriter:
    """The metric protocol: one JSON object per line.

    To $PERFGATE_METRICS (appended, one write per line) or, when that is unset,
    to stdout as 'PERFGATE <json>'. NaN/Infinity are written as Python's json
    does; perfgate records them."""

    def __init__(self, enabled=True):
        self.enabled = enabled
        self.path = os.environ.get("PERFGATE_METRICS") or None
        self.f = None
        if enabled and self.path:
            self.f = open(self.path, "a", buffering=1, encoding="utf-8")

    def write(self, obj):
        if not self.enabled:
            return
        line = json.dumps(obj, separators=(",", ":"))
        if self.f is not None:
            self.f.write(line + "\n")
            self.f.flush()
        else:
            sys.stdout.write("PERFGATE " + line + "\n")
            sys.stdout.flush()

    def meta(self, units, better, facts=()):
        # Facts are settings the workload reports (world size, batch): perfgate keeps them apart from measurements.
        meta = {"units": units, "better": better}
        if facts:
            meta["kind"] = {name: "fact" for name in facts}
        self.write({"meta": meta})

    def step(self, **fields):
        self.write({k: v for k, v in fields.items() if v is not None})

    def summary(self, **fields):
        # The protocol's summary holds numbers only: drop what is unknown.
        clean = {}
        for k, v in fields.items():
            if isinstance(v, bool):
                v = int(v)
            if isinstance(v, (int, float)):
                clean[k] = v
        self.write({"summary": clean})

    def close(self):
        if self.f is not None:
            self.f.close()
            self.f = None


def host_rss_mb():
    """Resident set size of this process (VmRSS of /proc/self/status), in MB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return None


def percentile(sorted_values, q):
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    if not sorted_values:
        return float("nan")
    if len(sorted_values) == 1:
        return float(sorted_values[0])
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_values) - 1)
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo))


# --------------------------------------------------------------------------
# processes

PR_SET_PDEATHSIG = 1


def die_with_parent(sig=signal.SIGKILL):
    """Linux: this process gets `sig` when its parent dies, so a killed launcher
    (perfgate's SIGKILL after kill_grace, an OOM kill) leaves no orphan behind."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        parent = os.getppid()
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(EXIT_FAILED)
    except (OSError, AttributeError):
        pass


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(root=None):
    """Pids of every live descendant of `root` (default: this process), from /proc."""
    root = root or os.getpid()
    children = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for d in entries:
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read()
            # pid (comm) state ppid ...: comm may hold spaces and parentheses.
            fields = stat[stat.rindex(b")") + 2:].split()
            if fields[0] == b"Z":
                continue
            children.setdefault(int(fields[1]), []).append(int(d))
        except (OSError, ValueError, IndexError):
            continue
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def resource_tracker_pids():
    """multiprocessing's resource tracker, a child of this process when ranks were
    spawned: it must outlive us to unlink semaphores, and exits on its own when
    we do (end of file on its pipe)."""
    try:
        from multiprocessing import resource_tracker
        pid = getattr(resource_tracker._resource_tracker, "_pid", None)
        return {pid} if pid else set()
    except Exception:
        return set()


def terminate_tree(grace_s=3.0, exclude=()):
    """SIGTERM every descendant (but `exclude`), then SIGKILL what is still there after grace_s."""
    exclude = set(exclude)

    def live():
        return [p for p in descendants() if p not in exclude]

    pids = live()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:  # reap our own children so they stop counting
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        if not live():
            return
        time.sleep(0.02)
    for pid in live():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def install_termination_handlers(prog):
    """SIGTERM / SIGINT: end the workload's process tree and die of the same signal
    (so the launcher sees 'killed by signal 15', not a clean exit)."""

    def handler(signum, _frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            print(f"{prog}: {signal.Signals(signum).name}: stopping", file=sys.stderr, flush=True)
        except Exception:
            pass
        terminate_tree(exclude=resource_tracker_pids())
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def default_signals_in_child():
    """Ranks and loader workers die at once on SIGTERM (a rank blocked in a collective
    never returns to Python to run a handler)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# --------------------------------------------------------------------------
# models

_MODELS = {}


def _model_classes():
    if _MODELS:
        return _MODELS
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class ResBlock(nn.Module):
        """conv3x3-BN-ReLU-conv3x3-BN plus a (projected, when the shape changes) shortcut."""

        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.short = None
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            s = x if self.short is None else self.short(x)
            return F.relu(y + s)

    class SmallResNet(nn.Module):
        """Stem, three stages (width, 2*width, 4*width channels; stride 2 between them),
        an adaptive 4x4 pool (any input size works) and an MLP classifier head
        (4*width*16 -> head -> head -> head -> classes). The head holds most of the
        parameters (with the defaults 4.4 MB of fp32 gradients in tensors of 1-2 MB),
        so DDP's bucket_cap_mb changes the number of all-reduce buckets (1 MB: 4,
        25 MB: 2, DDP's first bucket being 1 MB), while the convolutions are most
        of the compute."""

        def __init__(self, width=16, depth=1, classes=10, head=512):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width),
                                      nn.ReLU(inplace=True))
            blocks, cin = [], width
            for i, c in enumerate((width, 2 * width, 4 * width)):
                for j in range(depth):
                    blocks.append(ResBlock(cin, c, 2 if (i > 0 and j == 0) else 1))
                    cin = c
            self.blocks = nn.Sequential(*blocks)
            self.pool = nn.AdaptiveAvgPool2d(4)
            self.fc1 = nn.Linear(cin * 16, head)
            self.fc2 = nn.Linear(head, head)
            self.fc3 = nn.Linear(head, head)
            self.out = nn.Linear(head, classes)

        def forward(self, x):
            x = torch.flatten(self.pool(self.blocks(self.stem(x))), 1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            x = F.relu(self.fc3(x))
            return self.out(x)

    class EncoderBlock(nn.Module):
        """Pre-norm transformer encoder block: multi-head self-attention and a GELU MLP."""

        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.ln1 = nn.LayerNorm(dim)
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.ln2 = nn.LayerNorm(dim)
            self.fc1 = nn.Linear(dim, 4 * dim)
            self.fc2 = nn.Linear(4 * dim, dim)

        def forward(self, x):
            b, t, d = x.shape
            h = self.heads
            q, k, v = self.qkv(self.ln1(x)).reshape(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4).unbind(0)
            att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h)), dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, d)
            # type_as: under autocast the branches are bf16/fp16 and the residual stream fp32;
            # TorchScript's autodiff in torch 1.13 does not cast the gradient of a mixed-dtype
            # add back to the branch's dtype (eager autograd does), so cast explicitly.
            x = x + self.proj(y).type_as(x)
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)))).type_as(x)

    class SmallTransformer(nn.Module):
        """Token embedding + learned positions, `depth` encoder blocks, mean pooling, a classifier."""

        def __init__(self, dim=128, depth=2, classes=10, vocab=1000, max_len=1024):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.pos = nn.Parameter(torch.randn(1, max_len, dim) * 0.02)
            self.blocks = nn.Sequential(*[EncoderBlock(dim, max(1, dim // 32)) for _ in range(depth)])
            self.ln = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, classes)

        def forward(self, tokens):
            x = self.embed(tokens) + self.pos[:, :tokens.shape[1]]
            x = self.ln(self.blocks(x))
            return self.head(x.mean(dim=1))

    _MODELS.update(cnn=SmallResNet, transformer=SmallTransformer)
    return _MODELS


VOCAB = 1000


def model_dims(args):
    """(width, depth) with the per-model defaults."""
    if args.model == "cnn":
        return args.width or 16, args.depth or 1
    return args.width or 64, args.depth or 2


def build_model(args):
    classes = _model_classes()
    width, depth = model_dims(args)
    if args.model == "cnn":
        return classes["cnn"](width=width, depth=depth, classes=args.classes)
    return classes["transformer"](dim=width, depth=depth, classes=args.classes, vocab=VOCAB,
                                  max_len=max(1024, 2 * args.seq_len))


# --------------------------------------------------------------------------
# synthetic data (numpy; the DataLoader collates arrays into tensors)

def synthetic_image(seed, index, size, classes, work):
    """A labelled 3 x size x size image that costs real CPU time to make, like a
    decode + augment pipeline: an oriented grating (orientation and frequency
    give the class) with colour and noise at twice the resolution, `work` passes
    of a 5-point blur, a 2x2 downsample, a random horizontal flip, and per-channel
    normalisation. The class is learnable, so the loss falls."""
    import numpy as np
    rng = np.random.default_rng([seed & 0xFFFFFFFF, index])
    label = int(rng.integers(classes))
    s2 = 2 * size
    yy, xx = np.mgrid[0:s2, 0:s2].astype(np.float32) / s2
    theta = math.pi * label / classes
    freq = 3.0 + (label % 3) * 1.5
    g = np.sin(2 * math.pi * freq * (xx * math.cos(theta) + yy * math.sin(theta)) + rng.uniform(0, 2 * math.pi))
    color = rng.uniform(0.5, 1.5, size=(3, 1, 1)).astype(np.float32)
    img = g[None].astype(np.float32) * color + rng.standard_normal((3, s2, s2), dtype=np.float32) * 0.8
    for _ in range(work):
        img = (img + np.roll(img, 1, 1) + np.roll(img, -1, 1) + np.roll(img, 1, 2) + np.roll(img, -1, 2)) * 0.2
    img = img.reshape(3, size, 2, size, 2).mean(axis=(2, 4))
    if rng.random() < 0.5:
        img = img[:, :, ::-1]
    mean = img.mean(axis=(1, 2), keepdims=True)
    std = img.std(axis=(1, 2), keepdims=True) + 1e-5
    return np.ascontiguousarray((img - mean) / std, dtype=np.float32), label


def synthetic_tokens(seed, index, seq_len, classes, work):
    """A labelled token sequence that costs real CPU time to make, like a
    tokeniser: random 'words' hashed into the vocabulary over `work + 1` rounds,
    with a third of the tokens drawn from the class's slice of the vocabulary
    (so the class is learnable)."""
    import numpy as np
    rng = np.random.default_rng([seed & 0xFFFFFFFF, index])
    label = int(rng.integers(classes))
    words = rng.integers(0, 2 ** 31 - 1, size=(seq_len, 8), dtype=np.int64)
    h = np.zeros(seq_len, dtype=np.int64)
    for r in range(work + 1):
        for c in range(words.shape[1]):  # FNV-style rolling hash of each word's "characters"
            h = ((h ^ (words[:, c] + r)) * 16777619) & 0xFFFFFFFF
    tokens = (h % VOCAB).astype(np.int64)
    band = VOCAB // classes
    mask = rng.random(seq_len) < 0.33
    tokens[mask] = label * band + rng.integers(0, band, size=int(mask.sum()))
    return tokens, label


def input_shape(args, batch, size=None):
    """Shape of one model input batch (size: image side or sequence length)."""
    if args.model == "cnn":
        s = size or args.image_size
        return (batch, 3, s, s)
    return (batch, size or args.seq_len)


def random_input(args, batch, device, size=None, generator=None):
    """A random input batch for inference (no data pipeline cost)."""
    import torch
    shape = input_shape(args, batch, size)
    if args.model == "cnn":
        return torch.randn(shape, generator=generator).to(device)
    return torch.randint(0, VOCAB, shape, generator=generator).to(device)


def dynamic_sizes(args):
    """The few input sizes --dynamic-shapes on picks from: 0.75x, 1x, 1.25x, 1.5x the
    base image side (rounded to a multiple of 8) or sequence length."""
    base = args.image_size if args.model == "cnn" else args.seq_len
    out = []
    for f in (1.0, 0.75, 1.25, 1.5):
        s = max(8, int(round(base * f / 8.0)) * 8) if base >= 8 else max(1, int(round(base * f)))
        if s not in out:
            out.append(s)
    return out
