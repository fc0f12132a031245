"""Phantom Clipping (DPFormer Claim 3.1): exact per-sample norms with a tied embedding."""

import math

import pytest
import torch
from torch import nn

from privtrans.shared.dp import PhantomClipper, PhantomDPSGD, clip_factors, dp_gradient, noise_for_epsilon
from privtrans.shared.dp.brute_force import clipped_sum, norms_of, per_sample_grads
from privtrans.dpformer.sasrec import SASRec, per_sample_loss


def _loss_of(run, x, y):
    return per_sample_loss(run(x), y).sum()


def _batch(n_items, length, b, seed, pad=True, repeats=True):
    g = torch.Generator().manual_seed(seed)
    s = torch.randint(1, n_items + 1, (b, length), generator=g)
    if repeats:  # draw from few ids so tokens repeat within a sequence, and force one
        s = torch.randint(1, min(n_items, 5) + 1, (b, length), generator=g)
        s[0, -3:] = s[0, -1]
    if pad:  # left padding of varying length; one sample with a single real token
        for i in range(b):
            s[i, : i % (length - 1)] = 0
        s[-1, :-1] = 0
    t = torch.randint(1, n_items + 1, (b, length), generator=g)
    t[s == 0] = 0
    t[1, -1] = s[1, -1]  # a target that is also an input token (cross term through the gather)
    return s, t


def _model(n_items, length, d, seed, tied=True, dtype=torch.float64, n_blocks=2, n_heads=1):
    torch.manual_seed(seed)
    m = SASRec(n_items, length, d=d, n_blocks=n_blocks, n_heads=n_heads, dropout=0.0, tied=tied)
    return m.to(dtype).eval()


def _phantom(model, s, t, **kw):
    c = PhantomClipper(model, **kw)
    with c.capture():
        losses = per_sample_loss(model(s), t)
    return c, c.backward(losses)


CASES = [  # (n_items, L, d, B, seed, tied, n_heads)
    (30, 8, 8, 6, 0, True, 1),
    (60, 12, 16, 5, 1, True, 2),
    (25, 6, 8, 4, 2, False, 1),
    (200, 5, 4, 7, 3, True, 1),   # T² < in·out everywhere -> ghost path; M ≫ L
    (12, 20, 4, 3, 4, True, 1),   # T² > in·out for the small Linears -> materialised path
]


@pytest.mark.parametrize("n_items,length,d,b,seed,tied,heads", CASES)
def test_norms_equal_brute_force(n_items, length, d, b, seed, tied, heads):
    m = _model(n_items, length, d, seed, tied=tied, n_heads=heads)
    s, t = _batch(n_items, length, b, seed)
    ref = per_sample_grads(m, _loss_of, s, t)
    _, norms = _phantom(m, s, t)
    torch.testing.assert_close(norms, norms_of(ref), rtol=1e-5, atol=0)


def test_per_parameter_terms_and_float32():
    m = _model(40, 10, 8, 5, dtype=torch.float32)
    s, t = _batch(40, 10, 6, 5)
    ref = per_sample_grads(m, _loss_of, s, t)
    c, norms = _phantom(m, s, t)
    for name, sq in c.per_param_sq_norms.items():
        torch.testing.assert_close(sq, ref[name].flatten(1).pow(2).sum(1), rtol=2e-4, atol=1e-7)
    torch.testing.assert_close(norms, norms_of(ref), rtol=1e-4, atol=0)


def test_dropping_cross_term_is_detectably_wrong():
    m = _model(30, 8, 8, 0)
    s, t = _batch(30, 8, 6, 0)
    exact = norms_of(per_sample_grads(m, _loss_of, s, t))
    _, wrong = _phantom(m, s, t, cross_terms=False)
    assert ((wrong - exact).abs() / exact).max() > 1e-3  # far above the 1e-5 of the exact version


@pytest.mark.parametrize("mode", ["abadi", "automatic"])
def test_clipped_noise_free_gradient_equals_brute_force(mode):
    m = _model(30, 8, 8, 1)
    s, t = _batch(30, 8, 6, 1)
    ref = per_sample_grads(m, _loss_of, s, t)
    c_ref = clip_factors(norms_of(ref), 0.5, mode)  # C below most norms so clipping bites
    want = clipped_sum(ref, c_ref)
    norms = dp_gradient(m, lambda: per_sample_loss(m(s), t), max_grad_norm=0.5,
                        noise_multiplier=0.0, expected_batch_size=6, clipping=mode)
    assert (norms > 0.5).any()
    for name, p in m.named_parameters():
        torch.testing.assert_close(p.grad * 6, want[name], rtol=1e-6, atol=1e-10)


def test_opacus_optimizer_adds_noise_and_accounts():
    m = _model(30, 8, 8, 2, dtype=torch.float32)
    s, t = _batch(30, 8, 6, 2)
    dp = PhantomDPSGD(m, torch.optim.SGD(m.parameters(), lr=0.0), noise_multiplier=1.0,
                      max_grad_norm=1.0, expected_batch_size=6, sample_rate=0.1, delta=1e-3)
    before = dp.clipper.params["item_emb.weight"].detach().clone()
    dp.step(lambda: per_sample_loss(m(s), t))
    dp.step(lambda: per_sample_loss(m(s), t))
    g = m.item_emb.weight.grad
    assert torch.equal(before, m.item_emb.weight)            # lr 0: nothing moved
    assert 0.5 < g[0].std().item() * 6 < 1.5                # pad row: pure N(0, σC)/B noise
    assert dp.accountant.history == [(1.0, 0.1, 2)]
    assert math.isclose(dp.epsilon(), dp.budget().epsilon)


def test_noise_for_epsilon_round_trip():
    plan = noise_for_epsilon(5.0, n_train=943, batch_size=256, epochs=20)
    assert plan.delta == 1 / (2 * 943)
    assert 4.9 < plan.epsilon <= 5.0
    assert 1.9 < plan.noise_multiplier < 2.2  # opacus 1.6's RDP accountant gives 2.02


def test_functional_tie_is_refused():
    class Functional(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(20, 4, padding_idx=0)
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(self.emb(x)) @ self.emb.weight.T  # tie opacus does not see

    m = Functional()
    x = torch.randint(1, 20, (3, 5))
    c = PhantomClipper(m)
    with c.capture():
        losses = nn.functional.cross_entropy(m(x).transpose(1, 2), x, reduction="none").mean(1)
    with pytest.raises(RuntimeError, match="functionally"):
        c.backward(losses)


def test_unsupported_parameter_is_refused():
    with pytest.raises(NotImplementedError, match="GRU"):
        PhantomClipper(nn.Sequential(nn.Embedding(5, 3), nn.GRU(3, 3)))


def test_flattened_batch_is_refused():
    lin = nn.Linear(4, 3)
    x = torch.randn(5, 6, 4)
    c = PhantomClipper(lin)
    with c.capture():
        losses = lin(x.reshape(30, 4)).pow(2).sum(1).reshape(5, 6).sum(1)
    with pytest.raises(ValueError, match="batch-first"):
        c.backward(losses)


def test_budget_is_printable():
    plan = noise_for_epsilon(8.0, n_train=1000, batch_size=100, epochs=2)
    text = str(plan)
    assert "ε = " in text and "δ = 0.0005" in text and "RDP" in text and "20 steps" in text
