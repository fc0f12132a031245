"""DP-SGD steps with Phantom Clipping: one that plugs into opacus' optimizer and accountant, and
stateless ones for training loops that sample and account themselves.

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

Training loops that do their own sampling and accounting call a step object instead:
``make_dp_step(engine, model, per_sample_loss, *, noise_multiplier, expected_batch_size,
max_grad_norm=1.0, clipping="automatic", gamma=0.01, generator=None)`` returns a
:class:`PhantomStep` (``engine="phantom"``) or an :class:`OpacusHooksStep` (``engine="opacus"``,
exact per-sample gradients from opacus hooks: a cross-check that differs only in cost). Both map
``step(x, y) -> mean loss`` after setting ``p.grad`` as ``dp_gradient`` does, with
``per_sample_loss(model(x), y) -> (B,)``. :func:`noise_only` is the update of an empty Poisson
batch. :func:`gaussian_noise` is their noise draw, N(0, std²) per entry with std = σ·C (public
torch API, the same draw as opacus' optimizer makes).

Sampling: opacus' accountant assumes Poisson sampling at rate q; use ``opacus.data_loader.
DPDataLoader`` for it, or state that fixed-size shuffled batches approximate it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
from opacus.accountants import RDPAccountant
from opacus.optimizers import DPOptimizerFastGradientClipping

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


def gaussian_noise(std: float, like: torch.Tensor, generator=None) -> torch.Tensor:
    """N(0, std²) per entry, shaped like ``like`` (the Gaussian mechanism's draw; std = σ·C)."""
    if std < 0:
        raise ValueError(f"noise std must be >= 0, got {std}")
    if std == 0:
        return torch.zeros_like(like)
    return torch.normal(0.0, float(std), like.shape, generator=generator, device=like.device, dtype=like.dtype)


def _noise_and_average(params, std: float, expected_batch_size: int, generator) -> None:
    """p.grad <- (p.grad + N(0, std²)) / B for every parameter (a missing grad counts as 0)."""
    for p in params:
        g = p.grad if p.grad is not None else torch.zeros_like(p)
        p.grad = (g + gaussian_noise(std, g, generator)) / expected_batch_size


def dp_gradient(model, loss_fn, *, max_grad_norm: float, noise_multiplier: float,
                expected_batch_size: int, clipping: str = "automatic", gamma: float = 0.01,
                generator=None, clipper: PhantomClipper | None = None) -> torch.Tensor:
    """Set p.grad = (Σ_i c_i g_i + σ·C·N(0, I)) / expected_batch_size; return the (B,) norms."""
    clipper = clipper or PhantomClipper(model)
    with clipper.capture():
        losses = loss_fn()
    norms = clipper.backward(losses)
    clipper.write_clipped_sum(clip_factors(norms, max_grad_norm, clipping, gamma))
    _noise_and_average(clipper.params.values(), noise_multiplier * max_grad_norm, expected_batch_size,
                       generator)
    return norms.detach()


class PhantomStep:
    """``step(x, y) -> mean loss``: the DP gradient of one batch by Phantom Clipping (:func:`dp_gradient`).

    One clipper per model, so its first-step validation against autograd runs once per training run.
    """

    def __init__(self, model, per_sample_loss, *, noise_multiplier: float, expected_batch_size: int,
                 max_grad_norm: float = 1.0, clipping: str = "automatic", gamma: float = 0.01,
                 generator=None):
        clip_factors(torch.ones(1), max_grad_norm, clipping, gamma)  # validates the settings
        self.model, self.loss = model, per_sample_loss
        self.kw = dict(max_grad_norm=max_grad_norm, noise_multiplier=noise_multiplier,
                       expected_batch_size=expected_batch_size, clipping=clipping, gamma=gamma,
                       generator=generator)
        self.clipper = PhantomClipper(model)

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> float:
        seen = []

        def loss_fn():
            losses = self.loss(self.model(x), y)
            seen.append(float(losses.detach().mean()))
            return losses

        dp_gradient(self.model, loss_fn, clipper=self.clipper, **self.kw)
        return seen[0]


class OpacusHooksStep:
    """The same DP gradient from opacus's exact per-sample gradients (``GradSampleModule``, hooks).

    Materialises B·|θ| numbers, so it is only a cross-check of :class:`PhantomStep`; it follows a
    module tie (nn.Embedding and nn.Linear sharing one Parameter).
    """

    def __init__(self, model, per_sample_loss, *, noise_multiplier: float, expected_batch_size: int,
                 max_grad_norm: float = 1.0, clipping: str = "automatic", gamma: float = 0.01,
                 generator=None):
        from opacus import GradSampleModule

        clip_factors(torch.ones(1), max_grad_norm, clipping, gamma)  # validates the settings
        self.gsm = GradSampleModule(model, loss_reduction="sum")
        self.loss = per_sample_loss
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.sigma, self.B, self.gen = noise_multiplier, expected_batch_size, generator
        self.C, self.clipping, self.gamma = max_grad_norm, clipping, gamma

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> float:
        for p in self.params:
            p.grad, p.grad_sample = None, None
        losses = self.loss(self.gsm(x), y)
        with warnings.catch_warnings():  # opacus's hooks on the first layer (ids need no grad)
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            losses.sum().backward()
        norms = torch.stack([p.grad_sample.flatten(1).pow(2).sum(1) for p in self.params]).sum(0).sqrt()
        coef = clip_factors(norms, self.C, self.clipping, self.gamma)
        for p in self.params:
            p.grad, p.grad_sample = torch.einsum("b,b...->...", coef, p.grad_sample), None
        _noise_and_average(self.params, self.sigma * self.C, self.B, self.gen)
        return float(losses.detach().mean())


ENGINES = {"phantom": PhantomStep, "opacus": OpacusHooksStep}


def make_dp_step(engine: str, model, per_sample_loss, **kw):
    """The DP step of ``engine`` ('phantom' or 'opacus') for ``model``; keywords as :class:`PhantomStep`."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {sorted(ENGINES)}, got {engine!r}")
    return ENGINES[engine](model, per_sample_loss, **kw)


def noise_only(model, *, noise_multiplier: float, expected_batch_size: int, max_grad_norm: float = 1.0,
               generator=None) -> None:
    """The update of an empty Poisson batch: p.grad = σ·C·N(0, I) / B (it must still be released)."""
    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        p.grad = None
    _noise_and_average(params, noise_multiplier * max_grad_norm, expected_batch_size, generator)
