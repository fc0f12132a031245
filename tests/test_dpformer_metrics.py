"""privtrans.dpformer.metrics: full-ranking NDCG@10 / HIT@10 on hand-computed cases, and the cross-
entropies."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from privtrans.dpformer import metrics


# ----------------------------------------------------------------------------------- metrics
def test_metrics_hand_computed():
    # 4 items (+ pad column 0, which must never count even with a huge score)
    scores = np.array([[99.0, 0.1, 0.9, 0.5, 0.3],    # target 3 -> rank 1
                       [99.0, 0.9, 0.1, 0.5, 0.3],    # target 1 -> rank 0
                       [99.0, 0.2, 0.2, 0.2, 0.2]])   # ties count against the target -> rank 3
    ranks = metrics.target_rank(scores, np.array([3, 1, 2]))
    assert ranks.tolist() == [1, 0, 3]
    m2 = metrics.ndcg_hit(ranks, k=2)
    assert m2["hit@2"] == pytest.approx(2 / 3)
    assert m2["ndcg@2"] == pytest.approx((1 / math.log2(3) + 1.0 + 0.0) / 3)
    assert metrics.ndcg_hit(ranks, k=1) == {"ndcg@1": pytest.approx(1 / 3), "hit@1": pytest.approx(1 / 3)}


def test_metrics_reject_padding_target():
    with pytest.raises(ValueError, match="1..M"):
        metrics.target_rank(np.zeros((1, 3)), np.array([0]))


def test_cross_entropy_equals_torch_and_ignores_the_pad_column():
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(6, 9, generator=g)
    scores[:, 0] = float("-inf")
    y = torch.tensor([1, 8, 3, 3, 5, 2])
    want = torch.nn.functional.cross_entropy(scores[:, 1:].double(), y - 1, reduction="none")
    assert np.allclose(metrics.cross_entropy(scores, y), want.numpy())
    probs = np.array([[0, 0.5, 0.5], [0, 0.2, 0.8]])
    assert metrics.probability_cross_entropy(probs, np.array([1, 2])) == pytest.approx(
        -(math.log(0.5) + math.log(0.8)) / 2)
