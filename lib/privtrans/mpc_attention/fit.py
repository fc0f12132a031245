"""Fitting the public denominator f(n) = a * n**b from a trained model (paper Sec. 4.1, Fig. 5-7).

The paper runs the fine-tuned model on task inputs, takes every attention row's denominator
(softmax: sum e^{x-max}; 2Quad: sum (x+5)^2 with 2Quad swapped in, no retraining), averages it per
sequence length n over all layers, and fits a power law. It does not say how it fits; we fit
log(mean D) = log a + b log n by least squares (numpy.polyfit), weighting each length by its
number of rows, so the constants are reproducible without an optimiser's starting point.
Per layer and per head fits are the extension the paper names as future work (Sec. 6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from privtrans.book import dry
from privtrans.book.device import placed

from . import attention


@dataclass
class Denominators:
    """One row per attention row: its key count n, layer, head and denominator."""

    n: np.ndarray
    layer: np.ndarray
    head: np.ndarray
    value: np.ndarray

    def mean_by_n(self, select=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lengths, mean denominator, rows) over the selected rows (Fig. 5's scatter)."""
        if select is None:
            return _means_by_n(self.n, self.value)
        return _means_by_n(self.n[select], self.value[select])

    def groups(self, key: np.ndarray):
        """(group, Denominators of its rows) for each value of ``key`` (one per row), in one sort:
        selecting each group with a mask over every row cost L·H passes over millions of rows (25 s of
        a teacher's record at paper shapes on an H100, from one batch)."""
        order = np.argsort(key, kind="stable")
        values, starts = np.unique(key[order], return_index=True)
        for g, lo, hi in zip(values, starts, [*starts[1:], len(order)]):
            rows = order[lo:hi]
            yield g, Denominators(self.n[rows], self.layer[rows], self.head[rows], self.value[rows])


def _means_by_n(n: np.ndarray, value: np.ndarray):
    """(lengths, mean value per length, rows per length), one pass (``np.bincount``)."""
    ns, inv, counts = np.unique(n, return_inverse=True, return_counts=True)
    return ns, np.bincount(inv.ravel(), weights=value) / counts, counts


@torch.no_grad()
def collect(model, batches, kind: str) -> Denominators:
    """Denominators of ``kind`` ('softmax' or '2quad') of every unmasked query row of ``model``.

    For '2quad' the model's attention is swapped to 2Quad first (same weights), as in the paper.
    ``batches`` yields (ids, mask01[, types]). Runs on the picked device (cuda when present).
    """
    if kind not in ("softmax", "2quad"):
        raise ValueError(f"kind must be 'softmax' or '2quad', got {kind!r}")
    probe = model if model.cfg.attention == kind else model.converted(kind, model.cfg.activation)
    probe.eval()
    ns, layers, heads, vals = [], [], [], []
    with placed(probe) as dev:
        for batch in dry.loop(batches, "fit batches"):
            ids, mask = batch[0].to(dev), batch[1].float().to(dev)
            types = batch[2].to(dev) if len(batch) > 2 else None
            out = probe(ids, mask, types)
            n_keys = mask.sum(-1)                                  # (B,)
            for li, s in enumerate(out["scores"]):
                d = attention.denominator(kind, s, mask[:, None, None, :])  # (B, H, T)
                B, H, T = d.shape
                rows = mask[:, None, :].expand(B, H, T).bool()
                ns.append(n_keys[:, None, None].expand(B, H, T)[rows].cpu())
                layers.append(torch.full((int(rows.sum()),), li))
                heads.append(torch.arange(H, device=dev)[None, :, None].expand(B, H, T)[rows].cpu())
                vals.append(d[rows].cpu())
    cat = lambda xs: torch.cat(xs).numpy()  # noqa: E731
    return Denominators(cat(ns).astype(int), cat(layers), cat(heads), cat(vals).astype(float))


@torch.no_grad()
def relu_eps_change(model, batches) -> dict:
    """How far 2ReLU's stabiliser (``RELU_ATTENTION_EPS`` n added to the row sum) moves the weights
    from the exact relu(x)/sum relu(x), on ``model``'s scores QK^T/sqrt(d) of every layer and head
    for the unmasked query rows of ``batches`` ((ids, mask01[, types])): ``attention.relu_eps_change``."""
    model.eval()
    parts = []
    with placed(model) as dev:
        for batch in dry.loop(batches, "relu_eps batches"):
            ids, mask = batch[0].to(dev), batch[1].float().to(dev)
            types = batch[2].to(dev) if len(batch) > 2 else None
            out = model(ids, mask, types)
            queries = mask[:, None, :, None]  # (B, 1, T, 1): padded query rows are left out
            for s in out["scores"]:
                e = attention.relu_eps_entries(s, mask[:, None, None, :] * queries)
                parts.append({k: v.cpu() if torch.is_tensor(v) else v for k, v in e.items()})
    return attention.relu_eps_change(parts)


def power_law_fit(ns, means, weights=None) -> tuple[float, float]:
    """(a, b) of mean D(n) ~ a * n**b by weighted least squares in log-log space."""
    ns, means = np.asarray(ns, float), np.asarray(means, float)
    if len(ns) < 2 or np.any(means <= 0) or np.any(ns <= 0):
        raise ValueError("a power-law fit needs >= 2 lengths with positive n and mean denominators")
    w = None if weights is None else np.sqrt(np.asarray(weights, float))
    b, log_a = np.polyfit(np.log(ns), np.log(means), 1, w=w)
    return float(np.exp(log_a)), float(b)


def fit_all(d: Denominators) -> tuple[float, float]:
    """One (a, b) over all layers and heads: the paper's f(n)."""
    ns, means, counts = d.mean_by_n()
    return power_law_fit(ns, means, counts)


def fit_per_head(d: Denominators, per_layer: bool = True) -> tuple[list, list]:
    """(a, b) per layer and head as (L, H) nested lists (or per head (H,) pooled over layers)."""
    L, H = int(d.layer.max()) + 1, int(d.head.max()) + 1
    key = d.layer.astype(np.int64) * H + d.head if per_layer else d.head.astype(np.int64)
    fits = {int(g): fit_all(part) for g, part in d.groups(key)}
    if not per_layer:
        ab = [fits[h] for h in range(H)]
        return [a for a, _ in ab], [b for _, b in ab]
    ab = [[fits[li * H + h] for h in range(H)] for li in range(L)]
    return [[a for a, _ in row] for row in ab], [[b for _, b in row] for row in ab]
