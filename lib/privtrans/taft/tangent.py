"""The tangent (linearised) ViT: f_lin(x) = f_w0(x) + J f_w0(x)·Δw in one forward pass.

Every layer maps (h, ḣ) to (out, ȯut): the primal with the frozen pretrained weights w0 and the
tangent along w0 + rΔw at r = 0. The trainable Δ of each layer is a plain ``nn.Linear`` or
``nn.LayerNorm`` applied to the primal input (a Linear's Δ term is x ΔWᵀ + Δb, a LayerNorm's is
Δγ ⊙ x̂ + Δβ, exactly what those modules compute), so per-sample clipping (the book's Phantom clipper, and
opacus's hooks) sees them as ordinary leaves. The frozen weights are buffers, not parameters.

Per-layer rules as in the authors' code (their linearised layers), with the paper's GELU typo corrected
(Φ(x) + x φ(x), not GeLU(x)/x + x Φ(x)) and the softmax JVP row-wise with the 1/√d_h scale the
paper's eq. 6 drops. Frozen blocks run plainly and the tangent starts at zero at the first tuned
block, which is the efficient form of the code's frozen LinearBlocks (their Δ are ~1e-12).
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from .vit import ViT


def keep_frozen(module: nn.Module, name: str, value: torch.Tensor):
    """Hold ``value`` on ``module`` as a buffer: saved with it, never trained (the tangent point w0)."""
    module.register_buffer(name, value.detach().clone())


class TangentLinear(nn.Module):
    def __init__(self, base: nn.Linear):
        super().__init__()
        keep_frozen(self, "w0", base.weight)
        keep_frozen(self, "b0", base.bias if base.bias is not None else torch.zeros(base.out_features))
        self.delta = nn.Linear(base.in_features, base.out_features)
        nn.init.zeros_(self.delta.weight)
        nn.init.zeros_(self.delta.bias)

    def forward(self, x, xd):
        return F.linear(x, self.w0, self.b0), self.delta(x) + F.linear(xd, self.w0)


class TangentLayerNorm(nn.Module):
    def __init__(self, base: nn.LayerNorm):
        super().__init__()
        self.eps = base.eps
        keep_frozen(self, "g0", base.weight)
        keep_frozen(self, "beta0", base.bias)
        self.delta = nn.LayerNorm(base.normalized_shape, eps=base.eps)
        nn.init.zeros_(self.delta.weight)
        nn.init.zeros_(self.delta.bias)

    def forward(self, x, xd):
        mu = x.mean(-1, keepdim=True)
        s = torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + self.eps)
        xhat = (x - mu) / s
        c = xd - xd.mean(-1, keepdim=True)
        dxhat = c / s - xhat * (xhat * c).mean(-1, keepdim=True) / s
        return self.g0 * xhat + self.beta0, self.delta(x) + self.g0 * dxhat


def gelu_tangent(x, xd):
    """Exact GELU and its JVP: ẋ ⊙ (Φ(x) + x φ(x))."""
    cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2)))
    pdf = torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return x * cdf, xd * (cdf + x * pdf)


class TangentAttention(nn.Module):
    def __init__(self, qkv: nn.Linear, proj: nn.Linear, heads: int):
        super().__init__()
        self.qkv, self.proj, self.heads = TangentLinear(qkv), TangentLinear(proj), heads

    def forward(self, x, xd, cls_only: bool = False):
        b, n, d = x.shape
        h, sc = self.heads, (d // self.heads) ** -0.5
        split = lambda t: t.reshape(b, n, 3, h, d // h).permute(2, 0, 3, 1, 4)  # noqa: E731
        (q, k, v), (qd, kd, vd) = (split(t) for t in self.qkv(x, xd))
        if cls_only:  # the output at the CLS token only (see vit.attention)
            q, qd, n = q[:, :, :1], qd[:, :, :1], 1
        a = torch.softmax(sc * q @ k.transpose(-2, -1), dim=-1)
        psi = sc * (qd @ k.transpose(-2, -1) + q @ kd.transpose(-2, -1))  # tangent of the logits
        ad = a * psi - (a * psi).sum(-1, keepdim=True) * a  # softmax JVP, row by row
        merge = lambda t: t.transpose(1, 2).reshape(b, n, d)  # noqa: E731
        return self.proj(merge(a @ v), merge(ad @ v + a @ vd))


class TangentBlock(nn.Module):
    def __init__(self, block):
        super().__init__()
        self.norm1, self.norm2 = TangentLayerNorm(block.norm1), TangentLayerNorm(block.norm2)
        self.attn = TangentAttention(block.qkv, block.proj, block.heads)
        self.fc1, self.fc2 = TangentLinear(block.fc1), TangentLinear(block.fc2)

    def forward(self, x, xd, cls_only: bool = False):
        a, ad = self.attn(*self.norm1(x, xd), cls_only=cls_only)
        if cls_only:
            x, xd = x[:, :1], xd[:, :1]
        x, xd = x + a, xd + ad
        m, md = self.fc2(*gelu_tangent(*self.fc1(*self.norm2(x, xd))))
        return x + m, xd + md


class TangentViT(nn.Module):
    """The last ``tuned`` blocks, the final norm and the head linearised around a (frozen) ViT.

    ``forward`` returns (f_w0(x), J f_w0(x)·Δw); f_lin = their sum (``logits``). With every Δ at
    zero (the initialisation) the tangent is exactly zero."""

    def __init__(self, vit: ViT, tuned: int = 1, cls: bool = False, cls_seed: int = 0):
        super().__init__()
        depth = len(vit.blocks)
        if not 0 <= tuned <= depth:
            raise ValueError(f"tuned must be between 0 and the depth {depth}, got {tuned}")
        self.frozen = copy.deepcopy(vit)
        self.frozen.requires_grad_(False)
        self.cut = depth - tuned
        self.blocks = nn.ModuleList(TangentBlock(b) for b in vit.blocks[self.cut:])
        self.norm, self.head = TangentLayerNorm(vit.norm), TangentLinear(vit.head)
        # CLS = T (the authors' replace_cls_token): before the first tuned block the primal CLS entry
        # becomes a fixed N(0, 1e-6²) vector and its tangent a trainable Δcls (zero at the start). Δcls
        # is the weight of a bias-free nn.Linear(1, dim) applied to a 1, so per-sample clipping sees it too.
        self.cls_delta = None
        if cls:
            g = torch.Generator().manual_seed(cls_seed)
            self.register_buffer("new_cls", 1e-6 * torch.randn(1, 1, vit.cfg.dim, generator=g))
            self.cls_delta = nn.Linear(1, vit.cfg.dim, bias=False)
            nn.init.zeros_(self.cls_delta.weight)

    def features(self, images) -> torch.Tensor:
        """The frozen part's output (embedding and untuned blocks): cacheable, as the paper notes."""
        with torch.no_grad():
            x = self.frozen.embed(images)
            for blk in self.frozen.blocks[: self.cut]:
                x = blk(x)
        return x

    def from_features(self, x):
        xd = torch.zeros_like(x)
        if self.cls_delta is not None:
            b = len(x)
            x = torch.cat([self.new_cls.expand(b, -1, -1), x[:, 1:]], dim=1)
            xd = torch.cat([self.cls_delta(x.new_ones(b, 1, 1)), xd[:, 1:]], dim=1)
        for i, blk in enumerate(self.blocks):
            x, xd = blk(x, xd, cls_only=i == len(self.blocks) - 1)
        x, xd = self.norm(x[:, 0], xd[:, 0])
        return self.head(x, xd)

    def forward(self, images):
        return self.from_features(self.features(images))

    def logits(self, images):
        f0, jvp = self(images)
        return f0 + jvp

    def deltas(self) -> dict[str, torch.Tensor]:
        """Δw by name: what TAFT trains, averages to compose and subtracts to forget."""
        return {k: v for k, v in self.named_parameters() if v.requires_grad}
