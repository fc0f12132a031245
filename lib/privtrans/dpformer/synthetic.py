"""A deterministic stand-in for Amazon "Games": sparse, Zipf-tailed sessions with sequential structure.

No Amazon review data can be had offline (no wheel ships it), so Table 2 / Figure 7 run on sessions
drawn from a small generative model that keeps the two properties the paper relies on:

- a long tail: item popularity follows Zipf(alpha) (a random permutation of the ranks), so most
  items are seen by a handful of users, and the data are very sparse (density well under 1%);
- learnable order: every item has ``n_successors`` successors, drawn with probability
  proportional to popularity**succ_power (0 = uniform, 1 = the popularity law).
  With probability ``rho`` the next item is a successor of one of the last ``window`` items,
  otherwise an independent popularity draw. Which recent item "fires" is uniform, so a model must
  attend over the recent window, not only the last item.

The book's stand-in is designed so that a user-level DP model at the paper's ε can learn more than
popularity, as the paper's DP models do on Games: its profile (``profile.yaml``) draws successors in
proportion to popularity (``succ_power`` = 1) and follows them with ``rho`` = 0.8, values chosen by
``benchmarks/dpformer_standin_sweep.py`` on seeds the book never judges on (the sweep's table is in
``data/dpformer/README.md``). The defaults below (``succ_power`` 0.3, ``rho`` 0.6) are the first
version's, which left every DP model at MostPopular's level; the tests' small draws use them.

Sequence lengths are ``min_len + Geometric`` with mean ``mean_len`` (Games: 9.3 actions per user),
capped at ``max_len``. The result goes through the same 5-core filter as MovieLens. Everything is
drawn from ``numpy.random.default_rng(seed)``, so the same arguments give the same data.

The generator returns its transition structure, so ``oracle_scores`` can rank items by the true
next-item probability: an upper reference for HIT@10 / NDCG@10.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .data import SeqData, k_core, to_sequences


@dataclass(frozen=True)
class SessionModel:
    """The true generative structure, in the item ids of the returned (filtered) data."""

    popularity: np.ndarray  # (M+1,) next-item probability of an independent draw (index 0 unused)
    successors: np.ndarray  # (M+1, n_successors) successors of each item; 0 = dropped by the filter
    rho: float
    window: int


def _zipf_popularity(n_items: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    p = np.arange(1, n_items + 1, dtype=float) ** -alpha
    return rng.permutation(p / p.sum())


def amazon_like(n_users: int = 5000, n_items: int = 4000, alpha: float = 1.0, mean_len: float = 9.0,
                min_len: int = 5, max_len: int = 50, rho: float = 0.6, window: int = 3,
                n_successors: int = 3, succ_power: float = 0.3, k: int = 5,
                seed: int = 0) -> tuple[SeqData, SessionModel]:
    """Draw ``n_users`` sessions; return them after the k-core filter, with the true model."""
    if not (0 <= rho <= 1):
        raise ValueError(f"rho must be in [0, 1], got {rho}")
    if min(n_users, n_items, min_len, window, n_successors) < 1 or mean_len <= min_len or max_len < min_len:
        raise ValueError("need n_users, n_items, min_len, window, n_successors >= 1, "
                         "mean_len > min_len and max_len >= min_len")
    rng = np.random.default_rng(seed)
    pop = _zipf_popularity(n_items, alpha, rng)
    q = pop ** succ_power
    q /= q.sum()
    succ = np.stack([rng.choice(n_items, size=n_successors, replace=False, p=q) for _ in range(n_items)])
    lengths = np.minimum(min_len + rng.geometric(1.0 / (mean_len - min_len + 1), size=n_users) - 1, max_len)

    T = int(lengths.max())
    seq = np.zeros((n_users, T), dtype=np.int64)
    seq[:, 0] = rng.choice(n_items, size=n_users, p=pop)
    for t in range(1, T):
        indep = rng.choice(n_items, size=n_users, p=pop)
        back = rng.integers(1, np.minimum(window, t) + 1)         # which recent item fires: 1..min(w, t)
        src = seq[np.arange(n_users), t - back]
        follow = succ[src, rng.integers(0, n_successors, size=n_users)]
        seq[:, t] = np.where(rng.random(n_users) < rho, follow, indep)

    rows = [(u, seq[u, t], t) for u in range(n_users) for t in range(lengths[u])]
    df = pd.DataFrame(rows, columns=["user", "item", "timestamp"])
    data = to_sequences(k_core(df, k), "Amazon-like (synthetic)")
    kept = data.meta["item_ids"]  # original ids of the surviving items, in new-id order
    new_id = np.zeros(n_items, dtype=np.int64)
    new_id[kept] = np.arange(1, len(kept) + 1)
    popularity = np.zeros(len(kept) + 1)
    popularity[1:] = pop[kept]
    successors = np.zeros((len(kept) + 1, n_successors), dtype=np.int64)
    successors[1:] = new_id[succ[kept]]
    data.meta.update(generator=dict(n_users=n_users, n_items=n_items, alpha=alpha, mean_len=mean_len,
                                    min_len=min_len, max_len=max_len, rho=rho, window=window,
                                    n_successors=n_successors, succ_power=succ_power, k=k, seed=seed))
    return data, SessionModel(popularity, successors, rho, window)


def oracle_scores(model: SessionModel, histories: np.ndarray) -> np.ndarray:
    """True next-item probabilities (N, M+1) given left-padded histories (N, L), pad = 0.

    The histories are those after filtering, so this is the generative model applied to what any
    learner can see; items the filter dropped get probability 0.
    """
    n_users, n_cols = histories.shape[0], len(model.popularity)
    scores = np.tile((1 - model.rho) * model.popularity, (n_users, 1))
    recent = histories[:, -model.window:]
    n_recent = np.maximum((recent > 0).sum(1), 1)
    k = model.successors.shape[1]
    for j in range(recent.shape[1]):
        items = recent[:, j]
        ok = items > 0
        for c in range(k):
            tgt = model.successors[items[ok], c]
            w = model.rho / (n_recent[ok] * k)
            np.add.at(scores, (np.flatnonzero(ok)[tgt > 0], tgt[tgt > 0]), w[tgt > 0])
    scores[:, 0] = 0
    assert scores.shape[1] == n_cols
    return scores
