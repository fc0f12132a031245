"""Table 8: what a tangent model costs per example, to train and to predict, against the plain one.

Both models tune the last ``tuned`` blocks, the final norm and the head (TAFT-1 against NLFT-1).
Two ways to feed them: from images (the frozen embedding and blocks run every time, as in the
paper's batch-1 timing) and from cached features of the frozen part (what the paper says would be
faster in practice, and what this chapter's notebooks do). The tangent starts at the first tuned
block in both: the frozen blocks carry no tangent (their Δ would be zero). A train step is
forward, backward and an Adam step with a mean cross-entropy; inference is a forward pass without
gradients. Time per example = the median over ``repeats`` timed calls (after warm-up calls) of
``time.perf_counter`` divided by the batch; call it with one torch thread.

A timing decides a claim only on repeated rounds: :func:`table` times every (batch, feed, phase)
``rounds`` times, NLFT and TAFT back to back in each round, the order alternating between rounds, so
that a load on the shared machine hits both and the per-round ratios carry its noise into the
interval (:func:`privtrans.taft.readouts.timing.cost`).
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from privtrans.book import dry

from .finetune import PlainTail, TangentTail, features, select, task_vit
from .vit import ViT

METHODS = ("NLFT", "TAFT")
FEEDS = ("images", "cached")


def tails(vit: ViT, classes: int, tuned: int = 1) -> dict[str, nn.Module]:
    """NLFT and TAFT on the same pretrained blocks and new head, every tuned weight trainable."""
    base = task_vit(vit, classes, tuned=tuned, pt=True, init_seed=0)
    out = {"NLFT": PlainTail(base, tuned), "TAFT": TangentTail(base, tuned)}
    for m in out.values():
        select(m, "full")
    return out


def _median_seconds(fn, repeats: int, warmup: int = 2) -> float:
    for _ in dry.loop(range(warmup), "timing warm-up calls"):
        fn()
    times = []
    for _ in dry.loop(range(repeats), "timing repeats"):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def per_example(vit: ViT, tail: nn.Module, images: torch.Tensor, y: torch.Tensor, *, feed: str, train: bool,
                repeats: int = 20) -> float:
    """Seconds per example of one train step or one prediction on the batch ``images``."""
    if feed not in FEEDS:
        raise ValueError(f"feed must be one of {FEEDS}, got {feed!r}")
    cut = len(vit.blocks) - len(tail.blocks) if isinstance(tail, PlainTail) else tail.cut
    cached = features(vit, images, cut)
    inputs = (lambda: features(vit, images, cut)) if feed == "images" else (lambda: cached)
    if train:
        opt = torch.optim.Adam([p for p in tail.parameters() if p.requires_grad], lr=1e-4)

        def step():
            tail.train()
            loss = F.cross_entropy(tail(inputs()), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    else:
        def step():
            tail.eval()
            with torch.no_grad():
                tail(inputs())
    return _median_seconds(step, repeats) / len(y)


def table(vit: ViT, images: torch.Tensor, y: torch.Tensor, classes: int, batches=(1, 32), repeats: int = 20,
          tuned: int = 1, rounds: int = 1) -> list[dict]:
    """One row per (round, batch, feed, phase, method): seconds per example, the two methods timed
    back to back in each round (NLFT first in even rounds, TAFT first in odd ones)."""
    if rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds!r}")
    for b in batches:
        if b > len(y):
            raise ValueError(f"batch {b} is larger than the {len(y)} images given")
    models = tails(vit, classes, tuned)
    rows = []
    for r in dry.loop(range(rounds), "timing rounds"):
        for b in batches:
            for feed in FEEDS:
                for phase in ("train", "inference"):
                    for m in (METHODS if r % 2 == 0 else METHODS[::-1]):
                        s = per_example(vit, models[m], images[:b], y[:b], feed=feed, train=phase == "train",
                                        repeats=repeats)
                        rows.append({"round": r, "batch": b, "feed": feed, "phase": phase, "method": m,
                                     "seconds": s})
    return rows
