"""The DP-ICL chapter's loops under the dry run (privtrans.book.dry): NoisyHead and DP-SGD take their first
step and book every step and repetition; outside one they run every step."""

from __future__ import annotations

import warnings

import numpy as np

from privtrans.dp_icl import baselines, constants, experiments
from privtrans.dp_icl import noisyhead


def _dry_problem():
    hp = constants.low_dim(300).with_(R=1.0)
    pr = experiments.make_problem(np.random.default_rng(7), hp, 50)
    return hp, pr, noisyhead.initial_gamma(np.random.default_rng(8), pr.d, hp.R)


def _dry_gd(hp, pr, g0):
    s = noisyhead.noise_std(hp, [0.2, 1.0], 1e-5)
    return noisyhead.noisy_gd(pr.st_priv, hp.lam, hp.eta0, hp.T, s, hp.R, g0, np.random.default_rng(9),
                       checkpoints=[1, hp.T], trace=True)


def test_outside_a_dry_run_noisyhead_and_dpsgd_run_every_step():
    hp, pr, g0 = _dry_problem()
    run = _dry_gd(hp, pr, g0)
    assert run.norms.shape == (hp.T, 2) and np.all(np.isfinite(run.norms))
    np.testing.assert_array_equal(run.checkpoints[hp.T], run.gamma)
    # the same as Algorithm 1 written out without dry.loop, draw for draw
    s, r, G = noisyhead.noise_std(hp, [0.2, 1.0], 1e-5), np.random.default_rng(9), np.array([g0, g0])
    for _ in range(hp.T):
        G = noisyhead.project((1 - 2 * hp.lam * hp.eta0) * G - hp.eta0 * (G @ pr.st_priv.gram() - pr.st_priv.b)
                       + s[:, None] * r.standard_normal(pr.d), hp.R)
    np.testing.assert_allclose(run.gamma, G, rtol=1e-12, atol=1e-15)
    df = experiments.low_dim_grid(np.random.default_rng(0), [300], [1.0], 1e-5, 3, 20)
    assert sorted(df["rep"].unique()) == [0, 1, 2]


def test_a_dry_run_books_every_repetition_s_dp_sgd_runs(dry_run):
    """Figure 5's DP-SGD runs go after their N's repetitions are drawn; a dry run keeps two
    repetitions and books the runs of all of them."""
    variants = experiments.dpsgd_variants("rdp", 64, bracket=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = experiments.low_dim_grid(np.random.default_rng(0), [300], [1.0], 1e-5, 5, 20, dpsgd=variants)
    assert df["eps_spent"].notna().sum() == 2 * len(variants)
    loops = dry_run.report(1.0)["loops"]
    assert loops["DP-SGD runs"] == {"runs": 1, "kept": 2 * len(variants), "full": 5 * len(variants)}


def test_a_dry_run_takes_one_step_and_books_all(dry_run):
    hp, pr, g0 = _dry_problem()
    run = _dry_gd(hp, pr, g0)
    assert np.all(np.isfinite(run.norms[0])) and np.all(np.isnan(run.norms[1:]))
    np.testing.assert_array_equal(run.checkpoints[hp.T], run.gamma)   # never reached: the last iterate
    np.testing.assert_array_equal(run.checkpoints[1], run.gamma)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        baselines.dpsgd(pr.Zt, pr.yt, hp, 1.0, g0, seed=0, batch_size=64, accountant="rdp")
    df = experiments.low_dim_grid(np.random.default_rng(0), [300], [1.0], 1e-5, 5, 20)
    assert sorted(df["rep"].unique()) == [0, 1]                       # two repetitions kept
    loops = dry_run.report(1.0)["loops"]
    # one chain above, then per kept repetition plain GD and NoisyHead (at hp.T of N = 300 too)
    assert loops["NoisyHead steps"] == {"runs": 5, "kept": 5, "full": 5 * hp.T}
    assert loops["DP-SGD steps"] == {"runs": 1, "kept": 1, "full": baselines.dpsgd_steps(hp, 64)}
    assert loops["repetitions"] == {"runs": 1, "kept": 2, "full": 5}
