"""Pretraining the tiny ViT on MNIST-5k: the chapter's stand-in for an ImageNet-21k checkpoint.

No pretrained ViT weights ship in a PyPI wheel, so the backbone is made here (tens of seconds on
one thread) and kept in the run cache (``_build/cache/taft``); no weights are committed. Supervised
classification pretraining ("CLS" in Table 9) by default; ``scheme="mae"`` pretrains by masked
patch reconstruction (MAE-lite: 75 % of patches masked, a one-block decoder, pixel loss on the
masked patches) for Table 9's MAE rows; ``extra_glyph_digits`` adds font-rendered digits (more and
more varied pretraining data, our stand-in for Table 9's larger CLIP/IN-21k data).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from privtrans.book import dry, profiles
from privtrans.book.device import placed, resolve
from privtrans.book.runcache import RunCache

from . import data
from .vit import Block, ViT, ViTConfig

SCHEMES = ("cls", "mae")


@dataclass(frozen=True)
class PretrainSpec:
    epochs: int = 15
    lr: float = 2e-3
    weight_decay: float = 0.05
    batch: int = 128
    shift: int = 2  # random ±shift px translation (the only augmentation)
    scheme: str = "cls"
    dim: int = 64
    depth: int = 4
    heads: int = 4
    patch: int = 7
    extra_glyph_digits: int = 0  # font-rendered digits per class added to the training set
    mask_ratio: float = 0.75

    def __post_init__(self):
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}, got {self.scheme!r}")

    @classmethod
    def from_cfg(cls, cfg: dict) -> "PretrainSpec":
        return profiles.build(cls, cfg, "pretraining")

    def vit_config(self, classes: int = 10) -> ViTConfig:
        return ViTConfig(image=data.SIDE, patch=self.patch, dim=self.dim, depth=self.depth, heads=self.heads,
                         classes=classes)


@dataclass
class Backbone:
    state: dict  # ViT state_dict
    spec: dict
    val_acc: float | None  # MNIST-5k validation accuracy (None for MAE: no head)
    seconds: float
    history: list

    def model(self) -> ViT:
        vit = ViT(PretrainSpec(**self.spec).vit_config())
        vit.load_state_dict(self.state)
        return vit.eval().requires_grad_(False)


def shift(x: torch.Tensor, s: int, g: torch.Generator) -> torch.Tensor:
    """The pretraining's only augmentation: the whole batch rolled by one random (dx, dy) in [-s, s]."""
    if s == 0:
        return x
    dx, dy = (int(v) for v in torch.randint(-s, s + 1, (2,), generator=g))
    return torch.roll(x, shifts=(dy, dx), dims=(2, 3))


def one_cycle(model: nn.Module, params: list, n: int, spec, g: torch.Generator, step_loss, evaluate):
    """The backbones' pretraining loop (the ViT's and the CNN's): AdamW with a one-cycle schedule over
    ``spec.epochs`` epochs of batches ``spec.batch`` drawn from a permutation of ``n`` examples by
    ``g``; ``step_loss(idx)`` is a batch's loss, ``evaluate()`` the epoch's validation accuracy.
    Returns (per-epoch history, seconds)."""
    opt = torch.optim.AdamW(params, lr=spec.lr, weight_decay=spec.weight_decay)
    steps_per_epoch = (n + spec.batch - 1) // spec.batch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=spec.lr, total_steps=spec.epochs * steps_per_epoch)
    history, t0 = [], time.perf_counter()
    for epoch in dry.loop(range(spec.epochs), "pretraining epochs"):
        model.train()
        perm = torch.randperm(n, generator=g)
        total = 0.0
        for i in dry.loop(range(0, n, spec.batch), "pretraining batches"):
            idx = perm[i:i + spec.batch]
            loss = step_loss(idx)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(idx)
        model.eval()
        history.append({"epoch": epoch + 1, "train_loss": total / n, "val_acc": evaluate()})
    return history, time.perf_counter() - t0


class MAEDecoder(nn.Module):
    """One pre-norm block and a linear pixel head over [encoded visible tokens + mask tokens]."""

    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.mask_token = nn.Parameter(torch.zeros(1, 1, cfg.dim))
        self.pos = nn.Parameter(0.02 * torch.randn(1, cfg.tokens, cfg.dim))
        self.block, self.norm = Block(cfg), nn.LayerNorm(cfg.dim, eps=cfg.eps)
        self.pixels = nn.Linear(cfg.dim, cfg.patch**2)


def patches(images: torch.Tensor, p: int) -> torch.Tensor:
    b, _, h, w = images.shape
    return images.reshape(b, h // p, p, w // p, p).permute(0, 1, 3, 2, 4).reshape(b, (h // p) * (w // p), p * p)


def mae_loss(vit: ViT, dec: MAEDecoder, x: torch.Tensor, ratio: float, g: torch.Generator) -> torch.Tensor:
    tok = vit.embed(x)  # (b, 1 + L, d)
    b, n, d = tok.shape
    L = n - 1
    keep = max(1, int(round(L * (1 - ratio))))
    order = torch.argsort(torch.rand(b, L, generator=g), dim=1).to(x.device)  # drawn on the CPU: any device alike
    vis = order[:, :keep]
    h = torch.cat([tok[:, :1], torch.gather(tok[:, 1:], 1, vis[..., None].expand(-1, -1, d))], dim=1)
    for blk in vit.blocks:
        h = blk(h)
    h = vit.norm(h)
    full = dec.mask_token.expand(b, L, d).clone()
    full.scatter_(1, vis[..., None].expand(-1, -1, d), h[:, 1:])
    z = dec.norm(dec.block(torch.cat([h[:, :1], full], dim=1) + dec.pos))
    pred = dec.pixels(z[:, 1:])
    target = patches(x, vit.cfg.patch)
    masked = torch.ones(b, L, dtype=torch.bool, device=x.device)
    masked.scatter_(1, vis, False)
    return ((pred - target) ** 2).mean(-1)[masked].mean()


def accuracy(vit: ViT, x: torch.Tensor, y: torch.Tensor, batch: int = 500) -> float:
    """Accuracy on ``(x, y)``, computed on the picked device (cuda when present)."""
    with torch.no_grad(), placed(vit) as dev:
        pred = torch.cat([vit(x[i:i + batch].to(dev)).argmax(1).cpu() for i in range(0, len(x), batch)])
    return float((pred == y).float().mean())


def glyph_digits(per_class: int) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = data.render_glyphs("0123456789", per_class, np.random.default_rng(data.SPLIT_SEED + 1))
    return data.standardise(x), torch.as_tensor(y)


def pretrain(spec: PretrainSpec, seed: int, device=None) -> Backbone:
    """Train the backbone (AdamW, one-cycle schedule, batch 128, random shifts) on ``device``
    (default: cuda when present; weights are initialised and randomness drawn on the CPU)."""
    dev = resolve(device)
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    task = data.mnist5k()
    x, y = task.x_train, task.y_train
    if spec.extra_glyph_digits:
        gx, gy = glyph_digits(spec.extra_glyph_digits)
        x, y = torch.cat([x, gx]), torch.cat([y, gy])
    vit = ViT(spec.vit_config()).to(dev)
    params = list(vit.parameters())
    dec = None
    if spec.scheme == "mae":
        dec = MAEDecoder(spec.vit_config()).to(dev)
        params += list(dec.parameters())

    def step_loss(idx):
        xb = shift(x[idx], spec.shift, g).to(dev)
        if dec is not None:
            return mae_loss(vit, dec, xb, spec.mask_ratio, g)
        return F.cross_entropy(vit(xb), y[idx].to(dev))

    history, seconds = one_cycle(vit, params, len(y), spec, g, step_loss,
                                 lambda: accuracy(vit, task.x_test, task.y_test) if dec is None else None)
    return Backbone({k: v.detach().cpu().clone() for k, v in vit.state_dict().items()}, asdict(spec),
                    history[-1]["val_acc"], seconds, history)


def get_backbone(spec: PretrainSpec, seed: int = 0, cache: RunCache | None = None) -> tuple[Backbone, bool]:
    """(backbone, cached): from the run cache, pretrained on a miss."""
    cache = cache or RunCache("taft")
    return cache.get_or_make("backbone", _key_parts(spec, seed), lambda: pretrain(spec, seed), code=[__name__])


def backbone_key(spec: PretrainSpec, seed: int, cache: RunCache) -> str:
    """The backbone's cache key: every artefact trained from it carries it, so a retrained backbone
    is never served old fine-tunes."""
    return cache.key(_key_parts(spec, seed), code=[__name__])


def _key_parts(spec, seed: int) -> dict:
    """What a backbone's cache key holds besides its code (``get_backbone`` and ``backbone_key`` alike)."""
    return {"spec": asdict(spec), "seed": seed}
