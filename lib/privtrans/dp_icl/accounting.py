"""Privacy of NoisyHead's noise, by the paper's basic composition and by tighter accountants.

NoisyHead adds N(0, s^2 I) to a full-batch update whose replace-one L2 sensitivity is
Delta = eta0 sigma / N, T times. That is the Gaussian mechanism with sampling rate q = 1 and
noise multiplier z = s / Delta composed T times. The paper calibrates z by the classical
Gaussian mechanism at (eps/T, delta/T) per step plus basic composition:

    z_paper = T sqrt(2 log(1.25 T / delta)) / eps.

The same mechanism can be accounted for by

- zCDP (Bun & Steinke 2016): rho = T / (2 z^2), eps = rho + 2 sqrt(rho log(1/delta));
- RDP via opacus' ``RDPAccountant`` (history [(z, 1.0, T)]) with orders far beyond its default
  list (the default stops at 63, far too small for z ~ 1000);
- PRV via opacus' ``PRVAccountant`` (numerical composition of privacy-loss distributions);
- exactly: for q = 1 the T-fold composition is mu-GDP with mu = sqrt(T)/z, whose (eps, delta)
  curve is known in closed form (Dong, Roth & Su 2019; Balle & Wang 2018).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

# opacus (with torch, about 4 s to import) is imported only by the functions that call it: the basic,
# zCDP and exact accountants, all that most of the chapter's notebooks use, need neither

#: RDP orders from 1.01 to 1e6: the optimum for z ~ 1000 sits near alpha ~ 1e4
EXTENDED_ALPHAS = tuple(np.round(np.concatenate([np.linspace(1.01, 10, 90), np.geomspace(10.5, 1e6, 400)]), 6))


@lru_cache(maxsize=1)
def subsampled_alphas() -> tuple:
    """For subsampled steps (q < 1), opacus's own orders: an integer-heavy grid left out the fractional orders
    between 1.1 and 10.9 where the optimum lies for moderate z, and gave epsilon up to 0.8 % above opacus's."""
    from opacus.accountants import RDPAccountant

    return tuple(RDPAccountant.DEFAULT_ALPHAS)


ACCOUNTANTS = ("basic", "zcdp", "rdp", "prv", "exact")


def _check(z, T, delta):
    if z <= 0 or T < 1 or not 0 < delta < 1:
        raise ValueError(f"need z > 0, T >= 1, 0 < delta < 1; got z={z}, T={T}, delta={delta}")


def paper_noise_multiplier(eps: float, delta: float, T: int) -> float:
    """z of Algorithm 1: s / (eta0 sigma / N) = T sqrt(2 log(1.25 T / delta)) / eps."""
    if eps <= 0 or T < 1 or not 0 < delta < 1:
        raise ValueError(f"need eps > 0, T >= 1, 0 < delta < 1; got {eps}, {T}, {delta}")
    return T * math.sqrt(2.0 * math.log(1.25 * T / delta)) / eps


def basic_epsilon(z: float, T: int, delta: float) -> float:
    """Inverse of the paper's calibration: classical Gaussian at delta/T per step, summed over T steps."""
    _check(z, T, delta)
    return T * math.sqrt(2.0 * math.log(1.25 * T / delta)) / z


def zcdp_epsilon(z: float, T: int, delta: float) -> float:
    _check(z, T, delta)
    rho = T / (2.0 * z * z)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def exact_epsilon(z: float, T: int, delta: float) -> float:
    """Tight eps of T full-batch Gaussian steps: mu-GDP with mu = sqrt(T)/z."""
    _check(z, T, delta)
    mu = math.sqrt(T) / z

    def gap(e):
        return norm.cdf(-e / mu + mu / 2) - math.exp(e + norm.logcdf(-e / mu - mu / 2)) - delta

    if gap(0.0) <= 0:
        return 0.0
    hi = 1.0
    while gap(hi) > 0:
        hi *= 2
    return brentq(gap, 0.0, hi, xtol=1e-12, rtol=1e-10)


def rdp_epsilon(z: float, T: int, delta: float, q: float = 1.0, alphas=None) -> float:
    from privtrans.shared.dp.accounting import opacus_epsilon

    _check(z, T, delta)
    alphas = alphas or (EXTENDED_ALPHAS if q == 1.0 else subsampled_alphas())
    return opacus_epsilon(z, q, T, delta, "rdp", alphas=alphas)


def prv_epsilon(z: float, T: int, delta: float, q: float = 1.0, eps_error: float | None = None) -> float:
    """opacus PRV upper bound; eps_error defaults to 1% of the RDP value (its default 0.01 is too coarse here)."""
    from privtrans.shared.dp.accounting import opacus_epsilon

    _check(z, T, delta)
    if eps_error is None:
        eps_error = max(1e-5, 0.01 * rdp_epsilon(z, T, delta, q))
    return opacus_epsilon(z, q, T, delta, "prv", eps_error=eps_error)


def epsilon(accountant: str, z: float, T: int, delta: float, q: float = 1.0) -> float:
    """epsilon spent by T steps at noise multiplier z (sampling rate q) under one accountant."""
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"unknown accountant {accountant!r}; choose from {ACCOUNTANTS}")
    if q != 1.0 and accountant not in ("rdp", "prv"):
        raise ValueError(f"accountant {accountant!r} here handles full-batch (q = 1) only")
    if accountant == "basic":
        return basic_epsilon(z, T, delta)
    if accountant == "zcdp":
        return zcdp_epsilon(z, T, delta)
    if accountant == "exact":
        return exact_epsilon(z, T, delta)
    if accountant == "rdp":
        return rdp_epsilon(z, T, delta, q)
    return prv_epsilon(z, T, delta, q)


@lru_cache(maxsize=4096)
def noise_multiplier(accountant: str, eps: float, delta: float, T: int, q: float = 1.0) -> float:
    """Smallest z that the accountant certifies at (eps, delta) after T steps at sampling rate q.

    rdp / prv go through opacus' ``get_noise_multiplier`` with a relative tolerance (its default
    0.01 is absolute, i.e. useless at eps = 0.01); the others are solved here.
    """
    if eps <= 0 or not 0 < delta < 1 or T < 1:
        raise ValueError(f"need eps > 0, 0 < delta < 1, T >= 1; got {eps}, {delta}, {T}")
    if accountant == "basic":
        return paper_noise_multiplier(eps, delta, T)
    if accountant in ("zcdp", "exact"):
        f = zcdp_epsilon if accountant == "zcdp" else exact_epsilon
        hi = 1.0
        while f(hi, T, delta) > eps:
            hi *= 2
        lo = hi / 2
        while f(lo, T, delta) < eps:
            lo /= 2
        return brentq(lambda z: f(z, T, delta) - eps, lo, hi, xtol=1e-10, rtol=1e-8)
    if accountant not in ("rdp", "prv"):
        raise ValueError(f"unknown accountant {accountant!r}; choose from {ACCOUNTANTS}")
    from privtrans.shared.dp.accounting import opacus_noise_multiplier

    if accountant == "rdp":
        kw = {"alphas": EXTENDED_ALPHAS if q == 1.0 else subsampled_alphas()}
    else:
        kw = {"eps_error": eps / 100}
    return opacus_noise_multiplier(eps, delta, q, T, accountant, epsilon_tolerance=eps / 200, **kw)
