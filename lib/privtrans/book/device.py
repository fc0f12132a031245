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
