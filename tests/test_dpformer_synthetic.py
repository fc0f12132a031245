"""privtrans.dpformer.synthetic: the Zipf-tailed session generator is deterministic and its oracle beats
popularity."""

from __future__ import annotations

import numpy as np

from privtrans.dpformer import data, metrics, synthetic


# ----------------------------------------------------------------------------------- generator
def test_generator_is_deterministic_and_long_tailed():
    kw = dict(n_users=800, n_items=700, seed=3)
    a, ta = synthetic.amazon_like(**kw)
    b, tb = synthetic.amazon_like(**kw)
    c, _ = synthetic.amazon_like(**{**kw, "seed": 4})
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()
    assert np.array_equal(ta.successors, tb.successors)
    st = data.long_tail_stats(a)
    assert st["top20_share"] > 0.5 and st["gini"] > 0.4
    assert min(len(s) for s in a.seqs) >= 5
    assert np.bincount(np.concatenate(a.seqs))[1:].min() >= 5  # 5-core holds


def test_oracle_beats_popularity_on_generated_data():
    d, truth = synthetic.amazon_like(n_users=1500, n_items=800, seed=0)
    s = data.leave_one_out(d, 10)
    orc = metrics.ndcg_hit(metrics.target_rank(synthetic.oracle_scores(truth, s.test_input), s.test_target))
    pop = metrics.ndcg_hit(metrics.target_rank(
        metrics.most_popular_scores(s.train, s.n_items, len(s.test_target)), s.test_target))
    assert orc["hit@10"] > pop["hit@10"] + 0.1  # the sequential structure is learnable
