"""privtrans.dp_icl.noisyhead: Algorithm 1 (noise scale, clipping, projections, noisy full-batch GD)
against a literal transcription."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privtrans.dp_icl import accounting, constants
from privtrans.dp_icl import noisyhead
from privtrans.dp_icl import task


# ----------------------------------------------------------------------------- NoisyHead
def test_noise_std_equals_the_formula_and_the_table():
    hp = constants.low_dim(1000)
    for eps, want in ((0.2, 8.440), (1.0, 1.688)):
        s = noisyhead.noise_std(hp, eps, 1e-5)
        formula = math.sqrt(2 * hp.eta0**2 * hp.T**2 * hp.sigma**2 * math.log(1.25 * hp.T / 1e-5) / (eps**2 * hp.N**2))
        assert s == pytest.approx(formula, rel=1e-12)
        assert s == pytest.approx(want, rel=1e-3)
    # and it is z_paper times the per-step sensitivity eta0 sigma / N
    assert noisyhead.noise_std(hp, 0.2, 1e-5) == pytest.approx(accounting.paper_noise_multiplier(0.2, 1e-5, hp.T) * hp.sensitivity)


def test_added_noise_has_the_stated_std(rng):
    """With no data term and no shrinkage, Gamma^T - Gamma^0 is the sum of T noise draws: s.d. s sqrt(T)."""
    d, T, s = 400, 25, 0.37
    st = task.Stats(np.zeros((d, d)), np.zeros(d), 10)
    run = noisyhead.noisy_gd(st, lam=0.0, eta0=0.1, steps=T, s=s, R=math.inf, gamma0=np.zeros(d), rng=rng)
    assert np.std(run.gamma) == pytest.approx(s * math.sqrt(T), rel=0.05)


def _literal_algorithm1(Zt, yt, lam, eta0, T, R, gamma0):
    """Algorithm 1 as printed (noise off), one prompt at a time, for comparison."""
    G = gamma0.copy()
    N = len(yt)
    for _ in range(T):
        grad = sum((G @ Zt[k] - yt[k]) * Zt[k] for k in range(N)) / N
        G = (1 - 2 * lam * eta0) * G - eta0 * grad
        n = np.linalg.norm(G)
        if n > R:
            G = G * R / n
    return G


def test_vectorised_update_equals_algorithm_1(rng):
    hp = constants.low_dim(100).with_(lam=0.01, R=0.05)   # weak ridge, small R: the projection binds
    p = task.sample_prompts(rng, hp.N, hp.L, hp.D)
    Zt, yt = noisyhead.private_features(p, hp)
    g0 = noisyhead.initial_gamma(rng, Zt.shape[1], hp.R)
    run = noisyhead.noisy_gd(task.stats(Zt, yt), hp.lam, hp.eta0, 15, 0.0, hp.R, g0)
    np.testing.assert_allclose(run.gamma[0], _literal_algorithm1(Zt, yt, hp.lam, hp.eta0, 15, hp.R, g0), atol=1e-12)


def test_noise_off_converges_to_the_2lambda_ridge(rng):
    """Algorithm 1's update is the gradient of (1/2N) sum (.)^2 + lam |G|^2, i.e. the 2 lam ridge of (2.6)."""
    p = task.sample_prompts(rng, 300, 12, 3)
    Z = task.features(p.X, p.Y)
    st = task.stats(Z, p.y_query)
    lam, eta0 = 0.05, 0.5
    run = noisyhead.noisy_gd(st, lam, eta0, 4000, 0.0, math.inf, np.zeros(9))
    g = run.gamma[0]
    two_lam = task.ridge(st, 2 * lam)          # (A + 2 lam I)^{-1} b
    one_lam = task.ridge(st, lam)              # Gamma* of (2.7)
    np.testing.assert_allclose(g, two_lam, rtol=1e-8, atol=1e-12)
    assert np.linalg.norm(g - one_lam) > 1e3 * np.linalg.norm(g - two_lam)


def test_clipping_and_projections_hold_at_every_step(rng):
    hp = constants.low_dim(400).with_(R=0.8, G=0.3)   # small radii so both projections bind
    p = task.sample_prompts(rng, hp.N, hp.L, hp.D, tau=3.0)   # heavy responses so clipping binds
    Zt, yt = noisyhead.private_features(p, hp)
    assert np.all(np.abs(yt) <= hp.C) and np.any(np.abs(p.y_query) > hp.C)
    assert np.all(np.linalg.norm(Zt, axis=1) <= hp.G * (1 + 1e-12))
    assert np.any(np.linalg.norm(task.features(p.X, noisyhead.clip_responses(p.Y, hp.C)), axis=1) > hp.G)
    g0 = noisyhead.initial_gamma(rng, Zt.shape[1], hp.R)
    s = noisyhead.noise_std(hp, [0.05, 1.0], 1e-5)
    run = noisyhead.noisy_gd(task.stats(Zt, yt), hp.lam, hp.eta0, hp.T, s, hp.R, g0, rng, trace=True)
    assert run.norms.shape == (hp.T, 2)
    assert np.all(run.norms <= hp.R * (1 + 1e-12))
    assert np.any(run.norms > 0.99 * hp.R)          # the projection was active


def test_horizons_stop_each_chain_at_its_own_T(rng):
    st = task.Stats(np.eye(4) * 0.1, np.ones(4) * 0.1, 10)
    run = noisyhead.noisy_gd(st, 0.1, 0.2, [1, 5, 9], 0.0, math.inf, np.zeros(4), checkpoints=[1, 5, 9])
    for j, t in enumerate([1, 5, 9]):
        np.testing.assert_allclose(run.gamma[j], run.checkpoints[t][2])


def test_bad_parameters_raise(rng):
    hp = constants.low_dim(1000)
    with pytest.raises(ValueError):
        noisyhead.noise_std(hp, 0.0, 1e-5)
    with pytest.raises(ValueError):
        noisyhead.noise_std(hp, 0.5, 1.5)
    with pytest.raises(ValueError):
        noisyhead.clip_responses(np.ones(3), -1)
    with pytest.raises(ValueError):
        task.sample_prompts(rng, 0, 3, 3)
    with pytest.raises(ValueError):
        constants.low_dim(1000, D=0)


def test_gradient_through_z_equals_gradient_through_a(rng):
    """Short runs take the gradient through Z (no D^4 Gram matrix); both paths give the same iterates."""
    p = task.sample_prompts(rng, 60, 8, 6)
    Z, y = task.features(p.X, p.Y), p.y_query
    lazy, full = task.stats(Z, y), task.stats(Z, y)
    full.gram()
    g0 = rng.standard_normal(36) * 0.1
    a = noisyhead.noisy_gd(lazy, 0.2, 0.3, 3, 0.0, 0.7, g0)        # 2 * 3 < 36: through Z
    assert lazy.A is None
    b = noisyhead.noisy_gd(full, 0.2, 0.3, 3, 0.0, 0.7, g0)
    np.testing.assert_allclose(a.gamma, b.gamma, atol=1e-13)
