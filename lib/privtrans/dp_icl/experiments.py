"""One Monte-Carlo repetition of every figure, and the loops over the paper's grids.

Every repetition draws one training set and one test set and reuses them for every epsilon,
delta, horizon T and method (common random numbers): the curves then differ by the
noise level, not by which data each point happened to see. Results come back as long
DataFrames (one row per repetition and setting) so the notebooks only summarise and plot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from ..book import dry, workers
from . import accounting, baselines
from .constants import Hyper, high_dim, low_dim, over_param, robustness
from .noisyhead import initial_gamma, noise_std, noisy_gd, private_features
from .task import Prompts, Stats, excess_risk_z, features, ridge, sample_prompts, stats, test_mse

# Method labels of the long result frames: the notebooks select rows and the readouts read values by them
GD = "GD (non-private)"
DP_RIDGE = "DP-ridge"
RIDGE_TEST_MSE = "ridge oracle test MSE"
Y2_TEST = "E[y^2] on test"
DPSGD_ADD_REMOVE = "DP-SGD (opacus, add/remove)"
DPSGD_REPLACE_ONE = "DP-SGD (opacus, replace-one: 2z)"
#: the rest of Figure 5's bracket over what the paper leaves unstated (DPSGD_REPLACE_ONE is its first
#: corner: T steps, max_grad_norm = sigma/2); every corner is replace-one (z doubled)
DPSGD_EPOCHS = "DP-SGD (replace-one, T epochs)"
DPSGD_CLIP_C = "DP-SGD (replace-one, clip C)"
DPSGD_EPOCHS_CLIP_C = "DP-SGD (replace-one, T epochs, clip C)"
BRACKET = {DPSGD_REPLACE_ONE: dict(epochs=False, clip="sigma"), DPSGD_EPOCHS: dict(epochs=True, clip="sigma"),
           DPSGD_CLIP_C: dict(epochs=False, clip="C"), DPSGD_EPOCHS_CLIP_C: dict(epochs=True, clip="C")}
#: the corner the paper's NoisyHead is judged against: the DP-SGD configuration fixed before any run:
#: T counts optimiser steps, as "identical iteration
#: counts" reads, and max_grad_norm = sigma/2 = G(C + RG), the per-sample gradient bound of NoisyHead's
#: own sensitivity; the other corners are readings of what the paper leaves unstated
STANDARD_CORNER = DPSGD_REPLACE_ONE


def noisyhead(accountant: str = "basic") -> str:
    """Label of NoisyHead with its noise calibrated by ``accountant`` ('basic' = the paper's)."""
    return f"NoisyHead ({accountant})"


@dataclass
class Problem:
    hp: Hyper
    st_raw: Stats        # unclipped, unprojected: what the ridge oracle and plain GD see
    st_priv: Stats       # clipped responses, projected features: what NoisyHead sees
    Z: np.ndarray        # raw vec Z of the training prompts
    y: np.ndarray        # raw query responses
    Zt: np.ndarray
    yt: np.ndarray
    gamma_star: np.ndarray
    Z_test: np.ndarray
    y_test: np.ndarray

    @property
    def d(self) -> int:
        return self.Z_test.shape[1]

    def excess(self, gamma, ref=None) -> np.ndarray:
        """Excess risk over Gamma* (or over ``ref``) on this problem's test prompts."""
        return excess_risk_z(gamma, self.gamma_star if ref is None else ref, self.Z_test)


def problem_from_prompts(hp: Hyper, train: Prompts, test: Prompts) -> Problem:
    Z = features(train.X, train.Y)
    st_raw = stats(Z, train.y_query)
    Zt, yt = private_features(train, hp)
    Z_test = features(test.X, test.Y)
    return Problem(hp, st_raw, stats(Zt, yt), Z, train.y_query, Zt, yt, ridge(st_raw, hp.lam), Z_test, test.y_query)


def make_problem(rng: np.random.Generator, hp: Hyper, n_test: int, tau: float = 0.0) -> Problem:
    train = sample_prompts(rng, hp.N, hp.L, hp.D, tau)
    test = sample_prompts(rng, n_test, hp.L, hp.D, tau)
    return problem_from_prompts(hp, train, test)


def gd_excess(pr: Problem, gamma0, T, checkpoints=()) -> np.ndarray | dict:
    """Non-private GD of the authors' code: unclipped Z and y, no projection, no noise."""
    run = noisy_gd(pr.st_raw, pr.hp.lam, pr.hp.eta0, T, 0.0, math.inf, gamma0, checkpoints=checkpoints)
    if len(checkpoints):
        return {t: float(pr.excess(g[0])) for t, g in run.checkpoints.items()}
    return float(pr.excess(run.gamma[0]))


def summarise(df: pd.DataFrame, by: list[str], col: str) -> pd.DataFrame:
    """mean, s.d., standard error and count of ``col`` per group."""
    g = df.groupby(by, sort=True, dropna=False)[col]
    out = g.agg(mean="mean", sd="std", n="count").reset_index()
    out["se"] = out["sd"] / np.sqrt(out["n"])
    return out


# ----------------------------------------------------------------------------- Figure 1 / 5 / Table 1
def dpsgd_variants(accountant: str, batch_size: int, bracket: bool = True) -> dict[str, dict]:
    """Figure 5's DP-SGD runs: opacus' own add/remove-one guarantee, z doubled for the paper's
    replace-one adjacency (conservative) and, with ``bracket``, the replace-one runs at the other
    readings of what the paper leaves out (T as epochs; max_grad_norm = C)."""
    out = {DPSGD_ADD_REMOVE: dict(accountant=accountant, batch_size=batch_size, replace_one=False)}
    for label, how in (BRACKET if bracket else {DPSGD_REPLACE_ONE: BRACKET[DPSGD_REPLACE_ONE]}).items():
        out[label] = dict(accountant=accountant, batch_size=batch_size, replace_one=True, **how)
    return out


def low_dim_grid(rng, Ns, eps, delta, reps, n_test, accountants=("basic",), dp_ridge=False,
                 dpsgd: dict | None = None) -> pd.DataFrame:
    """Low-dim NoisyHead (noise from each accountant at the same eps), optional DP-ridge and DP-SGD.

    dpsgd: {"label": {"accountant": "prv", "replace_one": bool, "batch_size": 256}} variants.
    Each N's noise multipliers (numerical accountant searches) and its DP-SGD runs (each seeded by
    its own draw from ``rng``, in the loop's order) are computed on every core
    (``book.workers``): the frame is the same as the loop's in one process (tested).
    """
    rows = []
    eps = np.asarray(eps, dtype=float)
    noise = workers.values_in_parallel([partial(_noise_multipliers, int(N), eps, delta, accountants, dpsgd or {})
                                        for N in Ns])
    for N, (zs, sgd_z) in zip(Ns, noise):
        hp = low_dim(int(N))
        runs = []  # (row index, DP-SGD call): run on every core once this N's repetitions are drawn
        for b in dry.loop(range(reps), "repetitions", keep=2):
            pr = make_problem(rng, hp, n_test)
            g0 = initial_gamma(rng, pr.d, hp.R)
            base = dict(N=int(N), rep=b, T=hp.T)
            rows.append(dict(base, method=GD, eps=np.nan, excess=gd_excess(pr, g0, hp.T)))
            for a, z in zs.items():
                s = z * hp.sensitivity
                ex = pr.excess(noisy_gd(pr.st_priv, hp.lam, hp.eta0, hp.T, s, hp.R, g0, rng).gamma)
                for e, zz, x in zip(eps, z, ex):
                    rows.append(dict(base, method=noisyhead(a), eps=e, z=zz, excess=float(x)))
            if dp_ridge:
                ex = pr.excess(baselines.dp_ridge(pr.st_priv, hp, eps, delta, rng))
                for e, x in zip(eps, ex):
                    rows.append(dict(base, method=DP_RIDGE, eps=e, excess=float(x)))
            for k, v in (dpsgd or {}).items():
                for e in eps:
                    z = sgd_z[k][float(e)]
                    runs.append((len(rows), partial(_dpsgd_excess, pr.Zt, pr.yt, pr.gamma_star, pr.Z_test, hp, z, g0,
                                                    int(rng.integers(2**31)), delta, v)))
                    rows.append(dict(base, method=k, eps=e, z=z))
            rows.append(dict(base, method=RIDGE_TEST_MSE, eps=np.nan,
                             excess=float(test_mse(pr.gamma_star, pr.Z_test, pr.y_test)[0])))
            rows.append(dict(base, method=Y2_TEST, eps=np.nan, excess=float(np.mean(pr.y_test**2))))
        # a dry run keeps two repetitions: their runs book all ``reps``' (one process, in this loop)
        booked = partial(dry.loop, what="DP-SGD runs", total=reps * len(dpsgd or {}) * len(eps), keep=max(1, len(runs)))
        for (i, _), (spent, excess) in zip(runs, workers.values_in_parallel([c for _, c in runs], progress=booked)):
            rows[i].update(eps_spent=spent, excess=excess)
    return pd.DataFrame(rows)


def _noise_multipliers(N: int, eps: np.ndarray, delta: float, accountants, dpsgd: dict) -> tuple[dict, dict]:
    """N's noise multipliers: NoisyHead's per accountant (an array over eps) and each DP-SGD
    variant's per eps."""
    hp = low_dim(N)
    zs = {a: np.array([accounting.noise_multiplier(a, float(e), delta, hp.T) for e in eps]) for a in accountants}
    sgd_z = {k: {float(e): baselines.dpsgd_noise_multiplier(hp, float(e), delta, v.get("batch_size", 256),
                                                            v.get("accountant", "prv"), v.get("replace_one", False),
                                                            v.get("epochs", False))
                 for e in eps} for k, v in dpsgd.items()}
    return zs, sgd_z


def _dpsgd_excess(Zt, yt, gamma_star, Z_test, hp: Hyper, z: float, g0: np.ndarray, seed: int, delta: float,
                  v: dict) -> tuple[float, float]:
    """One DP-SGD run of Figure 5 (a variant ``v`` of ``dpsgd_variants``): (ε opacus reports, excess
    risk on the test prompts). Takes the arrays it reads, not the problem: a grid holds one call per
    run until its N's repetitions are drawn."""
    g, spent = baselines.dpsgd(Zt, yt, hp, z, g0, seed=seed, delta=delta, batch_size=v.get("batch_size", 256),
                               accountant=v.get("accountant", "prv"), epochs=v.get("epochs", False),
                               clip=v.get("clip", "sigma"))
    return spent, float(excess_risk_z(g, gamma_star, Z_test))


def dpsgd_ratios(means: pd.DataFrame, accountant: str) -> pd.DataFrame:
    """Figure 5's comparisons per (N, eps), from the wide table of means (one column per method):
    paper-calibrated and ``accountant``-calibrated NoisyHead over each DP-SGD variant (<= 1: NoisyHead
    matches or beats it)."""
    paper, tight = means[noisyhead("basic")], means[noisyhead(accountant)]
    return pd.DataFrame({"NoisyHead / DP-SGD (replace-one)": paper / means[DPSGD_REPLACE_ONE],
                         "NoisyHead / DP-SGD (add/remove)": paper / means[DPSGD_ADD_REMOVE],
                         "tight NoisyHead / DP-SGD (replace-one)": tight / means[DPSGD_REPLACE_ONE]})


def dpsgd_spent(df: pd.DataFrame) -> pd.DataFrame:
    """The largest epsilon opacus reported over the repetitions, per (N, eps, DP-SGD variant)."""
    sgd = df[df.method.isin([DPSGD_ADD_REMOVE, *BRACKET])]
    return sgd.groupby(["N", "eps", "method"], as_index=False)["eps_spent"].max()


# ----------------------------------------------------------------------------- Figure 2
def high_dim_grid(rng, Ns, eps, deltas, reps, n_test, T=5) -> pd.DataFrame:
    rows = []
    eps = np.asarray(eps, dtype=float)
    for N in Ns:
        hp = high_dim(int(N), T=T)
        for b in dry.loop(range(reps), "repetitions", keep=2):
            pr = make_problem(rng, hp, n_test)
            g0 = initial_gamma(rng, pr.d, hp.R)
            base = dict(N=int(N), D=hp.D, rep=b)
            rows.append(dict(base, method=GD, delta=np.nan, eps=np.nan,
                             excess=gd_excess(pr, g0, hp.T)))
            s = np.concatenate([noise_std(hp, eps, d) for d in deltas])
            ex = pr.excess(noisy_gd(pr.st_priv, hp.lam, hp.eta0, hp.T, s, hp.R, g0, rng).gamma)
            k = 0
            for d in deltas:
                for e in eps:
                    rows.append(dict(base, method=noisyhead(), delta=d, eps=e, excess=float(ex[k])))
                    k += 1
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- Figure 3
def early_stopping(rng, N, Ts, eps, delta, reps, n_test) -> pd.DataFrame:
    """Cost of descent (plain GD checkpointed at every T) and of privacy (NoisyHead with horizon T)."""
    hp = over_param(int(N))
    Ts = np.asarray(sorted(int(t) for t in Ts))
    s = noise_std(hp, eps, delta, Ts)
    rows = []
    for b in dry.loop(range(reps), "repetitions", keep=2):
        pr = make_problem(rng, hp, n_test)
        g0 = initial_gamma(rng, pr.d, hp.R)
        desc = gd_excess(pr, g0, int(Ts.max()), checkpoints=Ts)
        dp = pr.excess(noisy_gd(pr.st_priv, hp.lam, hp.eta0, Ts, s, hp.R, g0, rng).gamma)
        for t, x, sd in zip(Ts, dp, s):
            rows.append(dict(rep=b, T=int(t), noise_sd=float(sd), descent=desc[int(t)], privacy=float(x)))
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- Figure 4
def bad_prompt(rng, L, D, alpha, mu, shift_query_response=True) -> Prompts:
    """A fresh prompt with x + mu on every coordinate of every token (query included) and y + alpha
    on the context responses and, as in the authors' code, also on the query response."""
    p = sample_prompts(rng, 1, L, D)
    X = p.X + mu
    Y = p.Y.copy()
    Y[:, :L] += alpha
    if shift_query_response:
        Y[:, L] += alpha
    return Prompts(X, Y)


def _replace_ridge(st: Stats, lam: float, z_old, y_old, z_new, y_new) -> np.ndarray:
    """Ridge after replacing one prompt, via a rank-one (Sherman-Morrison) update.

    The bad prompt's Z is ~alpha ~ 1e8 in size; forming (lam I + A) with it directly would lose
    all precision at lam = 0.01. With M1 = the well-conditioned system without the replaced prompt,
    v = z_new / sqrt(N), w = M1^{-1} v, u = M1^{-1} r0 (r0 without the new prompt's term):
    Gamma = u + w (y_new / sqrt(N) - v.u) / (1 + v.w), where no two huge terms cancel."""
    N = st.N
    M1 = st.gram() - np.outer(z_old, z_old) / N + lam * np.eye(len(z_old))
    r0 = st.b - y_old * z_old / N
    v = z_new / math.sqrt(N)
    u = np.linalg.solve(M1, r0)
    w = np.linalg.solve(M1, v)
    return u + w * (y_new / math.sqrt(N) - v @ u) / (1.0 + v @ w)


def _direct_ridge(pr: "Problem", i: int, z_new, y_new) -> np.ndarray:
    """The same ridge solved the authors' way: one dense solve of (N lam I + Z^T Z) with the bad
    prompt inside. Its condition number reaches ~1e15 at alpha ~ 1e8, so the answer is mostly
    rounding error; kept to show where the paper's growing ridge curve comes from."""
    Z = pr.Z.copy()
    y = pr.y.copy()
    Z[i], y[i] = z_new, y_new
    M = Z.T @ Z + pr.hp.lam * pr.hp.N * np.eye(Z.shape[1])
    try:
        return np.linalg.solve(M, Z.T @ y)
    except np.linalg.LinAlgError:        # numerically singular: least squares, as garbage-in as the rest
        return np.linalg.lstsq(M, Z.T @ y, rcond=None)[0]


def _dp_run(st: Stats, hp: Hyper, s: float, seed: int) -> np.ndarray:
    """One NoisyHead run whose Gamma^0 and noise come from ``seed`` (same seed = same randomness)."""
    r = np.random.default_rng(seed)
    g0 = initial_gamma(r, len(st.b), hp.R)
    return noisy_gd(st, hp.lam, hp.eta0, hp.T, s, hp.R, g0, r).gamma[0]


def robustness_grid(rng, cs, ps, reps, n_test, eps, delta, mu=1.0, N=5000, L=500, D=5, lam=0.01,
                    shift_query_response=True) -> pd.DataFrame:
    """Risk_Ridge and Risk_DP of (5.3) for every (c, p), alpha = c N^p, one bad prompt per run.

    ``dp`` follows the authors' code: the good and bad NoisyHead runs draw independent Gamma^0 and
    noise, so it measures run-to-run randomness as much as the perturbation. ``dp_crn`` reuses the
    good run's Gamma^0 and noise for the bad run, isolating the perturbation's own effect.
    """
    hp = robustness(N, L, D, lam)
    s = noise_std(hp, eps, delta)
    rows = []
    for b in dry.loop(range(reps), "repetitions", keep=2):
        pr = make_problem(rng, hp, n_test)
        i = int(rng.integers(hp.N))
        seed_good = int(rng.integers(2**63))
        g_good = _dp_run(pr.st_priv, hp, s, seed_good)
        g_direct = np.linalg.solve(pr.Z.T @ pr.Z + lam * hp.N * np.eye(pr.d), pr.Z.T @ pr.y)   # clean, same way
        for c in cs:
            for p in ps:
                alpha = c * float(hp.N) ** p
                bad = bad_prompt(rng, L, D, alpha, mu, shift_query_response)
                z_new = features(bad.X, bad.Y)[0]
                g_star_bad = _replace_ridge(pr.st_raw, lam, pr.Z[i], pr.y[i], z_new, bad.y_query[0])
                zt_new, yt_new = private_features(bad, hp)
                st_bad = Stats(pr.st_priv.gram() + (np.outer(zt_new[0], zt_new[0]) - np.outer(pr.Zt[i], pr.Zt[i])) / hp.N,
                               pr.st_priv.b + (yt_new[0] * zt_new[0] - pr.yt[i] * pr.Zt[i]) / hp.N, hp.N)
                rows.append(dict(rep=b, c=c, p=p, alpha=alpha,
                                 ridge=float(pr.excess(g_star_bad)),
                                 ridge_direct=float(pr.excess(_direct_ridge(pr, i, z_new, bad.y_query[0]), ref=g_direct)),
                                 dp=float(pr.excess(_dp_run(st_bad, hp, s, int(rng.integers(2**63))), ref=g_good)),
                                 dp_crn=float(pr.excess(_dp_run(st_bad, hp, s, seed_good), ref=g_good))))
    return pd.DataFrame(rows)


def theorem_conditions(hp, alpha: float, mu: float) -> dict:
    """Theorem 5.1's two conditions as ratios: lam / (C^2 / L) must exceed 1, and
    alpha^2 mu^4 / (N L lam) must stay below the theorem's (unstated) constant c."""
    return {"lam_over_C2_per_L": hp.lam * hp.L / hp.C**2,
            "alpha2_mu4_over_NLlam": alpha**2 * mu**4 / (hp.N * hp.L * hp.lam)}


def theorem_region_grid(rng, alphas, reps, n_test, eps, delta, mu=1.0, N=5000, L=500, D=5, lam=0.1) -> pd.DataFrame:
    """``robustness_grid`` at response shifts ``alphas`` themselves (alpha = 1 * N^p): the bad prompt
    where Theorem 5.1 applies. Every alpha of a repetition shares its data, start and noise (the
    ``dp_crn`` column), so per repetition the columns are paired."""
    ps = [math.log(a) / math.log(N) for a in alphas]
    df = robustness_grid(rng, [1.0], ps, reps, n_test, eps, delta, mu, N, L, D, lam)
    df["alpha"] = [min(alphas, key=lambda a: abs(a - x)) for x in df["alpha"]]  # undo N^p's rounding
    return df


#: Figure 4's measured quantities (columns of ``robustness_grid``) and their plot labels
ROBUSTNESS = {"ridge": "Ridge (stable solve)", "ridge_direct": "Ridge (direct solve, as the code)",
              "dp": "NoisyHead (independent runs, as the code)", "dp_crn": "NoisyHead (common random numbers)"}


def robustness_summary(df: pd.DataFrame, by=("c", "p")) -> pd.DataFrame:
    """``summarise`` of every Figure 4 quantity, stacked: one row per (quantity, *by)."""
    return pd.concat([summarise(df, list(by), k).assign(quantity=k, method=label)
                      for k, label in ROBUSTNESS.items()], ignore_index=True)


# ----------------------------------------------------------------------------- Figure 6
def text_curves(rng, corpus, Ts, eps, delta, runs, n_train, n_test, L, lam, step_factor) -> pd.DataFrame:
    """GD and NoisyHead excess risk vs T on news-article prompts; a fresh split and prompts per run."""
    from .constants import text as text_hyper
    from .text import split_prompts

    Ts = np.asarray(sorted(int(t) for t in Ts))
    rows = []
    for r in dry.loop(range(runs), "repetitions", keep=2):
        train, test = split_prompts(corpus, rng, n_train, n_test, L)
        hp = text_hyper(n_train, L, corpus.x.shape[1], lam, step_factor)
        pr = problem_from_prompts(hp, train, test)
        g0 = initial_gamma(rng, pr.d, hp.R)
        gd = gd_excess(pr, g0, int(Ts.max()), checkpoints=Ts)
        s = noise_std(hp, eps, delta, Ts)
        dp = pr.excess(noisy_gd(pr.st_priv, hp.lam, hp.eta0, Ts, s, hp.R, g0, rng).gamma)
        for t, x in zip(Ts, dp):
            rows.append(dict(rep=r, T=int(t), gd=gd[int(t)], noisyhead=float(x)))
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- accountants (extension)
def accountant_gain(means: pd.DataFrame, tight: str) -> pd.Series:
    """Paper-calibrated NoisyHead's excess risk over ``tight``-calibrated NoisyHead's, from the wide
    table of means (one column per method); > 1 where the tight accountant helps."""
    return (means[noisyhead()] / means[noisyhead(tight)]).rename(f"gain: basic / {tight}")


def epsilon_table(Ns, eps, delta, accountants=accounting.ACCOUNTANTS) -> pd.DataFrame:
    """For the paper's low-dim noise: the eps each accountant certifies, and the z each needs for eps."""
    rows = []
    for N in Ns:
        hp = low_dim(int(N))
        for e in eps:
            z_paper = accounting.paper_noise_multiplier(float(e), delta, hp.T)
            row = dict(N=int(N), T=hp.T, eps_target=float(e), z_paper=z_paper)
            for a in accountants:
                row[f"eps_{a}"] = accounting.epsilon(a, z_paper, hp.T, delta)
                row[f"z_{a}"] = accounting.noise_multiplier(a, float(e), delta, hp.T)
            rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- tables
def wide(summary: pd.DataFrame, index: str, columns: str, value: str = "mean") -> pd.DataFrame:
    return summary.pivot(index=index, columns=columns, values=value).sort_index()


def log_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """ln(mean) with delta-method s.e. (se/mean) and s.d. (sd/mean), for 'error bars after log transformation'."""
    out = summary.copy()
    out["se"] = summary["se"] / summary["mean"]
    out["sd"] = summary["sd"] / summary["mean"]
    out["mean"] = np.log(summary["mean"])
    return out
