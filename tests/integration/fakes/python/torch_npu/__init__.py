"""A stand-in for torch_npu, to drive the workloads' device checks on a machine without NPUs.

Put tests/integration/fakes/python on PYTHONPATH and choose with FAKE_TORCH_NPU:
  unusable (default)  the package imports and registers torch.npu, but no device
                      is usable: a node whose driver is missing or whose cards
                      are taken;
  broken              the import fails the way a broken CANN installation does
                      (a shared library of the toolkit cannot be loaded).
Debian's torch 1.13 cannot register an "npu" device type, so nothing past these
checks (hccl, compile modes, fused optimizers, device memory) can run here.
"""
import os
import types

import torch

if os.environ.get("FAKE_TORCH_NPU", "unusable") == "broken":
    raise OSError("libascendcl.so: cannot open shared object file: No such file or directory")


def _is_available():
    return False


def _device_count():
    return 0


npu = types.SimpleNamespace(is_available=_is_available, device_count=_device_count)
torch.npu = npu
