"""privtrans.dpformer.premise: the popular-trigger generator, its oracle and the attention mass it
predicts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privtrans.dpformer import data, metrics, premise


# ----------------------------------------------------------------------------------- premise data
def test_premise_generator_is_deterministic_and_long_tailed():
    kw = dict(n_users=3000, n_items=300, n_head=12, length=10, seed=5)
    a, ta = premise.popular_trigger(**kw)
    b, tb = premise.popular_trigger(**kw)
    c, _ = premise.popular_trigger(**{**kw, "seed": 6})
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()
    assert np.array_equal(ta.successor, tb.successor) and ta.head.sum() == 12 and not ta.head[0]
    assert all(len(s) == 10 for s in a.seqs) and min(s.min() for s in a.seqs) >= 1
    assert sorted(ta.successor[ta.head]) == sorted(np.flatnonzero(ta.head))   # a permutation of the head
    pop = ta.popularity[1:]
    assert ta.head[1:][np.argsort(-pop)[:12]].all()                            # the head = the 12 most popular
    assert data.long_tail_stats(a)["top20_share"] > 0.5


def test_premise_oracle_equals_the_generating_rule_by_brute_force():
    d, t = premise.popular_trigger(n_users=200, n_items=100, n_head=8, length=12, rho=0.7, seed=1)
    hist = data.leave_one_out(d, 11).test_input
    got = premise.oracle_scores(t, hist)
    for h, row in zip(hist, got):
        want = t.popularity.copy()
        heads = [x for x in h if x > 0 and t.successor[x] > 0]
        if heads:
            want = (1 - t.rho) * want
            want[t.successor[heads[-1]]] += t.rho
        want[0] = 0
        assert np.allclose(row, want) and row.sum() == pytest.approx(1.0)


def test_premise_targets_follow_the_trigger_as_often_as_the_oracle_says():
    d, t = premise.popular_trigger(n_users=20000, n_items=200, n_head=10, length=8, rho=0.6, seed=2)
    s = data.leave_one_out(d, 7)   # the whole history is visible
    trig = premise.last_trigger(t, s.test_input)
    has = trig > 0
    hit = s.test_target[has] == t.successor[trig[has]]
    p = t.rho + (1 - t.rho) * t.popularity[t.successor[trig[has]]]
    assert abs(hit.mean() - p.mean()) < 4 * math.sqrt(p.mean() * (1 - p.mean()) / has.sum())
    orc = metrics.ndcg_hit(metrics.target_rank(premise.oracle_scores(t, s.test_input), s.test_target))
    pop = metrics.ndcg_hit(metrics.target_rank(metrics.most_popular_scores(s.train, s.n_items, len(trig)),
                                               s.test_target))
    assert orc["ndcg@10"] > pop["ndcg@10"] + 0.2


def test_premise_attention_mass_by_hand():
    t = premise.TriggerModel(popularity=np.array([0, 0.5, 0.3, 0.1, 0.1]), successor=np.array([0, 2, 1, 0, 0]),
                             rho=0.5)
    hist = np.array([[0, 1, 3, 4], [3, 4, 3, 4]])      # user 0: trigger at position 1; user 1: none
    attn = np.array([[0.0, 0.5, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4]])
    out = premise.attention_mass(attn, hist, t)
    assert out["tail"] == pytest.approx((0.5 + 1.0) / 2) and out["trigger"] == pytest.approx(0.5)
    # uniform attention over the real positions: 2 of user 0's 3 items are tail items, all of user 1's
    assert out["tail_uniform"] == pytest.approx((2 / 3 + 1.0) / 2)
    assert list(premise.last_trigger(t, hist)) == [1, 0]
    with pytest.raises(ValueError, match="same shape"):
        premise.attention_mass(attn[:, :3], hist, t)


def test_premise_rejects_bad_arguments():
    with pytest.raises(ValueError, match="rho"):
        premise.popular_trigger(n_users=10, rho=1.0)
    with pytest.raises(ValueError, match="n_head"):
        premise.popular_trigger(n_users=10, n_items=5, n_head=5)
