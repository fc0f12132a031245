"""One place that picks the accelerator, so `PROFILE=paper` on a GPU box needs no code change."""

from __future__ import annotations

import os


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
