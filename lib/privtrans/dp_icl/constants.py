"""Hyper-parameters of every experiment, as the authors' code sets them.

The paper states these constants through Theorem 4.1 and §6; where its printed formula and the
official code (github.com/chebyshevtech/DP1, MIT) disagree we follow the code, because the
authors' result CSVs were produced with it, and say so in ``Hyper.source``:

- G uses ``(ln N / D^2)^{1/4}`` (code) rather than Thm 4.1's ``(ln N)^{1/2} / D``;
- eta0 uses ``(lam + G^2)^2`` (code) rather than Thm 4.1's ``(2 lam + G^2)^2``;
- low-dim T is ``int(2.5 ln N / ln(1/(1 - eta0 lam)))`` (the paper prints a sign typo);
- Figure 4 uses ``R = 0.1 C^2 sqrt(N/L)`` (code), not ``C^2 sqrt(N/L) / lam``;
- kappa = 1 everywhere, sigma = 2 G (C + R G) exactly (the minimum Theorem 3.2 allows).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Hyper:
    """Everything NoisyHead needs for one (N, L, D) problem, except epsilon and delta."""

    N: int
    L: int
    D: int
    lam: float
    C: float      # response clip
    G: float      # feature projection radius (Frobenius)
    R: float      # iterate projection radius (Frobenius)
    eta0: float   # step size
    T: int        # iterations
    setting: str = ""

    @property
    def sigma(self) -> float:
        """Theorem 3.2's smallest admissible noise scale, 2G(C + RG)."""
        return 2.0 * self.G * (self.C + self.R * self.G)

    @property
    def sensitivity(self) -> float:
        """Replace-one L2 sensitivity of one update, eta0 * sigma / N (App. A.2)."""
        return self.eta0 * self.sigma / self.N

    def with_(self, **kw) -> "Hyper":
        d = asdict(self)
        d.update(kw)
        return Hyper(**d)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["sigma"] = self.sigma
        return d


def _clip_constant(N: int, L: int) -> float:
    return math.sqrt(2.0 * math.log(N * L))


def _feature_radius(C: float, N: int, L: int, D: int) -> float:
    return C / math.sqrt(L) * (1.0 + (math.log(N) / D**2) ** 0.25)


def _check(N, L, D):
    for name, v in (("N", N), ("L", L), ("D", D)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")


def low_dim(N: int, D: int = 5, lam: float = 5.0, L: int | None = None) -> Hyper:
    """Figure 1 / Figure 5 / Table 1: D = 5, L = floor(sqrt N), lambda = 5."""
    L = int(math.isqrt(N)) if L is None else L
    _check(N, L, D)
    C = _clip_constant(N, L)
    G = _feature_radius(C, N, L, D)
    R = C**2 * math.sqrt(N / L) / lam
    eta0 = 0.95 * 2 * lam / (3 * (lam + G**2) ** 2)
    T = int(2.5 * math.log(N) / math.log(1.0 / (1.0 - eta0 * lam)))
    return Hyper(N, L, D, lam, C, G, R, eta0, T, "low_dim")


def _square(N: int, T: int, eta_scale: float, setting: str) -> Hyper:
    """D = L = floor(sqrt N), lambda = N / D, eta0 = eta_scale * lam / (3 (lam + G^2)^2)."""
    D = L = int(math.isqrt(N))
    _check(N, L, D)
    lam = N / D
    C = _clip_constant(N, L)
    G = _feature_radius(C, N, L, D)
    R = C**2 * math.sqrt(N / L) / lam
    eta0 = eta_scale * lam / (3 * (lam + G**2) ** 2)
    return Hyper(N, L, D, lam, C, G, R, eta0, T, setting)


def high_dim(N: int, T: int = 5) -> Hyper:
    """Figure 2: D = L = floor(sqrt N), lambda = N / D, eta0 = 0.1 * 2 lam / (3 (lam + G^2)^2), T = 5."""
    return _square(N, T, 0.1 * 2, "high_dim")


def over_param(N: int = 1000, T: int = 1) -> Hyper:
    """Figure 3: D = L = floor(sqrt N), lambda = N / D, eta0 = 0.02 lam / (3 (lam + G^2)^2)."""
    return _square(N, T, 0.02, "over_param")


def robustness(N: int = 5000, L: int = 500, D: int = 5, lam: float = 0.01) -> Hyper:
    """Figure 4: lambda = 0.01, R = 0.1 C^2 sqrt(N/L) (code), eta0 = 2 lam / (3 (lam + G^2)^2), T = int(ln N)."""
    _check(N, L, D)
    C = _clip_constant(N, L)
    G = _feature_radius(C, N, L, D)
    R = 0.1 * C**2 * math.sqrt(N / L)
    eta0 = 2 * lam / (3 * (lam + G**2) ** 2)
    T = int(math.log(N))
    return Hyper(N, L, D, lam, C, G, R, eta0, T, "robustness")


def text(N: int, L: int, D: int, lam: float = 32.0, step_factor: float = 0.1, T: int = 1) -> Hyper:
    """Figure 6 (our choice; the paper gives none): Thm 4.1 constants, eta0 = f * 0.95 * 2 lam / (3 (lam + G^2)^2)."""
    _check(N, L, D)
    C = _clip_constant(N, L)
    G = _feature_radius(C, N, L, D)
    R = C**2 * math.sqrt(N / L) / lam
    eta0 = step_factor * 0.95 * 2 * lam / (3 * (lam + G**2) ** 2)
    return Hyper(N, L, D, lam, C, G, R, eta0, T, "text")
