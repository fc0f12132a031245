"""A small Vision Transformer with explicit attention, the network TAFT linearises.

Explicit because forward-mode AD (torch.func.jvp, which the tests check the tangent model against)
does not run through CPU fused attention or nn.MultiheadAttention's fast path. Pre-norm blocks, a
CLS token, learned positional embeddings, exact (erf) GELU, dropout 0, LayerNorm eps 1e-6: the timm
layout the paper's ViT-L/16 uses, at toy width.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class ViTConfig:
    image: int = 16  # side of the (square, one-channel) input
    patch: int = 4
    dim: int = 64
    depth: int = 4
    heads: int = 4
    mlp_ratio: int = 4
    classes: int = 10
    eps: float = 1e-6

    def __post_init__(self):
        if self.image % self.patch or self.dim % self.heads:
            raise ValueError(f"image ({self.image}) must be a multiple of patch ({self.patch}) and dim "
                             f"({self.dim}) of heads ({self.heads})")

    @property
    def tokens(self) -> int:
        return (self.image // self.patch) ** 2 + 1


def attention(x: torch.Tensor, qkv: nn.Linear, proj: nn.Linear, heads: int, cls_only: bool = False) -> torch.Tensor:
    """Multi-head self-attention; ``cls_only``: the output at the CLS token only (all keys and values),
    which is all the last block needs, since the head reads token 0 alone."""
    b, n, d = x.shape
    q, k, v = qkv(x).reshape(b, n, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
    if cls_only:
        q = q[:, :, :1]
    a = torch.softmax(q @ k.transpose(-2, -1) * (d // heads) ** -0.5, dim=-1)
    return proj((a @ v).transpose(1, 2).reshape(b, q.shape[2], d))


class Block(nn.Module):
    def __init__(self, cfg: ViTConfig):
        super().__init__()
        d = cfg.dim
        self.heads = cfg.heads
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=cfg.eps), nn.LayerNorm(d, eps=cfg.eps)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, cfg.mlp_ratio * d), nn.Linear(cfg.mlp_ratio * d, d)

    def forward(self, x, cls_only: bool = False):
        """The block; ``cls_only``: its output at the CLS token alone (exact, and far cheaper in the
        last block: the MLP runs on one token)."""
        x = (x[:, :1] if cls_only else x) + attention(self.norm1(x), self.qkv, self.proj, self.heads, cls_only)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ViT(nn.Module):
    def __init__(self, cfg: ViTConfig = ViTConfig()):
        super().__init__()
        self.cfg = cfg
        self.patch_embed = nn.Conv2d(1, cfg.dim, cfg.patch, stride=cfg.patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.dim))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, cfg.tokens, cfg.dim))
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))
        self.norm = nn.LayerNorm(cfg.dim, eps=cfg.eps)
        self.head = nn.Linear(cfg.dim, cfg.classes)

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """Patch + CLS + position: the part TAFT never linearises."""
        if images.dim() != 4 or images.shape[1:] != (1, self.cfg.image, self.cfg.image):
            raise ValueError(f"images must be (batch, 1, {self.cfg.image}, {self.cfg.image}), "
                             f"got {tuple(images.shape)}")
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        return torch.cat([self.cls_token.expand(len(x), -1, -1), x], dim=1) + self.pos_embed

    def forward(self, images):
        x = self.embed(images)
        for i, blk in enumerate(self.blocks):
            x = blk(x, cls_only=i == len(self.blocks) - 1)
        return self.head(self.norm(x[:, 0]))
