"""The chapter's encoder, written once for every back-end: a small BERT-style (post-LN) encoder whose
attention and activation are one switch each.

``forward(p, emb, mask01, cfg, ops)`` runs on torch tensors (training, distillation: ``ops.TENSOR``
through ``encoder.TinyEncoder``), on CrypTen shares (``secure.py``) and in SecretFlow SPU
(``spu_worker``, ``ops.JaxOps``): linear maps, the attention normaliser of ``normalisers``, the
activation of ``privtrans.shared.activations``, LayerNorm (paper eq. 6) with the back-end's inverse
square root, mean pooling over the public number of tokens, a linear head. It returns what
stage-1 distillation needs (paper eq. 8, MPCFormer's code): the pre-normalisation scores of every
layer and the hidden states (embeddings + every layer output). The embedding is each back-end's
own (a lookup in torch; a shared one-hot matrix times the table in CrypTen and SPU).

The weights ``p`` are ``weights(state, n_layers, ops)``: the entries of ``TinyEncoder.state_dict()``
by module name (``ln0``, ``layers[i]["q" | "k" | "v" | "o" | "ln1" | "f1" | "f2" | "ln2"]``,
``head``), each a pair (Linear: weight transposed to (in, out), bias; LayerNorm: gain, bias).
Torch-free, so SPU's environment imports it.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass, replace

from privtrans.shared.activations import KINDS as ACTIVATIONS
from privtrans.shared.activations import activation

from .normalisers import FREEDIV, UNSCALED, check_attention, normalise
from .ops import TENSOR

LN_EPS = 1e-5
#: a block's modules in the order its weights are read (and shared, in the secure runs)
BLOCK = ("q", "k", "v", "o", "ln1", "f1", "f2", "ln2")


def check_activation(kind: str) -> str:
    if kind not in ACTIVATIONS:
        raise ValueError(f"unknown activation {kind!r}: allowed values are {', '.join(ACTIVATIONS)}")
    return kind


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
        check_attention(self.attention)
        check_activation(self.activation)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not a multiple of n_heads={self.n_heads}")
        if self.attention in FREEDIV and self.const is None:
            raise ValueError(f"attention {self.attention!r} needs const=(a, b) of f(n) = a*n**b")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)

    def swap(self, attention: str, activation: str, const=None) -> "EncoderConfig":
        """The same architecture with the paper's function replacement (Fig. 4, stage 1)."""
        return replace(self, attention=attention, activation=activation, const=const)


def weights(state, n_layers: int, ops=TENSOR) -> dict:
    """``forward``'s weights from a ``TinyEncoder.state_dict()``-named mapping (tensors, shares or
    arrays): Linear weights transposed to (in, out) by ``ops.t``, in the order ``BLOCK`` reads them."""
    def pair(name: str):
        w, b = state[f"{name}.weight"], state[f"{name}.bias"]
        return (w, b) if name.rpartition(".")[2].startswith("ln") else (ops.t(w), b)

    return {"ln0": pair("ln0"),
            "layers": [{m: pair(f"layers.{i}.{m}") for m in BLOCK} for i in range(n_layers)],
            "head": pair("head")}


def layer_norm(x, gain_bias, ops=TENSOR):
    """Paper eq. 6 (biased variance over the last dimension)."""
    g, b = gain_bias
    xc = x - ops.rowmean(x)
    return xc * ops.inv_sqrt(ops.rowmean(ops.square(xc)) + LN_EPS) * g + b


def linear(x, weight_bias, ops=TENSOR):
    """x @ w + b, w stored (in, out)."""
    w, b = weight_bias
    return ops.matmul(x, w) + b


def block(p: dict, h, mask4, cfg: EncoderConfig, ops=TENSOR, meter=None, layer: int = 0):
    """One post-LN block; returns (output, scores QK^T/sqrt(d), weights).

    Every normaliser reads the scores QK^T/sqrt(d), except Scaling (``normalisers.UNSCALED``), which
    reads QK^T (the paper's eq. 10); the returned scores are QK^T/sqrt(d) for every attention (what
    stage 1 of the distillation matches between student and teacher)."""
    meter = meter or _null
    with meter("Linear"):
        q, k, v = (ops.heads(linear(h, p[m], ops), cfg.n_heads, cfg.d_head) for m in "qkv")
        qk = ops.matmul(q, ops.t(k))
        scores = qk * (1.0 / math.sqrt(cfg.d_head))  # what stage 1 distils, for every attention
    with meter("Softmax"):
        # Scaling reads QK^T itself (paper eq. 10: ScaleAttn = (1/n) QK^T V, no 1/sqrt(d))
        x = qk if cfg.attention in UNSCALED else scores
        probs = normalise(cfg.attention, x, mask4, ops.layer_const(cfg.const, layer), ops)
    with meter("Linear"):
        ctx = linear(ops.merge(ops.matmul(probs, v), cfg.d_model), p["o"], ops)
    with meter("Norm"):
        h = layer_norm(h + ctx, p["ln1"], ops)
    with meter("Linear"):
        f = linear(h, p["f1"], ops)
    with meter("Act"):
        f = activation(cfg.activation, f, ops)
    with meter("Linear"):
        f = linear(f, p["f2"], ops)
    with meter("Norm"):
        h = layer_norm(h + f, p["ln2"], ops)
    return h, scores, probs


def forward(p: dict, emb, mask01, cfg: EncoderConfig, ops=TENSOR, meter=None, layers=None) -> dict:
    """From summed embeddings (B, T, d) and the public 0/1 token mask (B, T) to outputs (``mask01``
    None: one unpadded sentence (T, d), as SPU runs it).

    Returns {"logits": (B, n_out), "scores": [per layer], "probs": [...], "hidden": [L+1]}.
    ``layers``: the layer indices to run, in order (default all; the secure forward passes a
    ``dry.loop`` over them, so a dry run runs the first layer and books all).
    """
    meter = meter or _null
    mask4 = None if mask01 is None else ops.key_mask(mask01)  # keys: (B, 1, 1, T)
    with meter("Norm"):
        h = layer_norm(emb, p["ln0"], ops)
    hidden, scores, probs = [h], [], []
    for i in range(cfg.n_layers) if layers is None else layers:
        h, s, a = block(p["layers"][i], h, mask4, cfg, ops, meter, i)
        hidden.append(h), scores.append(s), probs.append(a)
    with meter("Linear"):
        logits = linear(ops.pool(h, mask01), p["head"], ops)
    return {"logits": logits, "scores": scores, "probs": probs, "hidden": hidden}


def _null(name):
    return contextlib.nullcontext()
