"""Parameter-efficient baselines on the tuned block: Adapter (Houlsby et al. 2019) and LoRA (Hu et al. 2021).

Table 11 fine-tunes them on the same last block as NLFT and TAFT and composes shard models by
averaging their weights. The paper gives neither rank, placement nor initialisation; ours
(tests/test_taft_peft.py checks that a fresh module is the identity):

- Adapter: down (d → r) → GELU → up (r → d), up zero-initialised, with its own skip, applied to the
  output of the attention projection and of the MLP's second layer, before each residual addition
  (Houlsby's placement), so a fresh adapter is the identity;
- LoRA: W + (α/r)·B·A on the attention's qkv and projection, A Kaiming-uniform and B zero, so a fresh
  LoRA is the frozen layer.

Both train their own weights and the new head only. Averaging shard models averages A and B
separately, and mean(B)·mean(A) is not mean(B·A): the composition is not the ensemble, which is
what Table 11 shows against TAFT's linearity. Written here rather than taken from ``peft``
(Hugging Face) because that library targets ``transformers`` modules and would be a large
dependency for two 10-line wrappers of ``nn.Linear``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

METHODS = ("adapter", "lora")
MARKERS = {"adapter": ".adapter_", "lora": ".lora_"}  # names of the trainable tensors each adds


class AdapterLinear(nn.Module):
    """y = base(x); y + up(GELU(down(y))): a bottleneck adapter after a frozen linear layer."""

    def __init__(self, base: nn.Linear, rank: int):
        super().__init__()
        d = base.out_features
        self.base = base
        self.adapter_down, self.adapter_up = nn.Linear(d, rank), nn.Linear(rank, d)
        nn.init.zeros_(self.adapter_up.weight)
        nn.init.zeros_(self.adapter_up.bias)

    def forward(self, x):
        y = self.base(x)
        return y + self.adapter_up(F.gelu(self.adapter_down(y)))


class LoRALinear(nn.Module):
    """y = x·(W + s·B·A)ᵀ + b with W, b frozen, s = alpha / rank; B starts at zero."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float | None = None):
        super().__init__()
        self.base, self.scale = base, (alpha if alpha is not None else rank) / rank
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))  # as nn.Linear and the LoRA paper's code

    def merged_weight(self) -> torch.Tensor:
        return self.base.weight + self.scale * self.lora_b @ self.lora_a

    def forward(self, x):
        return self.base(x) + self.scale * (x @ self.lora_a.t()) @ self.lora_b.t()


def attach(tail: nn.Module, method: str, rank: int, init_seed: int) -> nn.Module:
    """Wrap every tuned block of ``tail`` (a ``finetune.PlainTail``) in place: adapters after ``proj``
    and ``fc2``, LoRA on ``qkv`` and ``proj``; the new weights drawn from ``init_seed`` so every shard
    starts from the same initialisation. Returns ``tail``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if rank < 1:
        raise ValueError(f"rank must be a positive integer, got {rank}")
    with torch.random.fork_rng():
        torch.manual_seed(init_seed)
        for blk in tail.blocks:
            if method == "adapter":
                blk.proj, blk.fc2 = AdapterLinear(blk.proj, rank), AdapterLinear(blk.fc2, rank)
            else:
                blk.qkv, blk.proj = LoRALinear(blk.qkv, rank), LoRALinear(blk.proj, rank)
    return tail


def is_trainable(name: str, method: str) -> bool:
    """The tensors a PEFT method trains: its own and the head's."""
    return name.startswith("head.") or MARKERS[method] in name
