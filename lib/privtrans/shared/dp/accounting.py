"""Privacy accounting through opacus' accountants, for every chapter.

- ``opacus_epsilon`` / ``opacus_noise_multiplier``: one call each into opacus' RDP or PRV
  accountant (orders, PRV error and tolerance as the caller needs; DP-ICL passes orders up to 1e6
  and relative tolerances, DPFormer opacus' defaults).
- ``noise_for_epsilon`` / ``epsilon_spent`` / ``Budget``: DP-SGD runs as DPFormer states them. That
  paper names no accountant nor δ; it builds on fastDP, whose defaults are RDP and δ = 1/(2N), with
  sampling rate q = B/N. RDP assumes Poisson sampling; with shuffled fixed-size batches the stated
  ε is the usual approximation.
"""

from __future__ import annotations

from dataclasses import dataclass

import warnings

from opacus.accountants import PRVAccountant, RDPAccountant
from opacus.accountants.utils import get_noise_multiplier

OPACUS_ACCOUNTANTS = {"rdp": RDPAccountant, "prv": PRVAccountant}


def _accountant_kw(accountant: str, alphas, eps_error) -> dict:
    """The keyword arguments of ``get_epsilon``. Both opacus accountants take ``**kwargs`` and drop
    what they do not use, so an argument given to the other accountant is refused here."""
    if accountant not in OPACUS_ACCOUNTANTS:
        raise ValueError(f"unknown opacus accountant {accountant!r}; choose from {tuple(OPACUS_ACCOUNTANTS)}")
    for name, value, owner in (("alphas", alphas, "rdp"), ("eps_error", eps_error, "prv")):
        if value is not None and accountant != owner:
            raise ValueError(f"{name} is an argument of the {owner.upper()} accountant only, not of "
                             f"accountant={accountant!r}: pass alphas with accountant='rdp', "
                             f"eps_error with accountant='prv'")
    kw = {}
    if alphas is not None:
        kw["alphas"] = list(alphas)
    if eps_error is not None:
        kw["eps_error"] = eps_error
    return kw


def opacus_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                   accountant: str = "rdp", alphas=None, eps_error: float | None = None) -> float:
    """ε of ``steps`` subsampled Gaussian steps by an opacus accountant (its default RDP orders
    unless ``alphas``; PRV's ``eps_error``; either one given to the other accountant is a
    ValueError). Full-batch steps (q = 1) make opacus warn about log(1 - q); the warnings are
    silenced because the value is still right."""
    kw = _accountant_kw(accountant, alphas, eps_error)
    acc = OPACUS_ACCOUNTANTS[accountant]()
    acc.history = [(float(noise_multiplier), float(sample_rate), int(steps))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(acc.get_epsilon(delta=delta, **kw))


def opacus_noise_multiplier(target_epsilon: float, delta: float, sample_rate: float, steps: int,
                            accountant: str = "rdp", epsilon_tolerance: float = 0.01, alphas=None,
                            eps_error: float | None = None) -> float:
    """The noise multiplier opacus' ``get_noise_multiplier`` finds for (ε, δ) after ``steps`` steps."""
    kw = _accountant_kw(accountant, alphas, eps_error)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(get_noise_multiplier(target_epsilon=target_epsilon, target_delta=delta,
                                          sample_rate=sample_rate, steps=int(steps), accountant=accountant,
                                          epsilon_tolerance=epsilon_tolerance, **kw))


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
    sigma = opacus_noise_multiplier(target_epsilon, delta, q, steps)
    eps = epsilon_spent(sigma, q, steps, delta)
    return Budget(eps, delta, sigma, q, steps)


def epsilon_spent(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """ε after `steps` steps of the subsampled Gaussian mechanism (opacus RDP)."""
    return opacus_epsilon(noise_multiplier, sample_rate, steps, delta)
