"""privtrans.dpformer.train: the privacy plan against opacus' accountant, the learning-rate schedule, and
one DP and one non-private run."""

from __future__ import annotations

import pytest

from privtrans.dpformer import data, synthetic, train


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
