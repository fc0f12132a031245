"""Privacy accounting for DPFormer-style runs, delegated to opacus' RDP accountant.

The paper names no accountant nor δ; it builds on fastDP, whose defaults are RDP and
δ = 1/(2N), with sampling rate q = B/N. We use the same through opacus
(``get_noise_multiplier(..., accountant="rdp")`` and ``RDPAccountant``). RDP assumes Poisson
sampling; with shuffled fixed-size batches the stated ε is the usual approximation.
"""

from __future__ import annotations

from dataclasses import dataclass

from opacus.accountants import RDPAccountant
from opacus.accountants.utils import get_noise_multiplier


def default_delta(n_train: int) -> float:
    """δ = 1/(2N), fastDP's default."""
    if n_train < 1:
        raise ValueError(f"n_train must be >= 1, got {n_train}")
    return 1.0 / (2 * n_train)


@dataclass(frozen=True)
class Budget:
    """What is printed with every DP result."""

    epsilon: float
    delta: float
    noise_multiplier: float
    sample_rate: float
    steps: int
    accountant: str = "rdp"

    def __str__(self) -> str:
        return (f"(ε = {self.epsilon:.3g}, δ = {self.delta:.3g}) via {self.accountant.upper()}; "
                f"σ = {self.noise_multiplier:.4g}, q = {self.sample_rate:.4g}, {self.steps} steps")


def noise_for_epsilon(target_epsilon: float, *, n_train: int, batch_size: int, epochs: float,
                      delta: float | None = None) -> Budget:
    """σ such that `epochs` epochs at q = B/N spend `target_epsilon` (RDP, δ = 1/(2N) by default)."""
    if target_epsilon <= 0:
        raise ValueError(f"target_epsilon must be > 0, got {target_epsilon}")
    if not 0 < batch_size <= n_train:
        raise ValueError(f"need 0 < batch_size <= n_train, got {batch_size}, {n_train}")
    delta = default_delta(n_train) if delta is None else delta
    q = batch_size / n_train
    steps = max(1, int(round(epochs / q)))
    sigma = get_noise_multiplier(target_epsilon=target_epsilon, target_delta=delta, sample_rate=q,
                                 steps=steps, accountant="rdp", epsilon_tolerance=0.01)
    eps = epsilon_spent(sigma, q, steps, delta)
    return Budget(eps, delta, sigma, q, steps)


def epsilon_spent(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """ε after `steps` steps of the subsampled Gaussian mechanism (opacus RDP)."""
    acc = RDPAccountant()
    acc.history = [(noise_multiplier, sample_rate, steps)]
    return acc.get_epsilon(delta=delta)
