"""How fast this machine ran a fixed reference workload, written beside the notebooks' seconds.

The same unchanged notebooks took 1.5 times as long in one cold build as in another on the "same"
2-core machine on consecutive days: shared hosts differ from day to day, so a build's minutes
alone cannot say whether the book got slower. ``reference_seconds`` times a fixed single-thread
workload of the book's kind (small float32 matrix products and element-wise ops in torch, and a
pure-Python loop); the summary records it, and two builds' minutes compare after dividing by it.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from ..runcache import read_json

REPEATS = 3


def _workload() -> None:
    import torch

    g = torch.Generator().manual_seed(0)
    x = torch.randn(128, 128, generator=g)
    for _ in range(300):
        x = torch.tanh(x @ x * 0.01 + 0.5)
    total = 0
    for i in range(300_000):
        total += i % 7
    if total < 0:  # keep the loop from being optimised away by any future interpreter
        raise AssertionError


def reference_seconds(repeats: int = REPEATS) -> float:
    """Median wall seconds of the reference workload on one torch thread (about 0.1-0.3 s)."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _workload()  # warm-up: imports, allocator
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            _workload()
            times.append(time.perf_counter() - t0)
    finally:
        torch.set_num_threads(old)
    return round(statistics.median(times), 4)


def for_build(root: Path, executed: int) -> float | None:
    """The reference time to record beside a build's notebook seconds: measured now when this
    invocation ran ``executed`` > 0 notebooks; when it ran none (every notebook cached), the last
    summary's, whose seconds are the ones still recorded. Measuring costs about 4 s (torch's import
    and the workload), which a re-build that runs nothing (``make book`` again, most of the book's
    tests) would spend on a number that describes no notebook it ran."""
    if executed:
        return reference_seconds()
    old = ((read_json(root / "_build" / "summary.json") or {}).get("machine") or {}).get("reference_s")
    return old if isinstance(old, (int, float)) else reference_seconds()
