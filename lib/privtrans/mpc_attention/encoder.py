"""A small BERT-style (post-LN) encoder whose attention and activation are one switch each.

``forward(p, h, mask01, cfg)`` is written once on a dict of weights ``p`` and runs unchanged on
torch tensors (training, distillation) and on CrypTen shares (``secure.py``): linear maps, the
attention normaliser and activation of ``attention.py``, LayerNorm via ``x.mean``, ``square`` and
an inverse square root, mean pooling over the public number of tokens, a linear head.
It returns what stage-1 distillation needs (paper eq. 8, MPCFormer's code): the pre-normalisation
scores of every layer and the hidden states (embeddings + every layer output).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import torch
from torch import nn

from . import attention as A

LN_EPS = 1e-5


@dataclass(frozen=True)
class EncoderConfig:
    vocab_size: int = 4000
    d_model: int = 64
    n_heads: int = 2
    n_layers: int = 2
    d_ff: int = 128
    max_len: int = 48
    n_out: int = 2               # classes; 1 = regression
    n_types: int = 2             # segment ids (sentence pairs)
    attention: str = "softmax"
    activation: str = "gelu"
    const: tuple | None = None   # (a, b) of f(n) for freeDiv; per-head lists allowed

    def __post_init__(self):
        A.check_attention(self.attention)
        A.check_activation(self.activation)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not a multiple of n_heads={self.n_heads}")
        if self.attention in A.FREEDIV and self.const is None:
            raise ValueError(f"attention {self.attention!r} needs const=(a, b) of f(n) = a*n**b")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)

    def swap(self, attention: str, activation: str, const=None) -> "EncoderConfig":
        """The same architecture with the paper's function replacement (Fig. 4, stage 1)."""
        return replace(self, attention=attention, activation=activation, const=const)


def _inv_sqrt(v):
    return v.inv_sqrt() if A.is_secure(v) else v.rsqrt()


def layer_norm(x, g, b):
    """Paper eq. 6 (biased variance over the last dimension)."""
    xc = x - x.mean(-1, keepdim=True)
    return xc * _inv_sqrt(xc.square().mean(-1, keepdim=True) + LN_EPS) * g + b


def linear(x, w, b):
    """x @ w + b with w stored (in, out), as shared."""
    return x.matmul(w) + b


def _heads(x, cfg):  # (B, T, d) -> (B, H, T, dh)
    B, T = x.size(0), x.size(1)
    return x.view(B, T, cfg.n_heads, cfg.d_head).permute(0, 2, 1, 3)


def _merge(x, cfg):  # (B, H, T, dh) -> (B, T, d)
    B, T = x.size(0), x.size(2)
    return x.permute(0, 2, 1, 3).reshape(B, T, cfg.d_model)


def layer_const(const, layer: int):
    """f(n)'s (a, b) for one layer: the same pair everywhere (the paper), per head ((H,) lists),
    or per layer and head ((L, H) nested lists, the extension the paper names as future work)."""
    if const is None:
        return None
    a, b = (torch.as_tensor(v, dtype=torch.float32) for v in const)
    return (a[layer], b[layer]) if a.dim() == 2 else (a, b)


def block(p: dict, h, mask4, cfg: EncoderConfig, meter=None, layer: int = 0):
    """One post-LN block; returns (output, scores QK^T/sqrt(d) (B, H, T, T), weights).

    Every normaliser reads the scores QK^T/sqrt(d), except Scaling (``attention.UNSCALED``), which
    reads QK^T (the paper's eq. 10); the returned scores are QK^T/sqrt(d) for every attention (what
    stage 1 of the distillation matches between student and teacher)."""
    meter = meter or _null
    with meter("Linear"):
        q = _heads(linear(h, p["wq"], p["bq"]), cfg)
        k = _heads(linear(h, p["wk"], p["bk"]), cfg)
        v = _heads(linear(h, p["wv"], p["bv"]), cfg)
        qk = q.matmul(k.transpose(-1, -2))
        scores = qk * (1.0 / math.sqrt(cfg.d_head))  # what stage 1 distils, for every attention
    with meter("Softmax"):
        # Scaling reads QK^T itself (paper eq. 10: ScaleAttn = (1/n) QK^T V, no 1/sqrt(d))
        x = qk if cfg.attention in A.UNSCALED else scores
        probs = A.normalise(cfg.attention, x, mask4, layer_const(cfg.const, layer))
    with meter("Linear"):
        ctx = linear(_merge(probs.matmul(v), cfg), p["wo"], p["bo"])
    with meter("Norm"):
        h = layer_norm(h + ctx, p["ln1_g"], p["ln1_b"])
    with meter("Linear"):
        f = linear(h, p["w1"], p["b1"])
    with meter("Act"):
        f = A.activation(cfg.activation, f)
    with meter("Linear"):
        f = linear(f, p["w2"], p["b2"])
    with meter("Norm"):
        h = layer_norm(h + f, p["ln2_g"], p["ln2_b"])
    return h, scores, probs


def forward(p: dict, emb, mask01: torch.Tensor, cfg: EncoderConfig, meter=None, layers=None) -> dict:
    """From summed embeddings (B, T, d) and the public 0/1 token mask (B, T) to outputs.

    Returns {"logits": (B, n_out), "scores": [per layer], "probs": [...], "hidden": [L+1]}.
    ``layers``: the layer indices to run, in order (default all; the secure forward passes a
    ``dry.loop`` over them, so a dry run runs the first layer and books all).
    """
    meter = meter or _null
    mask01 = mask01.to(torch.float32)
    mask4 = mask01[:, None, None, :]          # keys: (B, 1, 1, T)
    with meter("Norm"):
        h = layer_norm(emb, p["ln0_g"], p["ln0_b"])
    hidden, scores, probs = [h], [], []
    for i in range(cfg.n_layers) if layers is None else layers:
        h, s, a = block(p[f"layer{i}"], h, mask4, cfg, meter, i)
        hidden.append(h), scores.append(s), probs.append(a)
    with meter("Linear"):
        n = mask01.sum(-1)[:, None]            # public token count: mean pooling
        pooled = (h * mask01[:, :, None]).sum(1) * (1.0 / n)
        logits = linear(pooled, p["head_w"], p["head_b"])
    return {"logits": logits, "scores": scores, "probs": probs, "hidden": hidden}


class _Null:
    def __call__(self, name):
        import contextlib

        return contextlib.nullcontext()


_null = _Null()


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
        def lin(m):
            return m.weight.T, m.bias

        p = {"ln0_g": self.ln0.weight, "ln0_b": self.ln0.bias}
        for i, m in enumerate(self.layers):
            (wq, bq), (wk, bk), (wv, bv), (wo, bo) = (lin(m[k]) for k in "qkvo")
            (w1, b1), (w2, b2) = lin(m["f1"]), lin(m["f2"])
            p[f"layer{i}"] = dict(wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, bo=bo,
                                  ln1_g=m["ln1"].weight, ln1_b=m["ln1"].bias, w1=w1, b1=b1, w2=w2, b2=b2,
                                  ln2_g=m["ln2"].weight, ln2_b=m["ln2"].bias)
        p["head_w"], p["head_b"] = self.head.weight.T, self.head.bias
        return p

    def forward(self, ids, mask01, types=None) -> dict:
        return forward(self.params(), self.embed(ids, types), mask01, self.cfg)

    def converted(self, attention: str, activation: str, const=None) -> "TinyEncoder":
        """A student: the teacher's weights with the functions replaced (paper Fig. 4)."""
        student = TinyEncoder(self.cfg.swap(attention, activation, const))
        student.load_state_dict(self.state_dict())
        return student
