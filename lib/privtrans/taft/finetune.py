"""Fine-tuning on cached features: TAFT (the tangent model), NLFT (the same layers, non-linear), FC,
and the parameter-efficient baselines of Table 11 (Adapter, LoRA: ``peft``) on the same layers.

Every method trains only the last ``tuned`` blocks, the final norm and the head, so the frozen
part (patch embedding and the first blocks) runs once per image and its output is cached, as the
paper suggests for TAFT (Section 5) and as our prototype did for all methods. The head is always
new (freshly initialised for the task's classes), as in the authors' code, and every model that
is composed or compared starts from the same initialisation (``init_seed``).

Settings that follow the authors' code rather than the text: RSL with
α = 1 (``F.mse_loss`` to κ·one-hot), the regulariser ``wd·‖Δw‖₂`` (the norm, not its square),
AdamW with weight decay 0 (Adam), the learning rate ×0.1 at the epochs in ``decay_at``.
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field, replace

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import vmap

from privtrans.book import dry, profiles
from privtrans.book.device import placed, resolve

from . import peft
from .losses import LOSSES, l2_norm_penalty, loss_fn
from .tangent import TangentViT
from .vit import ViT

METHODS = ("taft", "nlft", "fc") + peft.METHODS
REGIMES = ("full", "bitfit", "ln", "head")


@dataclass(frozen=True)
class FitSpec:
    """One fine-tuning run's settings (the columns of the paper's Tables 4-6 and a few more)."""

    method: str = "taft"
    tuned: int = 1  # blocks linearised / fine-tuned (TAFT-k, NLFT-k); FC: 0
    lr: float = 1e-3
    loss: str = "rsl"
    kappa: float = 15.0
    alpha: float = 1.0
    pt: bool = True  # linearise around the pretrained tuned blocks (False: re-initialise them first)
    cls: bool = False  # TAFT: linearise a reset CLS token (Figure 2c)
    epochs: int = 30
    batch: int = 32
    decay_at: tuple = (15, 25)
    wd: float = 1e-5  # coefficient of the regulariser wd·‖Δw‖₂ (TAFT only)
    radius: float | None = None  # PGD: project Δw onto ‖Δw‖₂ ≤ radius after every step (Table 12)
    regime: str = "full"
    rank: int = 8  # Adapter bottleneck / LoRA rank (Table 11)

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if self.regime not in REGIMES:
            raise ValueError(f"regime must be one of {REGIMES}, got {self.regime!r}")
        if self.method == "fc" and self.tuned != 0:
            object.__setattr__(self, "tuned", 0)
        if self.method in peft.METHODS and (self.tuned < 1 or self.regime != "full"):
            raise ValueError(f"{self.method} needs tuned >= 1 and regime 'full' (it trains its own weights and the "
                             f"head), got tuned={self.tuned}, regime={self.regime!r}")
        object.__setattr__(self, "decay_at", tuple(self.decay_at))

    def with_(self, **kw) -> "FitSpec":
        return replace(self, **kw)

    def as_dict(self) -> dict:
        return asdict(self)


def spec_from(cfg: dict, **over) -> FitSpec:
    """A FitSpec from a profile mapping (lists become tuples) with overrides."""
    d = dict(cfg, **over)
    if "decay_at" in d:
        d["decay_at"] = tuple(d["decay_at"])
    return profiles.build(FitSpec, d, "fine-tuning")


def describe(spec: FitSpec) -> str:
    """A spec in the paper's Table 4-6 notation (LR, κ, PT, CLS)."""
    parts = [f"LR={spec.lr:g}"]
    if spec.method == "taft":
        parts += [f"κ={spec.kappa:g}" if spec.loss == "rsl" else spec.loss.upper(), f"PT={'T' if spec.pt else 'F'}",
                  f"CLS={'T' if spec.cls else 'F'}"]
    if spec.method in ("adapter", "lora"):
        parts.append(f"r={spec.rank}")
    return ", ".join(parts)


def task_vit(vit: ViT, classes: int, *, tuned: int, pt: bool, init_seed: int) -> ViT:
    """A copy of the backbone with a new head for ``classes`` and, for PT = F, the last ``tuned``
    blocks and the final norm re-initialised (PyTorch's default initialisation, as in the authors'
    code, whose ViT constructor does not call timm's init)."""
    out = copy.deepcopy(vit)
    with torch.random.fork_rng():
        torch.manual_seed(init_seed)
        out.head = nn.Linear(vit.cfg.dim, classes)
        if not pt:
            for blk in out.blocks[len(out.blocks) - tuned:]:
                for m in blk.modules():
                    if isinstance(m, (nn.Linear, nn.LayerNorm)):
                        m.reset_parameters()
            out.norm.reset_parameters()
    return out.requires_grad_(False)


class PlainTail(nn.Module):
    """The last ``tuned`` blocks, norm and head of a ViT on cached features (NLFT and FC)."""

    def __init__(self, vit: ViT, tuned: int):
        super().__init__()
        self.cut = len(vit.blocks) - tuned
        self.blocks = copy.deepcopy(vit.blocks[self.cut:])
        self.norm, self.head = copy.deepcopy(vit.norm), copy.deepcopy(vit.head)

    def forward(self, x):
        for i, blk in enumerate(self.blocks):
            x = blk(x, cls_only=i == len(self.blocks) - 1)
        return self.head(self.norm(x[:, 0]))


class TangentTail(nn.Module):
    """TAFT on cached features: f_w0 + J f_w0·Δw (``output="sum"``, the paper's non-DP prediction)
    or the JVP term alone (``output="jvp"``, its DP prediction)."""

    def __init__(self, vit: ViT, tuned: int, cls: bool = False, output: str = "sum", cls_seed: int = 0):
        super().__init__()
        if output not in ("sum", "jvp"):
            raise ValueError(f"output must be 'sum' or 'jvp', got {output!r}")
        self.t, self.output = TangentViT(vit, tuned=tuned, cls=cls, cls_seed=cls_seed), output
        self.t.frozen = None  # features are cached outside; the frozen copy is not needed here
        self.cut = self.t.cut

    def forward(self, x):
        f0, jvp = self.t.from_features(x)
        return f0 + jvp if self.output == "sum" else jvp


def features(vit: ViT, images: torch.Tensor, cut: int, batch: int = 512) -> torch.Tensor:
    """Tokens after the embedding and the first ``cut`` blocks (what every method starts from)."""
    out = []
    with torch.no_grad():
        for i in range(0, len(images), batch):
            x = vit.embed(images[i:i + batch])
            for blk in vit.blocks[:cut]:
                x = blk(x)
            out.append(x)
    return torch.cat(out)


def select(model: nn.Module, regime: str) -> list[str]:
    """Mark the trainable parameters of a regime (Table 3): every tuned weight ('full'), biases and
    the head ('bitfit'), LayerNorm affine parameters and the head ('ln'), the head only ('head').
    Names are matched the same way on the tangent (Δ) and the plain model."""
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    names = []
    for name, p in model.named_parameters():
        plain = name.replace(".delta", "").replace("t.", "", 1) if name.startswith("t.") else name
        in_head = plain.startswith("head.")
        is_ln = ".norm1." in plain or ".norm2." in plain or plain.startswith("norm.")
        keep = (regime == "full" or in_head or (regime == "bitfit" and plain.endswith(".bias"))
                or (regime == "ln" and is_ln) or (regime == "full" and "cls_delta" in plain))
        p.requires_grad_(keep)
        if keep:
            names.append(name)
    return names


def make_model(vit: ViT, spec: FitSpec, classes: int, init_seed: int, output: str = "sum") -> nn.Module:
    """The trainable tail of ``spec``'s method, with its trainable parameters marked."""
    base = task_vit(vit, classes, tuned=spec.tuned, pt=spec.pt, init_seed=init_seed)
    if spec.method == "taft":
        model = TangentTail(base, spec.tuned, cls=spec.cls, output=output, cls_seed=init_seed)
    else:
        model = PlainTail(base, spec.tuned)
    if spec.method in peft.METHODS:
        peft.attach(model, spec.method, spec.rank, init_seed)
        for name, p in model.named_parameters():
            p.requires_grad_(peft.is_trainable(name, spec.method))
        return model
    select(model, "head" if spec.method == "fc" else spec.regime)
    return model


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.named_parameters() if v.requires_grad}


def load_trainable(model: nn.Module, state: dict[str, torch.Tensor]) -> nn.Module:
    params = dict(model.named_parameters())
    missing = {k for k, p in params.items() if p.requires_grad} - set(state)
    if missing:
        raise KeyError(f"state lacks trainable parameters {sorted(missing)}")
    with torch.no_grad():
        for k, v in state.items():
            params[k].copy_(v)
    return model


def project(params, radius: float) -> None:
    """Δw ← Δw·min(1, R/‖Δw‖₂), the global norm over every trainable tensor (our reading of App. D)."""
    with torch.no_grad():
        norm = torch.sqrt(sum((p * p).sum() for p in params))
        if norm > radius:
            for p in params:
                p.mul_(radius / norm)


@dataclass
class FitResult:
    state: dict
    seconds: float
    final_loss: float
    delta_norm: float
    history: list = field(default_factory=list)


def fit(model: nn.Module, x: torch.Tensor, y: torch.Tensor, spec: FitSpec, seed: int,
        classes: int | None = None, device=None) -> FitResult:
    """Mini-batch AdamW on cached features ``x``; the loss of ``spec``; returns the trained parameters.
    Trains on ``device`` (default: cuda when present) and leaves the model on the CPU; the data
    order comes from a CPU generator, so it is the same on every device."""
    dev = resolve(device)
    model.to(dev)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=spec.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=list(spec.decay_at), gamma=0.1)
    g = torch.Generator().manual_seed(seed)
    classes = classes or int(y.max()) + 1
    regularise = spec.method == "taft" and spec.wd > 0 and spec.radius is None
    t0, history, last = time.perf_counter(), [], float("nan")
    model.train()
    for _ in dry.loop(range(spec.epochs), "fine-tuning epochs"):
        perm = torch.randperm(len(y), generator=g)
        total = 0.0
        for i in dry.loop(range(0, len(y), spec.batch), "fine-tuning batches"):
            idx = perm[i:i + spec.batch]
            loss = loss_fn(model(x[idx].to(dev)), y[idx].to(dev), spec.loss, classes, spec.kappa, spec.alpha)
            if regularise:
                loss = loss + spec.wd * l2_norm_penalty(params)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if spec.radius is not None:
                project(params, spec.radius)
            total += float(loss.detach()) * len(idx)
        sched.step()
        last = total / len(y)
        history.append(last)
    model.cpu().eval()
    with torch.no_grad():
        dnorm = float(torch.sqrt(sum((p * p).sum() for p in params)))
    return FitResult(trainable_state(model), time.perf_counter() - t0, last, dnorm, history)


def l2_norm_penalty_per_seed(params, eps: float = 1e-6) -> torch.Tensor:
    """(k,): :func:`~privtrans.taft.losses.l2_norm_penalty` of each seed's slice of stacked tensors
    (leading dimension k), each seed's own norm: sqrt(eps + Σ_p Σ p_i²)."""
    return torch.sqrt(eps + sum((p * p).flatten(1).sum(1) for p in params))


def project_per_seed(params, radius: float) -> None:
    """:func:`project` on each seed's slice of stacked tensors: Δw_i ← Δw_i·min(1, R/‖Δw_i‖₂), the
    global norm over seed i's trainable tensors only (a norm over the whole stack would couple them)."""
    with torch.no_grad():
        norm = torch.sqrt(sum((p * p).flatten(1).sum(1) for p in params))
        over = norm > radius
        if bool(over.any()):
            coef = torch.where(over, radius / norm, torch.ones_like(norm))
            for p in params:
                p.mul_(coef.view(-1, *([1] * (p.dim() - 1))))


def per_seed_loss(out: torch.Tensor, y: torch.Tensor, spec: FitSpec, classes: int) -> torch.Tensor:
    """(k,): ``loss_fn`` of each seed's batch, ``out`` (k, b, K) and ``y`` (k, b), written batched (a
    ``vmap`` of ``loss_fn`` cost over 300 µs a step in dispatch, about half an FC step, measured)."""
    if spec.loss == "ce":
        return F.cross_entropy(out.transpose(1, 2), y, reduction="none").mean(1)
    if spec.loss in ("rsl", "mse"):
        kappa, alpha = (spec.kappa, spec.alpha) if spec.loss == "rsl" else (1.0, 1.0)
        onehot = F.one_hot(y, out.shape[-1]).to(out.dtype)
        weight = 1 + (alpha - 1) * onehot
        return (weight * (out - kappa * onehot) ** 2).sum(2).mean(1) / out.shape[-1]
    return vmap(lambda o, t: loss_fn(o, t, spec.loss, classes, spec.kappa, spec.alpha))(out, y)


VECTORISED = METHODS  # methods ``fit_together`` trains as one vmapped stack (every one, today)


def fit_together(models: list[nn.Module], x: torch.Tensor, y: torch.Tensor, spec: FitSpec, seeds: list[int],
                 classes: int | None = None, device=None) -> list[FitResult]:
    """``[fit(models[i], x, y, spec, seeds[i], classes) for i]``, trained as one vectorised model
    (``privtrans.shared.seeds_together.Stack``), equal to the runs apart to float tolerance (tested).

    ``models``: one per seed, built as ``fit``'s would be (``make_model(..., init_seed=seed)``); they
    are trained in place, as ``fit`` trains its model. Each seed keeps what its run apart has: its
    initialisation, its data order (the permutation ``fit`` draws from its own seed, epoch by epoch),
    its loss and TAFT regulariser wd·‖Δw_i‖₂ on its own Δw (the stack's loss is the *sum* of the
    seeds' losses, so slice i's gradient is seed i's own), its PGD projection on its own global norm
    (``project_per_seed``); AdamW and MultiStepLR act entry by entry. ``seconds`` of every result is
    the wall time of the whole stack divided by k (a seed's share, not the time of a run apart).
    Every method vectorises: the tangent model computes its JVP in closed form with ordinary
    operations (``tangent.py``, no ``torch.autograd.forward_ad``) and the PEFT wrappers are plain
    linear layers, so the loop of ``fit`` is needed only for one model. Device: as ``fit``.
    """
    if len(models) != len(seeds):
        raise ValueError(f"need one model per seed, got {len(models)} models for {len(seeds)} seeds")
    if spec.method not in VECTORISED or len(models) == 1:
        return [fit(m, x, y, spec, s, classes, device) for m, s in zip(models, seeds)]
    # imported here: privtrans.shared.seeds_together imports opacus (seconds), which plain fits never need
    from privtrans.shared.seeds_together import Stack, StackedBatches

    k = len(models)
    dev = resolve(device)
    stack = Stack([m.to(dev) for m in models])
    params = stack.parameters()
    opt = torch.optim.AdamW(params, lr=spec.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=list(spec.decay_at), gamma=0.1)
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    classes = classes or int(y.max()) + 1
    regularise = spec.method == "taft" and spec.wd > 0 and spec.radius is None
    t0, history = time.perf_counter(), []
    last = torch.full((k,), float("nan"), dtype=torch.float64)
    stack.train()
    for _ in dry.loop(range(spec.epochs), "fine-tuning epochs"):
        perms = [torch.randperm(len(y), generator=g) for g in gens]
        total = torch.zeros(k, dtype=torch.float64)  # each seed's running sum, in double as fit's Python float
        for idx in dry.loop(StackedBatches(perms, spec.batch), "fine-tuning batches"):
            loss = per_seed_loss(stack(x[idx].to(dev)), y[idx].to(dev), spec, classes)  # (k,)
            if regularise:
                loss = loss + spec.wd * l2_norm_penalty_per_seed(params)
            opt.zero_grad(set_to_none=True)
            loss.sum().backward()
            opt.step()
            if spec.radius is not None:
                project_per_seed(params, spec.radius)
            total += loss.detach().double().cpu() * idx.shape[1]
        sched.step()
        last = total / len(y)
        history.append(last.tolist())
    stack.eval()
    stack.write_back()
    seconds = (time.perf_counter() - t0) / k
    out = []
    for i, m in enumerate(models):
        m.cpu().eval()
        ps = [p for p in m.parameters() if p.requires_grad]
        with torch.no_grad():
            dnorm = float(torch.sqrt(sum((p * p).sum() for p in ps)))
        out.append(FitResult(trainable_state(m), seconds, float(last[i]), dnorm, [h[i] for h in history]))
    return out


def logits(model: nn.Module, x: torch.Tensor, batch: int = 1024) -> torch.Tensor:
    """The model's outputs on ``x`` (on the CPU), computed on the picked device (cuda when present);
    the model is put back where it was."""
    model.eval()
    with torch.no_grad(), placed(model) as dev:
        return torch.cat([model(x[i:i + batch].to(dev)).cpu() for i in range(0, len(x), batch)])


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    return float((logits(model, x).argmax(1) == y).float().mean())
