"""One place that picks the accelerator, so `PROFILE=paper` on a GPU box needs no code change."""

from __future__ import annotations

import os
from contextlib import contextmanager


def pick_device():
    """cuda when present (unless PRIVTRANS_DEVICE says otherwise), else cpu."""
    import torch

    want = os.environ.get("PRIVTRANS_DEVICE")
    if want:
        return torch.device(want)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resolve(device=None):
    """``device`` as a torch.device when given, else ``pick_device()``: the ``device=None`` default of
    every training function."""
    import torch

    return torch.device(device) if device is not None else pick_device()


@contextmanager
def placed(model, device=None):
    """``model`` moved to ``device`` (default ``pick_device()``) for the block and back where it was
    after it, for evaluations of a model that is kept on the CPU; yields the device."""
    dev = resolve(device)
    home = next(model.parameters()).device
    model.to(dev)
    try:
        yield dev
    finally:
        model.to(home)


CUBLAS_WORKSPACE = ":4096:8"  # one of the two settings NVIDIA documents for reproducible cuBLAS


def deterministic(device=None) -> bool:
    """On a GPU, ask torch for deterministic kernels, so that a cold re-run (``make verify``) records
    what the cached build recorded: cuBLAS with a fixed workspace (``CUBLAS_WORKSPACE_CONFIG``, read
    at cuBLAS's first call, so set before any), cuDNN without autotuning, and
    ``torch.use_deterministic_algorithms`` with ``warn_only`` (an op with no deterministic kernel warns
    rather than stopping a `paper` run hours in). Nothing on a CPU, whose kernels give the same
    values at a fixed thread count. Returns whether it switched anything."""
    import torch

    if resolve(device).type != "cuda":
        return False
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True, warn_only=True)
    return True
