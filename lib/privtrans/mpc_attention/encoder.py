"""The chapter's trainable encoder (torch): ``TinyEncoder`` holds the weights of the one forward,
``encoder_ops.forward`` (written once for torch, CrypTen and SPU), and runs it on torch tensors.

``EncoderConfig``, ``forward`` and ``LN_EPS`` are ``encoder_ops``'s, named here too for the
chapter's torch code.
"""

from __future__ import annotations

import torch
from torch import nn

from .encoder_ops import LN_EPS, EncoderConfig, forward, weights
from .ops import TENSOR

__all__ = ["LN_EPS", "EncoderConfig", "TinyEncoder", "forward"]


class TinyEncoder(nn.Module):
    """Trainable weights of ``forward``; ``params()`` is the dict it takes."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.cfg = cfg
        d, f = cfg.d_model, cfg.d_ff
        self.tok = nn.Embedding(cfg.vocab_size, d)
        self.pos = nn.Embedding(cfg.max_len, d)
        self.typ = nn.Embedding(cfg.n_types, d)
        self.ln0 = nn.LayerNorm(d, eps=LN_EPS)
        self.layers = nn.ModuleList()
        for _ in range(cfg.n_layers):
            m = nn.ModuleDict(dict(q=nn.Linear(d, d), k=nn.Linear(d, d), v=nn.Linear(d, d),
                                   o=nn.Linear(d, d), ln1=nn.LayerNorm(d, eps=LN_EPS),
                                   f1=nn.Linear(d, f), f2=nn.Linear(f, d), ln2=nn.LayerNorm(d, eps=LN_EPS)))
            self.layers.append(m)
        self.head = nn.Linear(d, cfg.n_out)
        for mod in self.modules():
            if isinstance(mod, (nn.Linear, nn.Embedding)):
                nn.init.normal_(mod.weight, std=0.02)
            if isinstance(mod, nn.Linear):
                nn.init.zeros_(mod.bias)

    def embed(self, ids, types=None):
        T = ids.size(1)
        e = self.tok(ids) + self.pos.weight[:T][None]
        return e + self.typ(types if types is not None else torch.zeros_like(ids))

    def params(self) -> dict:
        """``forward``'s weights (``encoder_ops.weights``): this model's parameters, Linear weights
        transposed (views, so gradients reach the parameters)."""
        return weights(dict(self.named_parameters()), self.cfg.n_layers, TENSOR)

    def forward(self, ids, mask01, types=None) -> dict:
        return forward(self.params(), self.embed(ids, types), mask01, self.cfg)

    def converted(self, attention: str, activation: str, const=None) -> "TinyEncoder":
        """A student: the teacher's weights with the functions replaced (paper Fig. 4)."""
        student = TinyEncoder(self.cfg.swap(attention, activation, const))
        student.load_state_dict(self.state_dict())
        return student
