"""The in-context linear regression task of §2 and the linear attention head collapsed to Gamma.

A prompt is L context pairs (x_i, y_i) and one query (x_{L+1}, y_{L+1}) with x_i ~ Unif(S^{D-1}),
a fresh task vector w ~ N(0, I_D) per prompt and y_i = w^T x_i + noise. The attention head's
prediction reduces to yhat = <Gamma, Z> with Z = (1/L) x_{L+1} (sum_i y_i x_i)^T (eq. 2.5), so
everything downstream works with vec Z in R^{D^2}. Training only ever needs the sufficient
statistics A = Z^T Z / N and b = Z^T y / N, which makes every gradient step O(D^4) instead of O(N D^2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Prompts:
    """N prompts: X (N, L+1, D) tokens with the query last, Y (N, L+1) responses."""

    X: np.ndarray
    Y: np.ndarray

    @property
    def N(self) -> int:
        return self.X.shape[0]

    @property
    def L(self) -> int:
        return self.X.shape[1] - 1

    @property
    def D(self) -> int:
        return self.X.shape[2]

    @property
    def y_query(self) -> np.ndarray:
        return self.Y[:, -1]


def sample_sphere(rng: np.random.Generator, shape: tuple[int, ...], D: int) -> np.ndarray:
    """Uniform on the unit sphere S^{D-1}: normalised Gaussians."""
    g = rng.standard_normal((*shape, D))
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def sample_prompts(rng: np.random.Generator, N: int, L: int, D: int, tau: float = 0.0) -> Prompts:
    """N independent prompts, each with its own w ~ N(0, I_D); tau is the response noise s.d."""
    if min(N, L, D) < 1:
        raise ValueError(f"N, L, D must be >= 1, got {(N, L, D)}")
    if tau < 0:
        raise ValueError(f"tau must be >= 0, got {tau}")
    X = sample_sphere(rng, (N, L + 1), D)
    w = rng.standard_normal((N, D))
    Y = np.einsum("nld,nd->nl", X, w)
    if tau > 0:
        Y = Y + tau * rng.standard_normal(Y.shape)
    return Prompts(X, Y)


def expected_feature_norm2(L: int, D: int) -> float:
    """E||Z||^2 for the prompts of ``sample_prompts`` (x on the unit sphere, w ~ N(0, I_D), no response
    noise): ||Z||^2 = ||x_{L+1}||^2 ||s||^2 with s = (1/L) sum_i y_i x_i, and
    E||s||^2 = (L E[y^2] + L(L-1) E[y_i y_j <x_i, x_j>]) / L^2 = (L + L(L-1)/D) / L^2."""
    return (L + L * (L - 1) / D) / L**2


def features(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """vec Z_k = vec((1/L) x_{k,L+1} (sum_{i<=L} y_{k,i} x_{k,i})^T), shape (N, D*D), row-major vec."""
    if X.ndim != 3 or Y.shape != X.shape[:2]:
        raise ValueError(f"X must be (N, L+1, D) and Y (N, L+1); got {X.shape} and {Y.shape}")
    L = X.shape[1] - 1
    s = np.einsum("nl,nld->nd", Y[:, :L], X[:, :L]) / L
    return np.einsum("na,nb->nab", X[:, L], s).reshape(X.shape[0], -1)


def attention_prediction(E: np.ndarray, W_pv: np.ndarray, W_kq: np.ndarray) -> float:
    """The full linear self-attention read-out f(E)_{(D+1, L+1)} of eq. (2.2), for checking eq. (2.5)."""
    L = E.shape[1] - 1
    f = E + W_pv @ E @ (E.T @ W_kq @ E) / L
    return float(f[-1, -1])


def embed(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """E = [[x_1 .. x_{L+1}], [y_1 .. y_L, 0]] of eq. (2.1)."""
    y = np.array(y, dtype=float).copy()
    y[-1] = 0.0
    return np.vstack([x.T, y[None, :]])


@dataclass
class Stats:
    """Sufficient statistics of the squared loss: A = Z^T Z / N, b = Z^T y / N, N.

    Built by ``stats`` with the features kept and A left to be formed on first use (``gram``):
    a few GD steps with N ~ D^2 are cheaper through Z (2 N D^2 per step) than forming A (N D^4).
    """

    A: np.ndarray | None
    b: np.ndarray
    N: int
    Z: np.ndarray | None = None

    def gram(self) -> np.ndarray:
        if self.A is None:
            self.A = self.Z.T @ self.Z / self.N
        return self.A


def stats(Z: np.ndarray, y: np.ndarray) -> Stats:
    Z = np.asarray(Z, dtype=float)
    return Stats(None, Z.T @ y / Z.shape[0], Z.shape[0], Z)


def ridge(st: Stats, lam: float) -> np.ndarray:
    """Eq. (2.7): vec Gamma* = (lam N I + sum_k Z_k Z_k^T)^{-1} sum_k y_k Z_k, from (A, b)."""
    if lam < 0:
        raise ValueError(f"lambda must be >= 0, got {lam}")
    A = st.gram()
    return np.linalg.solve(A + lam * np.eye(A.shape[0]), st.b)


def second_moment(Z_test: np.ndarray) -> np.ndarray:
    """S = Z_test^T Z_test / n_test, so excess risk is a quadratic form."""
    return Z_test.T @ Z_test / Z_test.shape[0]


def excess_risk(gamma: np.ndarray, gamma_ref: np.ndarray, S: np.ndarray) -> np.ndarray:
    """(1/n_test) sum_k <gamma - gamma_ref, Z_k>^2 = d^T S d, for one gamma (d,) or a batch (..., d)."""
    d = np.asarray(gamma) - gamma_ref
    return np.einsum("...i,ij,...j->...", d, S, d)


def excess_risk_z(gamma: np.ndarray, gamma_ref: np.ndarray, Z_test: np.ndarray) -> np.ndarray:
    """The same average computed from the test features directly (cheaper when D^2 ~ n_test)."""
    d = np.asarray(gamma) - gamma_ref
    return np.mean((d @ Z_test.T) ** 2, axis=-1)


def test_mse(gamma: np.ndarray, Z_test: np.ndarray, y_test: np.ndarray) -> np.ndarray:
    """Absolute test MSE of the predictor <gamma, Z>, for context next to the excess risk."""
    return np.mean((np.atleast_2d(gamma) @ Z_test.T - y_test) ** 2, axis=-1)
