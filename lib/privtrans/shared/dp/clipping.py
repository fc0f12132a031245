"""Per-sample clip factors: Abadi clipping and the paper's automatic (normalisation) clipping.

DP-SGD releases Σ_i c_i g_i + σ·C·N(0, I); the factor c_i must make ‖c_i g_i‖ ≤ C.
- ``"abadi"``: c_i = min(1, C / ‖g_i‖) (Abadi et al. 2016; opacus divides by ‖g‖ + 1e-6).
- ``"automatic"``: c_i = C / (‖g_i‖ + γ), γ = 0.01 (Bu et al. 2022a, fastDP's default and what
  DPFormer means by "normalize the gradients and set C = 1"). ‖c_i g_i‖ < C always.
"""

from __future__ import annotations

import torch

CLIPPING_MODES = ("abadi", "automatic")


def clip_factors(norms: torch.Tensor, max_grad_norm: float, mode: str = "automatic",
                 gamma: float = 0.01) -> torch.Tensor:
    """(B,) per-sample norms -> (B,) factors c_i with ‖c_i g_i‖ ≤ max_grad_norm."""
    if max_grad_norm <= 0:
        raise ValueError(f"max_grad_norm must be > 0, got {max_grad_norm}")
    if mode == "abadi":
        return (max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
    if mode == "automatic":
        if gamma <= 0:
            raise ValueError(f"automatic clipping needs gamma > 0, got {gamma}")
        return max_grad_norm / (norms + gamma)
    raise ValueError(f"clipping mode must be one of {CLIPPING_MODES}, got {mode!r}")
