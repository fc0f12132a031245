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
        plan = privacy_plan(float(spec.epsilon), n, spec.batch_size, spec.epochs)
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


# ------------------------------------------------------------------------------------ k seeds together
# Issue 21: the seeds of one spec trained as one vectorised model (privtrans.shared.seeds_together),
# equal to the runs apart to float tolerance (tests/test_dpformer_together.py). What makes it exact:
#
# - every seed builds its model, its Poisson/shuffle sampler (numpy, seeded by the seed) and its noise
#   generator (seed + 1) exactly as ``train_run`` does; batches of different sizes are padded to one B
#   with ``present`` = 0 (a padded example gets clip factor 0, so it adds nothing);
# - dropout: a run apart draws its masks from the global torch RNG that ``torch.manual_seed(seed)``
#   seeded and model initialisation advanced. Here each seed keeps that state in its own generator
#   and draws the same masks in the same order and shapes (CPU dropout is ``empty_like(x).bernoulli_(1
#   - p) / (1 - p)``), which the stacked forward then *replays* (``_ReplayDropout``) instead of drawing
#   one stream for the whole stack. CUDA's fused dropout cannot be replayed: there, and only where
#   dropout > 0, the seeds run apart (``together_supported``);
# - non-private: the loss of the stack is the sum of the seeds' mean losses (gradients do not mix),
#   Adam (weight decay 1e-5) and the warm-up/decay schedule act entry by entry on the stacked tensors;
# - DP: per-sample gradients by ``vmap(grad)`` inside the seed ``vmap`` (what ``seeds_together.
#   dp_gradient`` does, here with the dropout masks fed per sample), the chapter's clipping (automatic,
#   C = 1, γ = 0.01) and each seed's noise drawn parameter by parameter as PhantomStep / OpacusHooksStep
#   / noise_only draw it. Phantom and opacus give the same per-sample norms, so one vectorised step
#   stands for either engine (the result names the spec's engine, as a run apart does);
# - Re-Attention is installed on the stack's functional base (it reads the live, batched weights and
#   the per-sample trace; its formulas are per sample and vmap-safe: moments.py) and on every seed's
#   own model for the evaluations, which run on the written-back models exactly as apart.
#
# Every method of METHODS runs under vmap (the SASRec variants, DPFormer and the nn.Linear GRU/LSTM
# cells: no in-place update of a parameter, no .item(), no data-dependent branch in a forward).
# Cost: exact, but on the book's CPU not cheaper than the runs apart (benchmarks/seeds_together_dpformer.py:
# DP-SGD 2-3x slower at ci sizes, since vmap(grad) materialises k·B·|θ| per-sample gradients where the
# runs apart use Phantom Clipping, which builds none; non-private about break-even), so the runner
# (runs.cached_runs) trains seeds apart unless asked (runs.TOGETHER_BY_DEFAULT).

def together_supported(spec: RunSpec, device=None) -> bool:
    """Whether the seeds of ``spec`` can be trained together *exactly* (see above): everywhere on the
    CPU; on another device only without dropout (its fused dropout kernel cannot be replayed)."""
    from privtrans.book.device import pick_device

    device = torch.device(device) if device is not None else pick_device()
    return device.type == "cpu" or spec.dropout == 0


class _ReplayDropout(torch.nn.Module):
    """Stands in for ``nn.Dropout`` in the stacked model: multiplies by the next pre-drawn mask (already
    divided by 1 - p) of the shared ``feed``, so call i of a forward gets the mask a run apart drew at
    its i-th dropout call."""

    def __init__(self, p: float, feed: list):
        super().__init__()
        self.p, self.feed = p, feed

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        return x * self.feed.pop(0)


class _ShapeProbe(torch.nn.Module):
    """Records the shape of each dropout call of one forward (the masks a run apart would draw)."""

    def __init__(self, p: float, calls: list):
        super().__init__()
        self.p, self.calls = p, calls

    def forward(self, x):
        if self.training and self.p > 0:
            self.calls.append((self.p, tuple(x.shape[1:])))
        return x


def _swap_dropout(model: torch.nn.Module, make) -> None:
    for name, mod in list(model.named_modules()):
        for cname, child in list(mod.named_children()):
            if isinstance(child, torch.nn.Dropout):
                setattr(mod, cname, make(child.p))


def _dropout_calls(model: torch.nn.Module, x: torch.Tensor) -> list[tuple[float, tuple]]:
    """(p, per-example shape) of every dropout draw of one training forward, in call order."""
    import copy

    probe = copy.deepcopy(model).cpu()
    calls: list = []
    _swap_dropout(probe, lambda p: _ShapeProbe(p, calls))
    probe.train()
    with torch.no_grad():
        probe(x[:1].cpu())
    return calls


def _draw_masks(calls, gens, sizes, width: int, device) -> list[torch.Tensor]:
    """Stacked (k, width, ...) dropout masks: seed i's rows drawn from ``gens[i]`` as a run apart draws
    them for its batch of ``sizes[i]`` examples; padded rows are 1."""
    out = []
    for p, shape in calls:
        per_seed = []
        for g, b in zip(gens, sizes):
            m = torch.ones((width, *shape))
            if p >= 1:
                m[:b] = 0
            elif b:
                m[:b] = torch.empty((b, *shape)).bernoulli_(1 - p, generator=g).div_(1 - p)
            per_seed.append(m)
        out.append(torch.stack(per_seed).to(device))
    return out


def _stack_forward(stack, feed: list, x: torch.Tensor, masks: list[torch.Tensor]) -> torch.Tensor:
    """(k, B, L, V) logits of every seed on its own batch, with its own dropout masks."""
    from torch.func import functional_call, vmap

    def one(p, b, xi, mi):
        feed[:] = list(mi)
        return functional_call(stack.base, (p, b), (xi,), tie_weights=True)

    return vmap(one, in_dims=(0, 0, 0, 0), randomness="error")(stack.params, stack.buffers, x, masks)


def _dp_gradient_together(stack, feed: list, x, y, masks, present, sizes, *, noise_multiplier: float,
                          expected_batch_size: int, generators) -> list[float | None]:
    """Every seed's DP gradient into the stacked ``p.grad`` (as ``seeds_together.dp_gradient``, with
    each example's dropout masks fed to its own forward); returns each seed's mean loss over its real
    examples (None for an empty batch, which releases noise only, as ``noise_only`` does)."""
    from torch.func import functional_call, grad_and_value, vmap

    from privtrans.shared.dp.clipping import clip_factors
    from privtrans.shared.dp.step import gaussian_noise

    names = [n for n, p in stack.params.items() if p.requires_grad]
    frozen = {n: p for n, p in stack.params.items() if not p.requires_grad}

    def one_sample(trainable, frozen_i, buffers_i, xi, yi, mi):
        feed[:] = [m.unsqueeze(0) for m in mi]
        out = functional_call(stack.base, ({**trainable, **frozen_i}, buffers_i), (xi.unsqueeze(0),),
                              tie_weights=True)
        return per_sample_loss(out, yi.unsqueeze(0)).sum()

    per_seed = vmap(grad_and_value(one_sample), in_dims=(None, None, None, 0, 0, 0), randomness="error")
    trainable = {n: stack.params[n].detach() for n in names}
    g, loss = vmap(per_seed, in_dims=(0, 0, 0, 0, 0, 0), randomness="error")(
        trainable, frozen, stack.buffers, x, y, masks)
    norms = torch.sqrt(sum(t.flatten(2).pow(2).sum(2) for t in g.values()))  # (k, B)
    coef = clip_factors(norms, CLIP_NORM, "automatic", AUTO_CLIP_GAMMA) * present.to(norms.dtype)
    std = noise_multiplier * CLIP_NORM
    with torch.no_grad():
        for i, gen in enumerate(generators):
            for n in names:
                s = torch.einsum("b,b...->...", coef[i], g[n][i])
                p = stack.params[n]
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                p.grad[i] = (s + gaussian_noise(std, s, gen)) / expected_batch_size
    return [float(loss[i, :b].mean()) if b else None for i, b in enumerate(sizes)]


def train_together(spec: RunSpec, split: Split, seeds, device=None, log=None) -> list[dict]:
    """``[train_run(spec.with_(seed=s), split) for s in seeds]``, trained as one vectorised model.

    Each result is what the run apart returns (same samples, dropout masks, noise, schedule and
    evaluations; equal to float tolerance), except ``seconds``: the wall time of the whole group
    divided by its size, with ``seeds_together`` = the group's size. Exact only where
    :func:`together_supported` holds (it raises otherwise).
    """
    from privtrans.book.device import pick_device
    from privtrans.shared.seeds_together import Stack

    seeds = [int(s) for s in seeds]
    if not seeds:
        return []
    device = torch.device(device) if device is not None else pick_device()
    if not together_supported(spec, device):
        raise ValueError(f"{spec.method} with dropout {spec.dropout} on {device}: dropout cannot be replayed "
                         "there; train the seeds apart (train_run)")
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    specs = [spec.with_(seed=s) for s in seeds]
    k = len(seeds)

    x_all, y_all = inputs_targets(split.train)
    x_all, y_all = x_all[:, -spec.max_len:], y_all[:, -spec.max_len:]
    test_in = split.test_input[:, -spec.max_len:]
    n = len(x_all)
    if spec.batch_size > n:
        raise ValueError(f"batch_size {spec.batch_size} exceeds the number of users {n}")

    models, rngs, gens, drop_gens = [], [], [], []
    for s in specs:  # what train_run does before its loop, seed by seed
        torch.manual_seed(s.seed)
        rngs.append(np.random.default_rng(s.seed))
        g = torch.Generator(device=device)
        g.manual_seed(s.seed + 1)
        gens.append(g)
        models.append(build_model(s, split.n_items).to(device))
        dg = torch.Generator()
        dg.set_state(torch.get_rng_state())  # the global stream a run apart draws its dropout from
        drop_gens.append(dg)

    plan, engine = None, "non-private"
    if spec.epsilon is not None:
        plan = privacy_plan(float(spec.epsilon), n, spec.batch_size, spec.epochs)
        total, engine = plan.steps, ENGINE_NAMES[spec.engine]
    else:
        total = max(1, int(round(spec.epochs * n / spec.batch_size)))
    eval_at = {min(total, max(1, int(round(e * total / spec.epochs)))): e
               for e in range(spec.eval_every, spec.epochs + 1, spec.eval_every)}
    eval_at[total] = spec.epochs

    xt, yt = torch.as_tensor(x_all, device=device), torch.as_tensor(y_all, device=device)
    calls = _dropout_calls(models[0], xt)
    stack = Stack(models)  # before Re-Attention: the stack deep-copies models[0]
    feed: list = []
    _swap_dropout(stack.base, lambda p: _ReplayDropout(p, feed))
    if spec.method == "dpformer":
        from privtrans.dpformer import reattention

        freq = reattention.item_frequencies(torch.as_tensor(split.train), split.n_items)
        sigma_dp = plan.noise_multiplier if plan else 0.0
        for m in (stack.base, *models):
            reattention.enable(m, sigma_dp=sigma_dp, batch_size=spec.batch_size, item_freq=freq)

    opt = torch.optim.Adam(stack.parameters(), lr=spec.lr, weight_decay=spec.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, spec.warmup_frac))
    curves: list[list] = [[] for _ in seeds]
    losses: list[list] = [[] for _ in seeds]

    stack.train()
    for step in dry.loop(steps(range(1, total + 1), desc=f"{spec.method} eps={spec.epsilon} ×{k} seeds"),
                         "train steps (seeds together)"):
        if plan is not None:
            idx = [np.flatnonzero(r.random(n) < plan.sample_rate) for r in rngs]
        else:
            idx = [r.choice(n, size=spec.batch_size, replace=False) for r in rngs]
        sizes = [len(i) for i in idx]
        width = max(1, max(sizes))
        ix = torch.zeros(k, width, dtype=torch.long)
        present = torch.zeros(k, width)
        for i, ii in enumerate(idx):
            ix[i, :len(ii)] = torch.as_tensor(ii, dtype=torch.long)
            present[i, :len(ii)] = 1
        ix, present = ix.to(device), present.to(device)
        masks = _draw_masks(calls, drop_gens, sizes, width, device)
        opt.zero_grad(set_to_none=True)
        if plan is None:
            out = _stack_forward(stack, feed, xt[ix], masks)
            per_seed = torch.stack([per_sample_loss(out[i], yt[ix[i]]).mean() for i in range(k)])
            per_seed.sum().backward()
            step_losses = [float(v) for v in per_seed.detach()]
        else:
            step_losses = _dp_gradient_together(stack, feed, xt[ix], yt[ix], masks, present, sizes,
                                                noise_multiplier=plan.noise_multiplier,
                                                expected_batch_size=spec.batch_size, generators=gens)
        for i, v in enumerate(step_losses):
            if v is not None:
                losses[i].append(v)
        opt.step()
        sched.step()
        if step in eval_at:
            stack.write_back()
            for i, (m, s) in enumerate(zip(models, specs)):
                m.eval()
                res = metrics.evaluate(lambda q, m=m: score_next(m, q), test_in, split.test_target, k=10,
                                       device=device)
                m.train()
                curves[i].append({"epoch": eval_at[step], "step": step, **res})
                if log:
                    log(f"{s.method} ε={s.epsilon} seed={s.seed} epoch {eval_at[step]}: "
                        f"NDCG@10={res['ndcg@10']:.4f} HIT@10={res['hit@10']:.4f}")

    stack.write_back()
    if dry.active() and not curves[0]:  # a dry run cut the steps before the first evaluation: evaluate once
        for i, m in enumerate(models):
            m.eval()
            res = metrics.evaluate(lambda q, m=m: score_next(m, q), test_in, split.test_target, k=10, device=device)
            m.train()
            curves[i].append({"epoch": min(eval_at.values()), "step": step, **res})
    priv = None
    if plan is not None:
        priv = {"epsilon": float(plan.epsilon), "epsilon_target": float(spec.epsilon), "delta": plan.delta,
                "noise_multiplier": float(plan.noise_multiplier), "sample_rate": plan.sample_rate,
                "steps": plan.steps, "accountant": plan.accountant, "engine": engine}
    seconds = (time.perf_counter() - t0) / k
    out = []
    for i, (m, s) in enumerate(zip(models, specs)):
        if spec.method == "dpformer":
            from privtrans.dpformer import reattention

            reattention.disable(m)
        final = curves[i][-1]
        m.cpu()
        out.append({
            "spec": s.as_dict(),
            "ndcg@10": final["ndcg@10"],
            "hit@10": final["hit@10"],
            "test_ce": final.get("ce"),
            "curve": curves[i],
            "train_loss": losses[i],
            "privacy": dict(priv) if priv else None,
            "privacy_label": privacy_label(priv),
            "engine": engine,
            "seconds": seconds,
            "seeds_together": k,
            "n_params": int(sum(p.numel() for p in m.parameters())),
            "state_dict": {key: v.detach().clone() for key, v in m.state_dict().items()},
        })
    return out
