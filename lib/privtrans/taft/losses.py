"""The rescaled square loss (RSL, Hui & Belkin 2021) as the authors' code computes it, and its kin.

The paper (eq. 2): L = (1/K)·(α([f]_y − κ)² + Σ_{i≠y} [f]_i²), α never given. The authors' code
computes ``F.mse_loss(out, κ·onehot(y))`` (mean over batch and classes), which is α = 1; ``rsl``
here is that expression for general α and equals the code's at α = 1 (tested). ``mse`` is RSL at
κ = 1, α = 1 (one-hot targets, Figure 2a's MSE). The regulariser of the code is the *norm*
wd·‖Δw‖₂ (plus 1e-6 under the root), where the paper writes the squared norm (ridge).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

LOSSES = ("rsl", "ce", "mse")


def rsl(out: torch.Tensor, y: torch.Tensor, kappa: float, alpha: float = 1.0) -> torch.Tensor:
    """Mean over the batch of (1/K)(α(f_y − κ)² + Σ_{i≠y} f_i²)."""
    k = out.shape[1]
    onehot = F.one_hot(y, k).to(out.dtype)
    sq = (out - kappa * onehot) ** 2
    weight = 1 + (alpha - 1) * onehot
    return (weight * sq).sum(1).mean() / k


def per_sample_rsl(out, y, kappa: float, alpha: float = 1.0) -> torch.Tensor:
    k = out.shape[1]
    onehot = F.one_hot(y, k).to(out.dtype)
    return ((1 + (alpha - 1) * onehot) * (out - kappa * onehot) ** 2).sum(1) / k


def loss_fn(out, y, name: str, classes: int, kappa: float = 15.0, alpha: float = 1.0) -> torch.Tensor:
    if name == "ce":
        return F.cross_entropy(out, y)
    if name == "rsl":
        return rsl(out, y, kappa, alpha)
    if name == "mse":
        return rsl(out, y, 1.0, 1.0)
    raise ValueError(f"loss must be one of {LOSSES}, got {name!r}")


def l2_norm_penalty(params, eps: float = 1e-6) -> torch.Tensor:
    """sqrt(eps + Σ_p Σ p²): the authors' ``utils.l2_penalty`` (multiplied by wd outside)."""
    return torch.sqrt(eps + sum((p * p).sum() for p in params))
