"""Differentially private training machinery shared by the chapters (none of it imports a chapter).

- ``phantom``: exact per-sample gradient norms with tied embeddings (PhantomClipper)
- ``clipping``: clip factors (Abadi, automatic)
- ``step``: DP-SGD steps: PhantomDPSGD (opacus optimizer and accountant), dp_gradient, the
  PhantomStep / OpacusHooksStep of training loops that sample and account themselves, noise_only
- ``accounting``: σ from a target ε, δ = 1/(2N), the printable Budget
- ``brute_force``: per-sample gradients by torch.func, the reference in tests and notebooks
"""

from .accounting import Budget, default_delta, epsilon_spent, noise_for_epsilon
from .clipping import clip_factors
from .phantom import PhantomClipper
from .step import OpacusHooksStep, PhantomDPSGD, PhantomStep, StepStats, dp_gradient, make_dp_step, noise_only

__all__ = ["Budget", "default_delta", "epsilon_spent", "noise_for_epsilon", "clip_factors",
           "PhantomClipper", "PhantomDPSGD", "StepStats", "dp_gradient", "PhantomStep", "OpacusHooksStep",
           "make_dp_step", "noise_only"]
