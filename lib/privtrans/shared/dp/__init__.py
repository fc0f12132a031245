"""Differentially private training machinery (DPFormer chapter: Phantom Clipping, accounting).

- ``phantom``: exact per-sample gradient norms with tied embeddings (PhantomClipper)
- ``clipping``: clip factors (Abadi, automatic)
- ``step``: the DP-SGD step on top of opacus' optimizer and RDP accountant (PhantomDPSGD, dp_gradient)
- ``accounting``: σ from a target ε, δ = 1/(2N), the printable Budget
- ``ghost_baseline``: the paper-style Ghost baseline for Figure 3
- ``brute_force``: per-sample gradients by torch.func, the reference in tests and notebooks
- ``opacus_compare``: what opacus 1.6 does with a tied embedding (hooks, ghost, functional tie)
- ``claim31``, ``efficiency``: the Claim 3.1 checks and the Figure 3 measurements (notebooks,
  ``benchmarks/dpformer_phantom.py``)
"""

from .accounting import Budget, default_delta, epsilon_spent, noise_for_epsilon
from .clipping import clip_factors
from .phantom import PhantomClipper
from .step import PhantomDPSGD, StepStats, dp_gradient

__all__ = ["Budget", "default_delta", "epsilon_spent", "noise_for_epsilon", "clip_factors",
           "PhantomClipper", "PhantomDPSGD", "StepStats", "dp_gradient"]
