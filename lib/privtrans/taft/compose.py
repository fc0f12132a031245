"""Parallel training on shards, composition, forgetting; the non-linear baselines Soup and SISA.

TAFT composes N shard models by averaging their Δw (the authors' ``compose_models`` averages the
whole state dict; base weights are shared, so that is w0 + mean Δw). Because f_lin is linear in
Δw, the composed model's output *is* the mean of the shard models' outputs: an ensemble at the
cost of one model (tested). Forgetting shard j drops its Δw from the mean,
(N·mean − Δw_j)/(N − 1), which equals the composition of the other shards (tested), and is exact
removal because shards are trained independently from one initialisation.

Model Soup averages the weights of non-linear (NLFT) shard models; SISA (Bourtoule et al. 2021)
keeps them apart and aggregates their predictions (majority vote, the original rule, or the mean
of softmax outputs), paying N forward passes at inference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .finetune import FitSpec, fit, load_trainable, logits, make_model
from .vit import ViT

AGGREGATIONS = ("vote", "mean_softmax")


def shard_indices(n: int, shards: int, seed: int) -> list[np.ndarray]:
    """A random partition of range(n) into ``shards`` near-equal disjoint parts."""
    if not 1 <= shards <= n:
        raise ValueError(f"shards must be between 1 and the number of samples {n}, got {shards}")
    return [np.sort(p) for p in np.array_split(np.random.default_rng(seed).permutation(n), shards)]


def shard_seed(seed: int, shard: int) -> int:
    """The training seed of one shard: a function of the run's seed and the shard alone, so that
    retraining one shard (or training without another) reproduces it exactly."""
    return 100_003 * seed + shard


@dataclass
class ShardSet:
    """N shard models of one method from one initialisation (``init_seed``)."""

    spec: FitSpec
    classes: int
    init_seed: int
    indices: list  # per shard, indices into the training set
    states: list  # per shard, its trainable parameters
    seconds: list = field(default_factory=list)  # per shard, training wall time

    def model(self, vit: ViT, state: dict | None = None, output: str = "sum"):
        m = make_model(vit, self.spec, self.classes, self.init_seed, output=output)
        return load_trainable(m, state) if state is not None else m


def train_shard(vit: ViT, x, y, idx, spec: FitSpec, classes: int, init_seed: int, seed: int):
    m = make_model(vit, spec, classes, init_seed)
    idx = torch.as_tensor(np.asarray(idx), dtype=torch.long)
    r = fit(m, x[idx], y[idx], spec, seed, classes=classes)
    return r.state, r.seconds


def train_shards(vit: ViT, x, y, spec: FitSpec, classes: int, shards: int, seed: int,
                 init_seed: int | None = None, progress=None) -> ShardSet:
    """Train one model per shard of a random partition (each from the same initialisation)."""
    init_seed = seed if init_seed is None else init_seed
    parts = shard_indices(len(y), shards, seed)
    states, secs = [], []
    it = range(shards) if progress is None else progress(range(shards))
    for i in it:
        s, t = train_shard(vit, x, y, parts[i], spec, classes, init_seed, shard_seed(seed, i))
        states.append(s)
        secs.append(t)
    return ShardSet(spec, classes, init_seed, parts, states, secs)


def average(states: list[dict], weights=None) -> dict:
    """The (weighted) mean of parameter dicts; weights default to 1/N and must sum to 1."""
    if not states:
        raise ValueError("cannot average zero models")
    w = np.full(len(states), 1 / len(states)) if weights is None else np.asarray(weights, dtype=float)
    if len(w) != len(states) or abs(w.sum() - 1) > 1e-9:
        raise ValueError(f"weights must be one per model and sum to 1, got {list(w)}")
    return {k: sum(float(wi) * s[k] for wi, s in zip(w, states)) for k in states[0]}


def subtract(mean_state: dict, n: int, removed: dict) -> dict:
    """Forget one component: (n·mean − Δw_j)/(n − 1), without touching the others."""
    if n < 2:
        raise ValueError(f"need at least two components to remove one, got n = {n}")
    return {k: (n * mean_state[k] - removed[k]) / (n - 1) for k in mean_state}


def composed_logits(vit: ViT, sset: ShardSet, x, keep=None, output: str = "sum") -> torch.Tensor:
    """Logits of the model whose parameters are the mean of the kept shards' (TAFT or Soup)."""
    keep = range(len(sset.states)) if keep is None else keep
    return logits(sset.model(vit, average([sset.states[i] for i in keep]), output), x)


def shard_logits(vit: ViT, sset: ShardSet, x, keep=None, output: str = "sum") -> torch.Tensor:
    """(N, n, K): every kept shard model's logits (the ensemble's inputs; SISA)."""
    keep = range(len(sset.states)) if keep is None else keep
    m = sset.model(vit, None, output)
    out = []
    for i in keep:
        load_trainable(m, sset.states[i])
        out.append(logits(m, x))
    return torch.stack(out)


def aggregate(per_shard: torch.Tensor, rule: str = "vote") -> torch.Tensor:
    """SISA's prediction from (N, n, K) shard logits: majority vote (ties to the lowest class) or
    the argmax of the mean softmax."""
    if rule == "vote":
        votes = torch.nn.functional.one_hot(per_shard.argmax(-1), per_shard.shape[-1]).sum(0)
        return votes.argmax(-1)
    if rule == "mean_softmax":
        return per_shard.softmax(-1).mean(0).argmax(-1)
    raise ValueError(f"rule must be one of {AGGREGATIONS}, got {rule!r}")


def acc(pred: torch.Tensor, y: torch.Tensor) -> float:
    return float((pred == y).float().mean())


def mean_change_curve(states: list[dict]) -> list[float]:
    """Figure 4: ‖w̄_{n+1} − w̄_n‖₂ for n = 1..N−1, where w̄_n is the mean of the first n components'
    Δw (the global norm over every trainable tensor). Computed as ‖Δw_{n+1} − w̄_n‖/(n+1), the
    identity the curve's 1/n decay comes from; tested against averaging from scratch."""
    if len(states) < 2:
        raise ValueError(f"need at least two components, got {len(states)}")
    running = {k: v.clone() for k, v in states[0].items()}
    out = []
    for n in range(1, len(states)):
        step = {k: (states[n][k] - running[k]) / (n + 1) for k in running}
        out.append(float(torch.sqrt(sum((s * s).sum() for s in step.values()))))
        for k in running:
            running[k] += step[k]
    return out
