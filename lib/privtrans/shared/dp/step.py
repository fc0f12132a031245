"""A DP-SGD step with Phantom Clipping that plugs into opacus' optimizer and accountant.

Phantom (:mod:`privtrans.shared.dp.phantom`) computes exact per-sample norms and the clipped sum
Σ_i c_i g_i into ``p.grad``; opacus' ``DPOptimizerFastGradientClipping`` then adds
N(0, σ²C²) noise, divides by the expected batch size and calls the attached ``RDPAccountant``
hook, exactly as it does after its own ghost clipping. So noise, averaging, secure-mode noise and
accounting are opacus', not ours.

Public API (what the training loops import)
-------------------------------------------
``PhantomDPSGD(model, optimizer, *, noise_multiplier, max_grad_norm=1.0, expected_batch_size,
sample_rate, clipping="automatic", gamma=0.01, delta=None, generator=None, secure_mode=False,
clipper=None)`` (``clipper``: a prebuilt PhantomClipper subclass, e.g. the paper-style Ghost)

- ``.step(loss_fn) -> StepStats``: ``loss_fn()`` runs the model and returns the (B,) per-sample
  losses, e.g. ``lambda: per_sample_loss(model(seqs), targets)``; the step zeroes the grads, runs
  it under capture, clips, adds noise, averages and calls ``optimizer.step()``. ``StepStats`` has
  ``loss`` (mean of the per-sample losses, float), ``norms`` ((B,) per-sample gradient norms),
  ``clipped_frac``.
- ``.epsilon(delta=None) -> float`` (δ defaults to the one given, else must be passed),
  ``.budget(delta=None) -> Budget`` (printable: "(ε = …, δ = …) via RDP; σ = …, q = …, n steps").
- ``.optimizer`` (the opacus DPOptimizerFastGradientClipping), ``.accountant`` (opacus
  RDPAccountant), ``.clipper`` (PhantomClipper).
- ``PhantomDPSGD.for_target_epsilon(model, optimizer, *, target_epsilon, n_train, batch_size,
  epochs, delta=None, **kw)``: σ from the target ε (RDP, δ = 1/(2N)), q = B/N, expected batch B.
  Raise the lr scheduler yourself; ``.optimizer.param_groups`` is the wrapped optimizer's.

``dp_gradient(model, loss_fn, *, max_grad_norm, noise_multiplier, expected_batch_size,
clipping="automatic", gamma=0.01, generator=None, clipper=None) -> torch.Tensor``: the stateless
form: sets every ``p.grad`` to (Σ_i c_i g_i + σ·C·N(0, I)) / expected_batch_size and returns the
(B,) norms. No accounting: the caller charges the step.

Sampling: opacus' accountant assumes Poisson sampling at rate q; use ``opacus.data_loader.
DPDataLoader`` for it, or state that fixed-size shuffled batches approximate it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from opacus.accountants import RDPAccountant
from opacus.optimizers import DPOptimizerFastGradientClipping
from opacus.optimizers.optimizer import _generate_noise

from .accounting import Budget, noise_for_epsilon
from .clipping import clip_factors
from .phantom import PhantomClipper


@dataclass
class StepStats:
    loss: float
    norms: torch.Tensor
    clipped_frac: float


class PhantomDPSGD:
    def __init__(self, model, optimizer, *, noise_multiplier: float, max_grad_norm: float = 1.0,
                 expected_batch_size: int, sample_rate: float, clipping: str = "automatic",
                 gamma: float = 0.01, delta: float | None = None, generator=None,
                 secure_mode: bool = False, clipper: PhantomClipper | None = None):
        if noise_multiplier < 0:
            raise ValueError(f"noise_multiplier must be >= 0, got {noise_multiplier}")
        if expected_batch_size < 1:
            raise ValueError(f"expected_batch_size must be >= 1, got {expected_batch_size}")
        if not 0 < sample_rate <= 1:
            raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate}")
        clip_factors(torch.ones(1), max_grad_norm, clipping, gamma)  # validates the settings
        self.model, self.clipping, self.gamma, self.delta = model, clipping, gamma, delta
        self.max_grad_norm, self.sample_rate = max_grad_norm, sample_rate
        self.clipper = clipper or PhantomClipper(model)
        opt_params = {id(p) for g in optimizer.param_groups for p in g["params"] if p.requires_grad}
        missing = [n for n, p in self.clipper.params.items() if id(p) not in opt_params]
        extra = opt_params - {id(p) for p in self.clipper.params.values()}
        if missing or extra:
            raise ValueError(f"optimizer and model disagree: not in optimizer {missing}, "
                             f"{len(extra)} optimizer parameter(s) not in the model")
        self.optimizer = DPOptimizerFastGradientClipping(
            optimizer, noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm,
            expected_batch_size=expected_batch_size, loss_reduction="mean", generator=generator,
            secure_mode=secure_mode)
        self.accountant = RDPAccountant()
        self.optimizer.attach_step_hook(self.accountant.get_optimizer_hook_fn(sample_rate))

    @classmethod
    def for_target_epsilon(cls, model, optimizer, *, target_epsilon: float, n_train: int,
                           batch_size: int, epochs: float, delta: float | None = None, **kw):
        plan = noise_for_epsilon(target_epsilon, n_train=n_train, batch_size=batch_size,
                                 epochs=epochs, delta=delta)
        obj = cls(model, optimizer, noise_multiplier=plan.noise_multiplier,
                  expected_batch_size=batch_size, sample_rate=plan.sample_rate, delta=plan.delta, **kw)
        obj.plan = plan
        return obj

    @property
    def noise_multiplier(self) -> float:
        return self.optimizer.noise_multiplier

    def step(self, loss_fn) -> StepStats:
        self.optimizer.zero_grad(set_to_none=True)
        with self.clipper.capture():
            losses = loss_fn()
        norms = self.clipper.backward(losses)
        factors = clip_factors(norms, self.max_grad_norm, self.clipping, self.gamma)
        self.clipper.write_clipped_sum(factors)
        self.optimizer.step()
        return StepStats(float(losses.detach().mean()), norms.detach(),
                         float((norms > self.max_grad_norm).float().mean()))

    def _delta(self, delta):
        delta = self.delta if delta is None else delta
        if delta is None:
            raise ValueError("no δ given: pass delta (e.g. privtrans.shared.dp.default_delta(N))")
        return delta

    def epsilon(self, delta: float | None = None) -> float:
        return self.accountant.get_epsilon(delta=self._delta(delta))

    def budget(self, delta: float | None = None) -> Budget:
        delta = self._delta(delta)
        steps = sum(n for _, _, n in self.accountant.history)
        return Budget(self.epsilon(delta), delta, self.noise_multiplier, self.sample_rate, steps)


def dp_gradient(model, loss_fn, *, max_grad_norm: float, noise_multiplier: float,
                expected_batch_size: int, clipping: str = "automatic", gamma: float = 0.01,
                generator=None, clipper: PhantomClipper | None = None) -> torch.Tensor:
    """Set p.grad = (Σ_i c_i g_i + σ·C·N(0, I)) / expected_batch_size; return the (B,) norms."""
    clipper = clipper or PhantomClipper(model)
    with clipper.capture():
        losses = loss_fn()
    norms = clipper.backward(losses)
    clipper.write_clipped_sum(clip_factors(norms, max_grad_norm, clipping, gamma))
    for p in clipper.params.values():
        noise = _generate_noise(noise_multiplier * max_grad_norm, p.grad, generator=generator)
        p.grad = (p.grad + noise) / expected_batch_size
    return norms.detach()
