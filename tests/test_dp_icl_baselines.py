"""privtrans.dp_icl.baselines: DP-ridge's noise and its excess in closed form, and DP-SGD's steps, clip and
spent budget."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from privtrans.dp_icl import baselines, constants, experiments
from privtrans.dp_icl import noisyhead
from privtrans.dp_icl import task


# ----------------------------------------------------------------------------- baselines
def test_dp_ridge_noise_is_as_written(rng):
    hp = constants.low_dim(2000)
    assert baselines.dp_ridge_std(hp, 0.2, 1e-5) == pytest.approx(
        hp.C * hp.G * math.sqrt(math.log(1.25e5)) / (hp.lam * hp.N * 0.2))
    st = task.Stats(np.eye(400) * 0.2, np.zeros(400), hp.N)     # ridge solution 0: output is the noise
    out = baselines.dp_ridge(st, hp, [0.2, 0.4], 1e-5, rng)
    assert np.std(out[0]) == pytest.approx(baselines.dp_ridge_std(hp, 0.2, 1e-5), rel=0.1)
    np.testing.assert_allclose(out[0] / out[1], 2.0)


def test_dpsgd_full_batch_without_noise_is_noisyhead_without_noise(rng):
    """opacus DP-SGD with q = 1 and (almost) no noise takes exactly NoisyHead's noise-free steps."""
    hp = constants.low_dim(300).with_(R=1.0)            # small R so the projection binds too
    pr = experiments.make_problem(rng, hp, 50)
    g0 = noisyhead.initial_gamma(rng, pr.d, hp.R)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g, _ = baselines.dpsgd(pr.Zt, pr.yt, hp, 1e-9, g0, seed=0, batch_size=hp.N, accountant="rdp")
    want = noisyhead.noisy_gd(pr.st_priv, hp.lam, hp.eta0, hp.T, 0.0, hp.R, g0).gamma[0]
    np.testing.assert_allclose(g, want, atol=2e-5)


def test_dpsgd_spends_what_it_is_given(rng):
    hp = constants.low_dim(1000)
    pr = experiments.make_problem(rng, hp, 50)
    g0 = noisyhead.initial_gamma(rng, pr.d, hp.R)
    z = baselines.dpsgd_noise_multiplier(hp, 1.0, 1e-5, accountant="rdp")
    assert baselines.dpsgd_noise_multiplier(hp, 1.0, 1e-5, accountant="rdp", replace_one=True) == 2 * z
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g, spent = baselines.dpsgd(pr.Zt, pr.yt, hp, z, g0, seed=0, accountant="rdp")
    assert 0.9 <= spent <= 1.0 + 1e-6
    assert np.linalg.norm(g) <= hp.R * (1 + 1e-6)


def test_dp_ridge_noise_excess_closed_form_equals_monte_carlo():
    from privtrans.dp_icl import baselines, constants, task

    rng = np.random.default_rng(0)
    hp = constants.low_dim(2000)
    p = task.sample_prompts(rng, 40_000, hp.L, hp.D)
    Z = task.features(p.X, p.Y)
    assert np.mean(np.sum(Z**2, axis=1)) == pytest.approx(task.expected_feature_norm2(hp.L, hp.D), rel=0.02)
    # the noise term itself: <W, Z> with W ~ N(0, s^2 I), averaged over W and Z
    s = baselines.dp_ridge_std(hp, 0.2, 1e-5)
    W = s * rng.standard_normal(Z.shape)
    mc = np.mean(np.sum(W * Z, axis=1) ** 2)
    assert mc == pytest.approx(baselines.dp_ridge_noise_excess(hp, 0.2, 1e-5), rel=0.03)


def test_dpsgd_bracket_reads_steps_epochs_and_clip():
    from privtrans.dp_icl import baselines, constants

    hp = constants.low_dim(1000)
    assert baselines.dpsgd_steps(hp, 256) == hp.T
    assert baselines.dpsgd_steps(hp, 256, epochs=True) == hp.T * 4  # ceil(1000 / 256) batches per epoch
    assert baselines.dpsgd_clip(hp, "sigma") == pytest.approx(hp.sigma / 2)
    assert baselines.dpsgd_clip(hp, "C") == hp.C
    with pytest.raises(ValueError, match="allowed values are 'sigma', 'C'"):
        baselines.dpsgd_clip(hp, "G")
    # more steps at the same (eps, delta) need more noise per step
    z_steps = baselines.dpsgd_noise_multiplier(hp, 1.0, 1e-5, accountant="rdp")
    assert baselines.dpsgd_noise_multiplier(hp, 1.0, 1e-5, accountant="rdp", epochs=True) > z_steps
