"""Moment-matched propagation of DP parameter noise through Transformer layers (DPFormer §4.2).

DPFormer models every activation coordinate as an independent Gaussian whose mean is the value
actually computed (with the noisy released weights, the paper's "one-step MCMC" view) and whose
variance is a scalar per token (the DP noise is isotropic). This module holds the layer rules;
``privtrans.dpformer.reattention`` strings them together for a SASRec model.

Conventions: ``x`` is the computed activation ``[..., L, d]``, ``v`` its per-token variance
``[..., L]``, ``w_var`` the variance of every weight coordinate (``(σ_dp/B)^2`` for block weights,
Claim 4.3). Each rule returns the output variance averaged over the output coordinates, so the
scalar-per-token state is kept (our reading of "the effective error can be represented in scalar").

Errata handled here: the paper's Eq. 8 (ReLU) as printed is E[Z^2] - mu^2, not Var[Z]
(it gives 0.5 for N(0, 1) where Table 3's own analytic column says 0.3408); ``relu_moments`` is the
correct rectified-Gaussian moment and ``relu_var_paper_eq8`` keeps the printed one for comparison.
"""

from __future__ import annotations

import math

import numpy as np
import torch

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _as_tensor(a) -> torch.Tensor:
    return a if isinstance(a, torch.Tensor) else torch.as_tensor(a, dtype=torch.float64)


def _phi(a):
    return torch.exp(-0.5 * a * a) * _INV_SQRT_2PI


def _Phi(a):
    return 0.5 * (1.0 + torch.erf(a / _SQRT2))


def _check_var(var):
    try:
        bad = bool(torch.any(var < 0))
    except RuntimeError:  # under torch.func transforms (vmap) a data-dependent check cannot run
        return
    if bad:
        raise ValueError("variances must be non-negative")


# --------------------------------------------------------------------------------- activations
def relu_moments(mu, var):
    """Mean and variance of ReLU(X) for X ~ N(mu, var), elementwise (correct form of Eq. 8).

    E[Z] = mu Φ(a) + s φ(a), E[Z^2] = (mu^2 + s^2) Φ(a) + mu s φ(a), a = mu/s. The variance is
    computed as s^2 h(a) in float64 (h -> 1 for a >> 0, -> 0 for a << 0) to avoid the cancellation
    of E[Z^2] - E[Z]^2 when var << mu^2.
    """
    mu, var = _as_tensor(mu), _as_tensor(var)
    _check_var(var)
    dtype = torch.promote_types(mu.dtype, var.dtype)
    m, v = mu.double(), var.double()
    s = v.sqrt()
    pos = s > 0
    a = torch.where(pos, m / torch.where(pos, s, torch.ones_like(s)), torch.zeros_like(m))
    Phi, phi = _Phi(a), _phi(a)
    mean = torch.where(pos, m * Phi + s * phi, m.clamp_min(0.0))
    ac = a.clamp(-30.0, 30.0)
    Phic, phic = _Phi(ac), _phi(ac)
    g = ac * Phic + phic                                # E[Z]/s
    h = (ac * ac + 1.0) * Phic + ac * phic - g * g      # Var[Z]/s^2
    h = torch.where(ac > 8.0, torch.ones_like(h), h.clamp_min(0.0))
    out_var = torch.where(pos, v * h, torch.zeros_like(v))
    return mean.to(dtype), out_var.to(dtype)


def relu_var_paper_eq8(c, d):
    """Eq. 8 exactly as printed: Φ(c/√d)(c²+d) + c√d φ(c/√d) − c². It equals E[Z²] − c², not Var[Z]."""
    c, d = _as_tensor(c).double(), _as_tensor(d).double()
    _check_var(d)
    a = c / d.sqrt()
    return _Phi(a) * (c * c + d) + c * d.sqrt() * _phi(a) - c * c


def gelu(x):
    """Exact GELU x Φ(x) (torch's default, not the tanh approximation)."""
    return x * _Phi(x)


_GH_CACHE: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}


def _hermgauss(n: int):
    if n not in _GH_CACHE:
        t, w = np.polynomial.hermite.hermgauss(n)
        _GH_CACHE[n] = (torch.as_tensor(t), torch.as_tensor(w / math.sqrt(math.pi)))
    return _GH_CACHE[n]


def gauss_moments(f, mu, var, n: int = 96):
    """Mean and variance of f(X), X ~ N(mu, var), by Gauss-Hermite quadrature (centred, float64)."""
    mu, var = _as_tensor(mu), _as_tensor(var)
    _check_var(var)
    dtype = torch.promote_types(mu.dtype, var.dtype)
    t, w = _hermgauss(n)
    m, s = mu.double().unsqueeze(-1), var.double().sqrt().unsqueeze(-1)
    fx = f(m + _SQRT2 * s * t)
    mean = (w * fx).sum(-1)
    out_var = (w * (fx - mean.unsqueeze(-1)) ** 2).sum(-1)
    return mean.to(dtype), out_var.to(dtype)


def gelu_moments(mu, var, n: int = 96):
    """Mean and variance of GELU(X), X ~ N(mu, var): the 'GELU analytic' cell Table 3 leaves blank.

    The mean has a closed form (mu Φ(mu/√(1+v)) + v/√(1+v) φ(·)); the second moment needs a
    bivariate normal CDF, so both come from quadrature here (exact to ~1e-10 for |mu|, var of O(1)).
    """
    return gauss_moments(gelu, mu, var, n)


def activation_var(name: str, pre, v, rule: str = "exact"):
    """Per-token output variance of an activation, averaging the elementwise variance over coords.

    ``v`` is the pre-activation variance, per token ``[..., L]`` or per coordinate (``pre``'s shape).

    ``rule="exact"`` uses each function's own moments; ``rule="relu"`` uses the ReLU formula for GELU
    too, as the paper does (Remark A.5).
    """
    vv = v if v.shape == pre.shape else v.unsqueeze(-1).expand_as(pre)
    if name == "relu" or (name == "gelu" and rule == "relu"):
        _, out = relu_moments(pre, vv)
    elif name == "gelu":
        _, out = gelu_moments(pre, vv)
    else:
        raise ValueError(f"unknown activation {name!r}: expected 'relu' or 'gelu'")
    return out.mean(-1).to(v.dtype)


# --------------------------------------------------------------------------------- linear maps
def linear_var(x, v, weight, w_var: float, bias_var: float | None = None):
    """Per-token variance of y = x Wᵀ (+ b) with x ~ N(x, v I) and W ~ N(W, w_var) (Eq. 7 summed).

    Coordinate j: Σ_k (v w_var + v W_jk² + w_var x_k²) (+ bias_var). Averaged over j:
    d_in v w_var + v ‖W‖²_F / d_out + w_var ‖x‖² (+ bias_var).
    """
    d_out, d_in = weight.shape
    if x.shape[-1] != d_in:
        raise ValueError(f"x has {x.shape[-1]} features, weight expects {d_in}")
    wsq = weight.detach().to(v.dtype).pow(2).sum() / d_out     # a tensor: no host sync, vmap-safe
    out = v * (d_in * w_var + wsq) + w_var * x.detach().pow(2).sum(-1).to(v.dtype)
    if bias_var is not None:
        out = out + bias_var
    return out


def linear_var_per_coord(x, v, weight, w_var: float, bias_var: float | None = None):
    """Eq. 7 per output coordinate (no averaging), ``[..., L, d_out]``: feeds elementwise activations."""
    w2 = weight.detach().to(v.dtype).pow(2).sum(1)
    out = (v.unsqueeze(-1) * (weight.shape[1] * w_var + w2)
           + w_var * x.detach().to(v.dtype).pow(2).sum(-1, keepdim=True))
    return out + bias_var if bias_var is not None else out


def layernorm_var(x, v, gamma=None, w_var: float = 0.0, eps: float = 1e-5, affine_noise: bool = True):
    """Per-token variance of LayerNorm(x) with x the mean and v the per-coordinate noise variance.

    Small noise (delta method): x̂ = (x - m)/s has Jacobian (I - 11ᵀ/d - x̂x̂ᵀ/d)/s, a projection,
    so the mean coordinate variance is v (1 - 2/d)/s² (s² = var(x) + eps). Large noise: x̂ always
    has mean square 1 and E[x̂] ≈ (x - m)/√(s² + v'), v' = v (1 - 1/d), so the variance tends to
    v'/(s² + v') -> 1. We use v'/(s² + v') - (v/d) s²/(s² + v)², which is both limits
    (within ~3% of Monte Carlo in between). The noisy affine parameters add w_var (x̂² + v_x̂) for
    γ and w_var for β.
    """
    d = x.shape[-1]
    xd = x.detach().to(v.dtype)
    s2 = xd.var(-1, unbiased=False) + eps
    vp = v * (1.0 - 1.0 / d)
    vhat = vp / (s2 + vp) - (v / d) * s2 / (s2 + v).pow(2)
    if gamma is None:
        return vhat
    g2 = gamma.detach().to(v.dtype).pow(2).mean()
    out = vhat * g2
    if affine_noise and w_var:
        xhat2 = ((xd - xd.mean(-1, keepdim=True)).pow(2) / s2.unsqueeze(-1)).mean(-1)
        out = out + w_var * (xhat2 + vhat) + w_var
    return out


def attention_value_var(probs, v_values):
    """Variance of o_t = Σ_u S_tu V_u with the attention weights S held fixed: Σ_u S_tu² v_u.

    ``probs`` is ``[B, (H,) L, L]``; ``v_values`` is ``[B, L]``. Heads are averaged.
    """
    out = torch.einsum("...tu,...u->...t", probs.detach().to(v_values.dtype).pow(2),
                       v_values if probs.dim() == 3 else v_values.unsqueeze(1))
    return out if probs.dim() == 3 else out.mean(1)


def residual_var(*vs):
    """x + f(x): variances add (the two branches are treated as independent, an approximation)."""
    return sum(vs)


# --------------------------------------------------------------------------------- sources
# --------------------------------------------------------------------------------- Table 3
def sampled_var(f, std: float, n: int, generator=None) -> float:
    """Sampling-based Var[f(X)], X ~ N(0, std²), from n draws (Table 3's 'sampling-based' cells)."""
    if n < 2:
        raise ValueError("need n >= 2 samples")
    x = std * torch.randn(n, generator=generator, dtype=torch.float64)
    return float(f(x).var())


def table3(stds=(0.01, 0.1, 1.0), ns=(10, 100, 1000, 10_000, 100_000, 1_000_000), generator=None):
    """Table 3 regenerated: sampled variance of ReLU/GELU of N(0, std²) at each sample size, next to
    the correct analytic ReLU variance, the printed Eq. 8, and the GELU moment by quadrature.

    The paper's "N(0, x)" is read as a standard deviation (its analytic 3.40e-5 = 0.3408 · 0.01²).
    """
    import pandas as pd

    fns = {"ReLU": lambda x: x.clamp_min(0), "GELU": gelu}
    rows = []
    for s in stds:
        for name, f in fns.items():
            row = {"input_std": s, "activation": name}
            for n in ns:
                row[f"n={n:g}"] = sampled_var(f, s, n, generator)
            row["analytic_relu"] = float(relu_moments(0.0, s * s)[1])
            row["eq8_as_printed"] = float(relu_var_paper_eq8(0.0, s * s))
            row["analytic_own"] = float((relu_moments if name == "ReLU" else gelu_moments)(0.0, s * s)[1])
            rows.append(row)
    return pd.DataFrame(rows)


def largest_n_column(t3) -> str:
    cols = [c for c in t3.columns if c.startswith("n=")]
    if not cols:
        raise ValueError("the Table 3 frame has no sampled column 'n=...'")
    return max(cols, key=lambda c: float(c[2:]))


def table3_vs_paper(t3, paper):
    """Our Table 3 at the largest sample size beside the paper's (``data/dpformer/table3_paper.csv``)."""
    big = largest_n_column(t3)
    cmp = paper[["input_std", "activation", "n=1e+06", "analytic", "note"]].rename(
        columns={"n=1e+06": "paper: sampled n=1e6", "analytic": "paper: analytic"})
    return cmp.merge(t3[["input_std", "activation", big, "analytic_own", "eq8_as_printed"]].rename(
        columns={big: f"ours: sampled {big}", "analytic_own": "ours: analytic (correct)",
                 "eq8_as_printed": "ours: Eq. 8 as printed"}), on=["input_std", "activation"])


def table3_errors(t3, paper) -> dict:
    """How far Table 3's columns are apart, at our largest sample size (fractions, max over stds):

    - ``relu_max_rel_err``: sampled ReLU vs the correct analytic variance;
    - ``eq8_min_rel_err``: the printed Eq. 8 vs sampled ReLU (the smallest miss: 'off by at least');
    - ``gelu_quad_max_rel_err``: sampled GELU vs its quadrature moment;
    - ``gelu_via_relu_max_rel_err``: the ReLU formula used for GELU (the paper's shortcut) vs sampled;
    - ``gelu_vs_paper_max_rel_diff``: our sampled GELU vs the paper's sampled GELU (n = 10⁶).

    A row of the paper's GELU column that our table lacks (or the reverse) is an error, not a skip.
    """
    big = largest_n_column(t3)
    relu, gelu = t3[t3.activation == "ReLU"], t3[t3.activation == "GELU"]
    if relu.empty or gelu.empty:
        raise ValueError("Table 3 needs ReLU and GELU rows")
    pg = paper.loc[paper.activation == "GELU", ["input_std", "n=1e+06"]].rename(columns={"n=1e+06": "paper_1e6"})
    both = pg.merge(gelu[["input_std", big]], on="input_std")
    if len(both) != len(pg) or len(both) != len(gelu):
        raise ValueError(f"GELU input stds differ: paper {sorted(pg.input_std)}, ours {sorted(gelu.input_std)}")
    return {
        "relu_max_rel_err": float((relu[big] / relu.analytic_own - 1).abs().max()),
        "eq8_min_rel_err": float((relu.eq8_as_printed / relu[big] - 1).abs().min()),
        "gelu_quad_max_rel_err": float((gelu[big] / gelu.analytic_own - 1).abs().max()),
        "gelu_via_relu_max_rel_err": float((gelu.analytic_relu / gelu[big] - 1).abs().max()),
        "gelu_vs_paper_max_rel_diff": float((both[big] / both.paper_1e6 - 1).abs().max()),
    }
