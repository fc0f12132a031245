"""Full-ranking NDCG@k and HIT@k (paper A.9.4; Krichene & Rendle 2020: rank all items, no sampling).

With one relevant item, NDCG@k = 1 / log2(rank + 2) if the 0-based rank of the target is below k,
else 0; HIT@k = 1[rank < k]. The padding column 0 is never ranked. Items the user has already seen
are ranked too (the plain protocol; the paper does not say otherwise). Ties count against the target,
so a model that scores every item alike gets rank M - 1, not 0.
"""

from __future__ import annotations

import numpy as np
import torch


def target_rank(scores, targets) -> np.ndarray:
    """0-based rank of each target among items 1..M; scores (N, M+1) with column 0 = padding."""
    scores = torch.as_tensor(scores, dtype=torch.float64 if isinstance(scores, np.ndarray) else None)
    targets = torch.as_tensor(targets, dtype=torch.long, device=scores.device)
    if scores.ndim != 2 or targets.ndim != 1 or len(targets) != len(scores):
        raise ValueError(f"need scores (N, M+1) and targets (N,), got {tuple(scores.shape)} and {tuple(targets.shape)}")
    if bool(((targets < 1) | (targets >= scores.shape[1])).any()):
        raise ValueError("targets must be item ids in 1..M (0 is padding)")
    items = scores[:, 1:]
    t = scores.gather(1, targets[:, None])
    ahead = (items >= t).sum(1) - 1  # every item scoring at least as high, minus the target itself
    return ahead.cpu().numpy().astype(np.int64)


def ndcg_hit(ranks: np.ndarray, k: int = 10) -> dict:
    """Mean NDCG@k and HIT@k (as fractions, not %) from 0-based ranks."""
    ranks = np.asarray(ranks)
    hit = ranks < k
    ndcg = np.where(hit, 1.0 / np.log2(ranks + 2.0), 0.0)
    return {f"ndcg@{k}": float(ndcg.mean()), f"hit@{k}": float(hit.mean())}


def cross_entropy(scores, targets) -> np.ndarray:
    """Per-row −log softmax(scores over items 1..M)[target] (nats): the test loss beside the ranking
    metrics, which see only the order of the scores. scores (N, M+1) as for :func:`target_rank`."""
    scores = torch.as_tensor(scores, dtype=torch.float64 if isinstance(scores, np.ndarray) else None)
    targets = torch.as_tensor(targets, dtype=torch.long, device=scores.device)
    items = scores[:, 1:].double()
    ce = torch.logsumexp(items, 1) - items.gather(1, (targets - 1)[:, None]).squeeze(1)
    return ce.cpu().numpy()


def probability_cross_entropy(probs: np.ndarray, targets: np.ndarray, floor: float = 1e-12) -> float:
    """Mean −log p(target) of a reference that gives probabilities (N, M+1), e.g. the oracle."""
    p = np.asarray(probs, dtype=float)
    p = p[:, 1:] / p[:, 1:].sum(1, keepdims=True)
    return float(-np.log(np.maximum(p[np.arange(len(p)), np.asarray(targets) - 1], floor)).mean())


@torch.no_grad()
def evaluate(score_fn, inputs: np.ndarray, targets: np.ndarray, k: int = 10, batch: int = 512,
             device=None) -> dict:
    """Full-ranking metrics of ``score_fn(inputs_batch) -> (b, M+1)`` scores of the next item, and the
    mean test cross-entropy ``ce``."""
    ranks, ces = [], []
    for i in range(0, len(inputs), batch):
        x = torch.as_tensor(inputs[i:i + batch], device=device)
        s, t = score_fn(x).float(), torch.as_tensor(targets[i:i + batch], device=device)
        ranks.append(target_rank(s, t))
        ces.append(cross_entropy(s, t))
    return {**ndcg_hit(np.concatenate(ranks), k), "ce": float(np.concatenate(ces).mean())}


def most_popular_scores(train: np.ndarray, n_items: int, n_rows: int) -> np.ndarray:
    """The MostPopular anchor: every user gets the item counts of the training sequences."""
    counts = np.bincount(train[train > 0], minlength=n_items + 1).astype(float)
    counts[0] = 0
    return np.tile(counts, (n_rows, 1))
