"""privtrans.shared.dp.step: the Phantom and opacus-hooks DP-SGD steps on a DPFormer model agree without
noise, add N(0, (sigma C / B)^2) with it, and release noise only on an empty batch."""

from __future__ import annotations

import copy

import pytest
import torch

from privtrans.dpformer import train
from privtrans.shared.dp.step import OpacusHooksStep, PhantomStep, gaussian_noise, make_dp_step, noise_only


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
