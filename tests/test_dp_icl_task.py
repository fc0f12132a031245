"""privtrans.dp_icl.task: tokens on the sphere, the features Z equal the attention head, the ridge oracle
and the excess risk."""

from __future__ import annotations

import math

import numpy as np

from privtrans.dp_icl import task


# ----------------------------------------------------------------------------- task
def test_tokens_on_sphere_and_noiseless_responses(rng):
    p = task.sample_prompts(rng, 50, 7, 4)
    assert p.X.shape == (50, 8, 4) and p.Y.shape == (50, 8)
    np.testing.assert_allclose(np.linalg.norm(p.X, axis=-1), 1.0, atol=1e-12)
    # one w per prompt: the responses of a prompt are exactly linear in its tokens
    for k in range(5):
        w, *_ = np.linalg.lstsq(p.X[k], p.Y[k], rcond=None)
        np.testing.assert_allclose(p.X[k] @ w, p.Y[k], atol=1e-10)


def test_features_equal_the_attention_head(rng):
    """<Gamma, Z> equals the full linear-attention read-out (2.2) with w12 = 0.

    Written out, f(E)_{(D+1, L+1)} = w22 (sum_i y_i x_i)^T W11 x_q / L, i.e. <Gamma, Z> with
    Gamma = (w22 W11)^T: the paper's Gamma = w22 W11 is the same up to this transpose convention."""
    D, L = 3, 6
    p = task.sample_prompts(rng, 1, L, D)
    W11, w22 = rng.standard_normal((D, D)), 1.7
    W_pv = np.zeros((D + 1, D + 1))
    W_pv[D, D] = w22
    W_kq = np.zeros((D + 1, D + 1))
    W_kq[:D, :D] = W11
    E = task.embed(p.X[0], p.Y[0])
    Z = task.features(p.X, p.Y)[0]
    assert math.isclose(task.attention_prediction(E, W_pv, W_kq), float((w22 * W11).T.ravel() @ Z), rel_tol=1e-10)
    # and Z is (1/L) x_q (sum y_i x_i)^T by brute force
    brute = np.outer(p.X[0, L], sum(p.Y[0, i] * p.X[0, i] for i in range(L))) / L
    np.testing.assert_allclose(Z, brute.ravel(), atol=1e-14)


def test_ridge_oracle_minimises_the_loss(rng):
    p = task.sample_prompts(rng, 200, 10, 3)
    Z = task.features(p.X, p.Y)
    y = p.y_query
    lam = 0.3
    g = task.ridge(task.stats(Z, y), lam)
    loss = lambda G: np.mean((y - Z @ G) ** 2) + lam * G @ G  # noqa: E731  (2.6)
    # closed form (2.7) by brute force
    brute = np.linalg.solve(lam * len(y) * np.eye(9) + Z.T @ Z, Z.T @ y)
    np.testing.assert_allclose(g, brute, rtol=1e-10)
    for _ in range(5):
        assert loss(g) < loss(g + 1e-3 * rng.standard_normal(9))


def test_excess_risk_is_the_test_average(rng):
    Zt = rng.standard_normal((40, 4))
    a, b = rng.standard_normal(4), rng.standard_normal(4)
    brute = np.mean([((a - b) @ z) ** 2 for z in Zt])
    assert math.isclose(task.excess_risk(a, b, task.second_moment(Zt)), brute, rel_tol=1e-12)
    assert math.isclose(task.excess_risk_z(a, b, Zt), brute, rel_tol=1e-12)
