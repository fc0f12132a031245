"""privtrans.dp_icl.experiments: common random numbers, the grid on workers equals one process, the rank-
one ridge replacement, Figure 5's corner."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from privtrans.dp_icl import constants, experiments, task


# ----------------------------------------------------------------------------- experiments
def test_common_random_numbers_order_eps(rng):
    df = experiments.low_dim_grid(rng, [1000], [0.2, 1.0], 1e-5, 2, 100)
    m = df[df.method == "NoisyHead (basic)"].groupby("eps")["excess"].mean()
    assert m[0.2] > m[1.0]


def test_the_grid_on_every_core_equals_the_loop_in_one_process(monkeypatch):
    """Figure 5's grid computes its noise multipliers and DP-SGD runs on worker processes, each run
    seeded by its own draw in the loop's order: the frame is the one a single process computes."""
    variants = experiments.dpsgd_variants("rdp", 128, bracket=False)
    frames = []
    for n in ("1", "2"):
        monkeypatch.setenv("PRIVTRANS_WORKERS", n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frames.append(experiments.low_dim_grid(np.random.default_rng(3), [300, 400], [0.5, 1.0], 1e-5, 2, 20,
                                                   accountants=("basic", "rdp"), dpsgd=variants))
    one, two = frames
    assert one["eps_spent"].notna().sum() == 2 * 2 * 2 * len(variants)
    pd.testing.assert_frame_equal(one, two, check_exact=True)
    # each run's result is in its own row: the ε opacus reports depends on (N, ε) alone and grows with ε
    runs = one[one.method.isin(variants)]
    spent = runs.groupby(["method", "N", "eps"])["eps_spent"]
    assert (spent.nunique() == 1).all()
    assert (spent.first().unstack("eps").diff(axis=1).iloc[:, 1:] > 0).all().all()


def test_ridge_replacement_matches_a_direct_solve_when_well_conditioned(rng):
    hp = constants.robustness(N=300, L=20, D=3, lam=0.5)
    pr = experiments.make_problem(rng, hp, 50)
    bad = experiments.bad_prompt(rng, hp.L, hp.D, alpha=3.0, mu=0.5)
    z_new = task.features(bad.X, bad.Y)[0]
    got = experiments._replace_ridge(pr.st_raw, hp.lam, pr.Z[7], pr.y[7], z_new, bad.y_query[0])
    np.testing.assert_allclose(got, experiments._direct_ridge(pr, 7, z_new, bad.y_query[0]), rtol=1e-8, atol=1e-12)


def test_ridge_replacement_is_exact_where_a_direct_solve_is_not(rng):
    """Figure 4's bad prompt (alpha ~ 1e8) makes the direct solve inaccurate; the rank-one update
    agrees with a 60-digit solve to machine precision."""
    mpmath = pytest.importorskip("mpmath")
    hp = constants.robustness(N=500, L=50, D=5, lam=0.01)
    pr = experiments.make_problem(rng, hp, 100)
    bad = experiments.bad_prompt(rng, hp.L, hp.D, alpha=4 * 5000.0**2.1, mu=1.0)
    z_new, y_new = task.features(bad.X, bad.Y)[0], float(bad.y_query[0])
    got = experiments._replace_ridge(pr.st_raw, hp.lam, pr.Z[0], float(pr.y[0]), z_new, y_new)
    mpmath.mp.dps = 60
    zz = mpmath.matrix([mpmath.mpf(float(x)) for x in z_new])
    A = pr.Z.T @ pr.Z - np.outer(pr.Z[0], pr.Z[0])
    M = mpmath.matrix(A.tolist()) + zz * zz.T + mpmath.mpf(hp.lam * hp.N) * mpmath.eye(len(z_new))
    rhs = mpmath.matrix((pr.Z.T @ pr.y - pr.y[0] * pr.Z[0]).tolist()) + mpmath.mpf(y_new) * zz
    exact = np.array([float(x) for x in mpmath.lu_solve(M, rhs)])
    np.testing.assert_allclose(got, exact, atol=1e-10)
    assert np.abs(experiments._direct_ridge(pr, 0, z_new, y_new) - exact).max() > 1e3 * np.abs(got - exact).max()


def test_figure5_standard_corner_is_t_steps_and_clip_sigma_half():
    """The corner the paper's claim is judged against is the configuration fixed before any run."""
    assert experiments.BRACKET[experiments.STANDARD_CORNER] == dict(epochs=False, clip="sigma")
    assert experiments.STANDARD_CORNER in experiments.dpsgd_variants("prv", 256, bracket=False)
