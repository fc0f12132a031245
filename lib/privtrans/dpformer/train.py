"""One training loop for every method of Tables 1-2 and Figures 2, 6, 7: non-private or DP-SGD.

Methods (``METHODS``):

==========================  ================================================================
``gru`` / ``lstm``          GRU4Rec-style recurrent models, tied embedding (``baselines.RNNRec``)
``transformer_untied``      SASRec without parameter sharing (separate output layer)
``transformer_untied_half`` the same with the embedding dimension halved (Figure 2's third arm)
``transformer``             vanilla Transformer: SASRec with the tied embedding
``dpformer``                the tied SASRec with Re-Attention (``privtrans.dpformer.reattention``)
==========================  ================================================================

DP-SGD, the same for every method (paper §5 and A.9.3):

- user-level DP: one training sequence per user, N users; Poisson sampling with rate q = B/N
  (what the accountant assumes), ``epochs * round(N/B)`` steps;
- per-sample gradients are *normalised* with C = 1 (Bu et al. 2022 "automatic" clipping:
  g_i / (‖g_i‖ + 0.01)); Gaussian noise σ·C is added to their sum, which is divided by B;
- σ comes from the target ε: opacus's RDP accountant, δ = 1/(2N) as in fastDP, through
  :mod:`privtrans.shared.dp.accounting`; the ε of the σ actually used is returned with every result
  (``privacy``) and printed with it (``privacy_label``).

Per-sample gradients: every method is clipped by the same code, the shared DP step
(:class:`privtrans.shared.dp.step.PhantomStep`: Phantom Clipping, noise, averaging; the GRU/LSTM are
built from nn.Linear cells so it applies to them too). ``engine="opacus"`` swaps in
:class:`privtrans.shared.dp.step.OpacusHooksStep` (opacus's exact per-sample gradients, follows
module ties) as a cross-check: both give exact norms (tests/test_dpformer.py), so they differ only in
cost. This module adds only the chapter's choices: the loss, C = 1 and γ.

The learning rate warms up linearly over the first ``warmup_frac`` of the steps, then decays
linearly to 0 (paper A.9); Adam with weight decay 1e-5. Test metrics (full ranking) are logged
every ``eval_every`` epochs for Figure 6's curves.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace
from functools import lru_cache

import numpy as np
import torch

from privtrans.book import dry
from privtrans.book.progress_bar import steps

from . import metrics
from .data import Split

METHODS = ("gru", "lstm", "transformer_untied", "transformer_untied_half", "transformer", "dpformer")
LABELS = {
    "gru": "GRU",
    "lstm": "LSTM",
    "transformer_untied": "Transformer w/o PS",
    "transformer_untied_half": "Transformer w/o PS (d/2)",
    "transformer": "Transformer (vanilla)",
    "dpformer": "DPFormer",
}
TIED_TRANSFORMERS = ("transformer", "dpformer")
CLIP_NORM = 1.0          # the paper normalises per-sample gradients to C = 1 ...
AUTO_CLIP_GAMMA = 0.01   # ... as g / (‖g‖ + γ), fastDP's automatic clipping
ENGINE_NAMES = {"phantom": "phantom", "opacus": "opacus-hooks"}


@dataclass(frozen=True)
class RunSpec:
    """Everything that determines one training run (and so its cache key)."""

    method: str
    epsilon: float | None = None  # None: non-private
    epochs: int = 20
    batch_size: int = 256
    lr: float = 5e-3
    d: int = 64
    n_blocks: int = 2
    dropout: float = 0.2
    max_len: int = 50
    weight_decay: float = 1e-5
    warmup_frac: float = 0.2
    eval_every: int = 5
    seed: int = 0
    engine: str = "phantom"  # phantom | opacus: who computes the per-sample gradient norms

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; known: {', '.join(METHODS)}")
        if self.epsilon is not None and not self.epsilon > 0:
            raise ValueError(f"epsilon must be > 0 or None (non-private), got {self.epsilon}")
        if self.engine not in ("opacus", "phantom"):
            raise ValueError(f"engine must be 'phantom' or 'opacus', got {self.engine!r}")
        if min(self.epochs, self.batch_size, self.d, self.max_len) < 1 or not self.lr > 0:
            raise ValueError("epochs, batch_size, d, max_len must be >= 1 and lr > 0")

    def as_dict(self) -> dict:
        return asdict(self)

    def with_(self, **kw) -> "RunSpec":
        return replace(self, **kw)


def spec_from_cfg(cfg: dict, method: str, epsilon: float | None, seed: int, **over) -> RunSpec:
    """A RunSpec from a notebook's settings dict (keys named as RunSpec fields; others ignored)."""
    fields = {k: cfg[k] for k in RunSpec.__dataclass_fields__ if k in cfg}
    fields.update(method=method, epsilon=epsilon, seed=seed)
    fields.update(over)
    return RunSpec(**fields)


# ------------------------------------------------------------------------------------ models
def build_model(spec: RunSpec, n_items: int) -> torch.nn.Module:
    from .sasrec import SASRec

    from .baselines import RNNRec

    if spec.method in ("gru", "lstm"):
        return RNNRec(n_items, spec.d, spec.method, dropout=spec.dropout, tie=True)
    d = spec.d // 2 if spec.method == "transformer_untied_half" else spec.d
    tied = spec.method in TIED_TRANSFORMERS
    return SASRec(n_items, spec.max_len, d=d, n_blocks=spec.n_blocks, n_heads=1, dropout=spec.dropout,
                  tied=tied)


def score_next(model, seqs: torch.Tensor) -> torch.Tensor:
    """(B, M+1) scores of the item after each whole history (only the last position is scored)."""
    return model.scores(model.encode(seqs)[:, -1])


def per_sample_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(B,) mean next-item cross-entropy over each sample's non-pad targets."""
    from .sasrec import per_sample_loss as sasrec_loss

    return sasrec_loss(logits, targets)


def inputs_targets(train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shifted pairs from the (N, L+1) training array; no target where the input is padding."""
    x, y = train[:, :-1], train[:, 1:].copy()
    y[x == 0] = 0
    return x, y


# ------------------------------------------------------------------------------------ privacy
@lru_cache(maxsize=None)
def privacy_plan(epsilon: float, n: int, batch_size: int, epochs: int):
    """σ for a target ε: opacus RDP accountant, δ = 1/(2N), q = B/N (``privtrans.shared.dp.accounting``).

    Memoised: the accountant's search takes seconds and every method and seed of a table shares it.
    """
    from privtrans.shared.dp.accounting import noise_for_epsilon

    return noise_for_epsilon(epsilon, n_train=n, batch_size=batch_size, epochs=epochs)


def plan_of(spec: "RunSpec", n: int):
    """The privacy plan a run of ``spec`` on ``n`` users trains under (None for a non-private run)."""
    return None if spec.epsilon is None else privacy_plan(float(spec.epsilon), n, spec.batch_size, spec.epochs)


def privacy_label(priv: dict | None) -> str:
    """How every DP result states its budget: '(ε = 5, δ = 0.00053) via RDP; σ = 2.0, q = 0.27, 80 steps'."""
    if not priv:
        return "(non-private)"
    return (f"(ε = {priv['epsilon']:.3g}, δ = {priv['delta']:.3g}) via {priv['accountant'].upper()}; "
            f"σ = {priv['noise_multiplier']:.4g}, q = {priv['sample_rate']:.4g}, {priv['steps']} steps")


# ------------------------------------------------------------------------------------ DP steps
def make_dp_step(spec: "RunSpec", model, sigma: float, generator: torch.Generator):
    """(step, engine name): the shared DP step (Phantom unless ``spec.engine == 'opacus'``) with this
    chapter's clipping (normalisation, C = 1, γ = 0.01) and next-item loss."""
    from privtrans.shared.dp.step import make_dp_step as shared_step

    step = shared_step(spec.engine, model, per_sample_loss, noise_multiplier=sigma,
                       expected_batch_size=spec.batch_size, max_grad_norm=CLIP_NORM,
                       clipping="automatic", gamma=AUTO_CLIP_GAMMA, generator=generator)
    return step, ENGINE_NAMES[spec.engine]


# ------------------------------------------------------------------------------------ training
def lr_factor(step: int, total: int, warmup_frac: float) -> float:
    """Linear warm-up over the first warmup_frac of the steps, then linear decay to 0."""
    warm = max(1, int(round(warmup_frac * total)))
    if step < warm:
        return (step + 1) / warm
    return max(0.0, (total - step) / max(1, total - warm))


def train_run(spec: RunSpec, split: Split, device=None, log=None) -> dict:
    """Train one model; return metrics, the Figure 6 curve, the privacy budget and the weights."""
    from privtrans.book.device import pick_device
    from privtrans.shared.dp.step import noise_only

    device = torch.device(device) if device is not None else pick_device()
    torch.set_num_threads(1)  # one core per run: the build shares two cores; runs are small
    t0 = time.perf_counter()
    torch.manual_seed(spec.seed)
    rng = np.random.default_rng(spec.seed)
    gen = torch.Generator(device=device)
    gen.manual_seed(spec.seed + 1)

    x_all, y_all = inputs_targets(split.train)
    x_all, y_all = x_all[:, -spec.max_len:], y_all[:, -spec.max_len:]
    test_in = split.test_input[:, -spec.max_len:]
    n = len(x_all)
    model = build_model(spec, split.n_items).to(device)

    priv, ra, step_fn, engine, plan = None, None, None, "non-private", None
    if spec.batch_size > n:
        raise ValueError(f"batch_size {spec.batch_size} exceeds the number of users {n}")
    if spec.epsilon is not None:
        plan = plan_of(spec, n)
        total = plan.steps
        step_fn, engine = make_dp_step(spec, model, plan.noise_multiplier, gen)
    else:
        total = max(1, int(round(spec.epochs * n / spec.batch_size)))
    # evaluation after these steps (epoch boundaries every eval_every epochs, and the last step)
    eval_at = {min(total, max(1, int(round(e * total / spec.epochs)))): e
               for e in range(spec.eval_every, spec.epochs + 1, spec.eval_every)}
    eval_at[total] = spec.epochs
    if spec.method == "dpformer":
        from privtrans.dpformer import reattention

        freq = reattention.item_frequencies(torch.as_tensor(split.train), split.n_items)
        sigma_dp = plan.noise_multiplier if plan else 0.0
        ra = reattention.enable(model, sigma_dp=sigma_dp, batch_size=spec.batch_size, item_freq=freq)

    opt = torch.optim.Adam(model.parameters(), lr=spec.lr, weight_decay=spec.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, spec.warmup_frac))
    xt, yt = torch.as_tensor(x_all, device=device), torch.as_tensor(y_all, device=device)
    curve, losses = [], []

    def evaluate():
        model.eval()
        out = metrics.evaluate(lambda s: score_next(model, s), test_in, split.test_target, k=10, device=device)
        model.train()
        return out

    model.train()
    for step in dry.loop(steps(range(1, total + 1), desc=f"{spec.method} eps={spec.epsilon}"), "train steps"):
        if plan is not None:  # Poisson sampling, as the accountant assumes
            idx = np.flatnonzero(rng.random(n) < plan.sample_rate)
        else:
            idx = rng.choice(n, size=spec.batch_size, replace=False)
        ix = torch.as_tensor(idx, device=device, dtype=torch.long)
        opt.zero_grad(set_to_none=True)
        if step_fn is None:
            loss = per_sample_loss(model(xt[ix]), yt[ix]).mean()
            loss.backward()
            losses.append(float(loss.detach()))
        elif len(idx):
            losses.append(step_fn(xt[ix], yt[ix]))
        else:
            noise_only(model, noise_multiplier=plan.noise_multiplier, expected_batch_size=spec.batch_size,
                       max_grad_norm=CLIP_NORM, generator=gen)
        opt.step()
        sched.step()
        if step in eval_at:
            m = evaluate()
            curve.append({"epoch": eval_at[step], "step": step, **m})
            if log:
                log(f"{spec.method} ε={spec.epsilon} seed={spec.seed} epoch {eval_at[step]}: "
                    f"NDCG@10={m['ndcg@10']:.4f} HIT@10={m['hit@10']:.4f}")

    if dry.active() and not curve:  # a dry run cut the steps before the first evaluation: evaluate once
        curve.append({"epoch": min(eval_at.values()), "step": step, **evaluate()})
    if plan is not None:
        priv = {"epsilon": float(plan.epsilon), "epsilon_target": float(spec.epsilon), "delta": plan.delta,
                "noise_multiplier": float(plan.noise_multiplier), "sample_rate": plan.sample_rate,
                "steps": plan.steps, "accountant": plan.accountant, "engine": engine}
    if ra is not None:
        from privtrans.dpformer import reattention

        reattention.disable(model)
    final = curve[-1]
    model.cpu()
    return {
        "spec": spec.as_dict(),
        "ndcg@10": final["ndcg@10"],
        "hit@10": final["hit@10"],
        "test_ce": final.get("ce"),
        "curve": curve,
        "train_loss": [float(v) for v in losses],
        "privacy": priv,
        "privacy_label": privacy_label(priv),
        "engine": engine,
        "seconds": time.perf_counter() - t0,
        "n_params": int(sum(p.numel() for p in model.parameters())),
        "state_dict": {k: v.detach().clone() for k, v in model.state_dict().items()},
    }


def load_model(result: dict, n_items: int) -> torch.nn.Module:
    """Rebuild a trained model from a result (e.g. a cached one) for inspection (Figure 9)."""
    spec = RunSpec(**result["spec"])
    model = build_model(spec, n_items)
    model.load_state_dict(result["state_dict"])
    model.eval()
    return model


def fmt_pm(mean: float, std: float, scale: float = 100.0) -> str:
    """'4.57 ± 0.26' in percent, as the paper's tables; '4.57 ± –' when there is no spread (one seed)."""
    if math.isnan(mean):
        return "–"
    return f"{mean * scale:.2f} ± " + ("–" if math.isnan(std) else f"{std * scale:.2f}")
