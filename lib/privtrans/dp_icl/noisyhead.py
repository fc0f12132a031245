"""NoisyHead (Algorithm 1): clipped responses, projected features, full-batch projected noisy GD.

The update of Algorithm 1 is

    Gamma <- Pi_R( (1 - 2 lam eta0) Gamma - eta0/N sum_k (<Gamma, Zt_k> - clip(y_k)) Zt_k + z_t ),
    vec z_t ~ N(0, s^2 I),  s^2 = 2 eta0^2 T^2 sigma^2 log(1.25 T / delta) / (eps^2 N^2).

Its data term is the gradient of (1/2N) sum (.)^2 while the loss (2.6) has (1/N) sum (.)^2, so
with the noise and the projection off it converges to the ridge solution with **2 lam**, i.e.
(A + 2 lam I)^{-1} b, not to Gamma* of (2.7). We keep the paper's update (the
authors' code does the same) and the tests pin this down.

Many chains (e.g. one per epsilon, or one per horizon T) run side by side on the same data with
the same Gamma^0 and the same standard-normal draws, each scaled by its own s: common random
numbers, so differences between chains are the noise level, not Monte-Carlo luck.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from ..book import dry
from .constants import Hyper
from .task import Prompts, Stats, features, stats


def clip_responses(y: np.ndarray, C: float) -> np.ndarray:
    """clip_C(y) = argmin_{|v| <= C} |y - v|."""
    if C < 0:
        raise ValueError(f"clip constant C must be >= 0, got {C}")
    return np.clip(y, -C, C)


def project(M: np.ndarray, radius: float) -> np.ndarray:
    """Pi_radius on the last axis: rescale every row whose Euclidean (= Frobenius) norm exceeds radius."""
    if radius < 0:
        raise ValueError(f"projection radius must be >= 0, got {radius}")
    if math.isinf(radius):
        return M
    norms = np.linalg.norm(M, axis=-1, keepdims=True)
    return M * np.minimum(1.0, radius / np.maximum(norms, 1e-300))


def private_features(prompts: Prompts, hp: Hyper) -> tuple[np.ndarray, np.ndarray]:
    """(vec Zt_k, clip_C(y_{k,L+1})): responses clipped, then Z projected onto the G-ball."""
    Yc = clip_responses(prompts.Y, hp.C)
    Zt = project(features(prompts.X, Yc), hp.G)
    return Zt, Yc[:, -1]


def noise_std(hp: Hyper, eps, delta: float, T: int | np.ndarray | None = None):
    """Per-entry, per-step noise s.d. of Algorithm 1: sqrt(2) eta0 T sigma sqrt(log(1.25T/delta)) / (eps N)."""
    T = hp.T if T is None else T
    eps = np.asarray(eps, dtype=float)
    T = np.asarray(T, dtype=float)
    if np.any(eps <= 0) or not 0 < delta < 1 or np.any(T < 1):
        raise ValueError(f"need eps > 0, 0 < delta < 1, T >= 1; got eps={eps}, delta={delta}, T={T}")
    out = math.sqrt(2.0) * hp.eta0 * T * hp.sigma * np.sqrt(np.log(1.25 * T / delta)) / (eps * hp.N)
    return float(out) if out.ndim == 0 else out


def initial_gamma(rng: np.random.Generator, d: int, R: float, scale: float = 0.1) -> np.ndarray:
    """Gamma^0 = Pi_R(0.1 N(0, I)) as in the authors' code (the paper leaves it unspecified)."""
    return project(scale * rng.standard_normal(d), R)


@dataclass
class Run:
    gamma: np.ndarray                     # (m, d): chain j stopped after steps[j]
    checkpoints: dict = field(default_factory=dict)   # {t: (m, d)} iterates after t steps
    norms: np.ndarray | None = None       # (max steps, m) Frobenius norms after every step


def noisy_gd(st: Stats, lam: float, eta0: float, steps, s, R: float, gamma0: np.ndarray,
             rng: np.random.Generator | None = None, checkpoints=(), trace: bool = False,
             common_noise: bool = True) -> Run:
    """Run m chains of projected noisy GD on the sufficient statistics (A, b).

    steps: int or (m,) ints, chain j stops after steps[j] updates. s: float or (m,) noise s.d.
    R: projection radius (math.inf for none). gamma0: (d,) or (m, d). With common_noise one
    standard-normal draw per step is shared by all chains (scaled by each chain's s).
    """
    s = np.atleast_1d(np.asarray(s, dtype=float))
    steps = np.atleast_1d(np.asarray(steps))
    m = max(len(s), len(steps), 1 if np.ndim(gamma0) == 1 else len(gamma0))
    s = np.broadcast_to(s, (m,)).copy()
    steps = np.broadcast_to(steps, (m,)).astype(int)
    if np.any(steps < 0) or np.any(s < 0):
        raise ValueError("steps and noise s.d. must be non-negative")
    if np.any(s > 0) and rng is None:
        raise ValueError("a noisy run needs an rng")
    d = len(st.b)
    G = np.array(np.broadcast_to(gamma0, (m, d)), dtype=float)
    # gradient through A (d^2 per chain-step) or through Z (2 N d per chain-step, no N d^2 set-up)
    use_z = st.A is None and st.Z is not None and 2 * int(steps.sum()) * st.N < d * st.N
    A = None if use_z else st.gram()
    shrink = 1.0 - 2.0 * lam * eta0
    cps = {int(t): None for t in checkpoints}
    if 0 in cps:
        cps[0] = G.copy()
    norms = np.empty((int(steps.max(initial=0)), m)) if trace else None
    if trace and dry.active():  # a dry run cuts the steps: the norms it never reaches stay NaN
        norms[:] = np.nan
    noisy = np.any(s > 0)
    # the per-step products have few rows (one per chain): memory-bound, so extra BLAS threads only
    # add synchronisation (and stall badly on a shared machine)
    with threadpool_limits(1, user_api="blas"):
        _iterate(G, st, A, use_z, shrink, eta0, steps, s, R, rng, noisy, common_noise, cps, norms, trace)
    if dry.active():  # a dry run cut the steps: checkpoints it never reached get the last iterate
        for t, v in cps.items():
            if v is None:
                cps[t] = G.copy()
    return Run(G, cps, norms)


def _iterate(G, st, A, use_z, shrink, eta0, steps, s, R, rng, noisy, common_noise, cps, norms, trace):
    d = G.shape[1]
    for t in dry.loop(range(int(steps.max(initial=0))), "NoisyHead steps"):
        act = steps > t
        Ga = G[act]
        AG = (Ga @ st.Z.T) @ st.Z / st.N if use_z else Ga @ A     # A is symmetric
        upd = shrink * Ga - eta0 * (AG - st.b)
        if noisy:
            xi = rng.standard_normal(d) if common_noise else rng.standard_normal((int(act.sum()), d))
            upd = upd + s[act, None] * xi
        G[act] = project(upd, R)
        if trace:
            norms[t] = np.linalg.norm(G, axis=1)
        if t + 1 in cps:
            cps[t + 1] = G.copy()


def noisyhead(prompts: Prompts, hp: Hyper, eps, delta: float, rng: np.random.Generator,
              gamma0: np.ndarray | None = None, T: int | None = None) -> np.ndarray:
    """Algorithm 1 end to end on raw prompts; one chain per eps (common random numbers). Returns (m, D^2)."""
    T = hp.T if T is None else T
    Zt, yt = private_features(prompts, hp)
    st = stats(Zt, yt)
    if gamma0 is None:
        gamma0 = initial_gamma(rng, Zt.shape[1], hp.R)
    s = noise_std(hp, np.atleast_1d(eps), delta, T)
    return noisy_gd(st, hp.lam, hp.eta0, T, s, hp.R, gamma0, rng).gamma
