"""SASRec-style next-item Transformer, as DPFormer trains it (2 blocks, d = 64, 1 head).

Why it looks like this
----------------------
DPFormer (anonymous, ICLR 2024 submission) keeps SASRec's architecture but trains with a full
softmax over all M items and *ties* the item embedding to the output layer. The tie is written as
two modules sharing one ``Parameter`` (``nn.Embedding`` for the lookup, ``nn.Linear`` for the
scores), never as ``h @ emb.weight.T``: a module tie is what opacus' hooks mode can follow, and what
:mod:`privtrans.shared.dp.phantom` recognises (it also refuses a functional tie, see there).

Conventions
-----------
- ``seqs``: LongTensor (B, L) of item ids in 1..n_items, pad id 0 (left or right padding both work;
  the data helper right-aligns SASRec-style). ``targets``: (B, L), the next item at each position,
  0 where there is no target (ignored by the loss).
- Every sample is processed independently (no BatchNorm, no cross-sample op), so per-sample
  gradients are well defined. Pad positions are zeroed after the embedding and after every block,
  so they carry no gradient to the lookup; pad *keys* are masked in attention (a query always sees
  itself, so all-pad rows stay finite).
- Logits have n_items + 1 columns (column c = item c); column 0 (pad) is set to -inf.

Public API
----------
``SASRec(n_items, max_len, d=64, n_blocks=2, n_heads=1, dropout=0.2, tied=True, ffn_dim=None,
activation="relu", scale_emb=True)``

- ``model(seqs) -> logits`` (B, L, n_items + 1).
- ``model.encode(seqs) -> H`` (B, L, d), the final hidden states; ``model.scores(H) -> logits``.
- ``model.item_emb``: ``nn.Embedding(n_items + 1, d, padding_idx=0)``; ``model.pos_emb``:
  ``nn.Embedding(max_len, d)``; ``model.head``: ``nn.Linear(d, n_items + 1, bias=False)``, whose
  ``weight`` *is* ``model.item_emb.weight`` when ``tied=True``.
- ``model.attention_layers() -> list[CausalSelfAttention]`` in depth order; each has
  ``layer_index`` (0-based) and ``logit_correction`` (default None).
- ``model.set_logit_correction(fn)``: sets ``fn`` on every attention layer (None removes it).
  Contract (for Re-Attention): every attention layer computes its scores in exactly one place,
  ``scores = q @ kᵀ / sqrt(d_head)`` with q, k of shape (B, n_heads, L, d_head) and scores of shape
  (B, n_heads, L, L), and then, if ``logit_correction`` is set, calls
  ``scores = self.logit_correction(q, k, scores, layer_index)`` BEFORE the causal/pad mask and the
  softmax. The function must keep the shape and be per-sample (no mixing across the batch).
- ``model.record_trace = True`` makes each forward fill ``model.trace`` (a dict) *as it goes*, so
  a logit_correction called in layer l can already read everything computed before it:
  ``trace["ids"]`` (B, L), ``trace["mask"]`` (B, L, 1) float, ``trace["emb"]`` (item lookup, before
  the sqrt(d) scaling), ``trace["x0"]`` (block-0 input), and ``trace["blocks"][l]`` a dict with
  ``x_in, ln1, q, k, v, scores, attn, attn_ctx, attn_out, x_mid, ln2, ffn_pre, ffn_act, ffn_out,
  x_out`` (q, k, v in (B, h, L, d_head); attn = softmax probabilities). ``trace["final"]`` = H.
  Tensors are the live autograd tensors (call ``.detach()`` if you keep them).
- ``per_sample_loss(logits, targets) -> (B,)``: mean cross-entropy over each sample's non-pad
  targets (0 for a sample without targets). The DP step clips the gradient of each entry.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

PAD = 0


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with one hook point for logit corrections (Re-Attention)."""

    def __init__(self, d: int, n_heads: int, dropout: float, layer_index: int):
        super().__init__()
        if d % n_heads:
            raise ValueError(f"d={d} is not divisible by n_heads={n_heads}")
        self.d, self.n_heads, self.d_head = d, n_heads, d // n_heads
        self.layer_index = layer_index
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)
        self.attn_drop = nn.Dropout(dropout)
        self.logit_correction = None  # fn(q, k, scores, layer_index) -> scores
        self._trace = None  # set by SASRec when recording

    def _split(self, x):
        b, length, _ = x.shape
        return x.view(b, length, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, x: torch.Tensor, key_pad: torch.Tensor) -> torch.Tensor:
        """x: (B, L, d); key_pad: (B, L) bool, True at pad positions."""
        b, length, _ = x.shape
        q, k, v = self._split(self.q_proj(x)), self._split(self.k_proj(x)), self._split(self.v_proj(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)
        if self.logit_correction is not None:
            scores = self.logit_correction(q, k, scores, self.layer_index)
        causal = torch.ones(length, length, dtype=torch.bool, device=x.device).triu(1)
        eye = torch.eye(length, dtype=torch.bool, device=x.device)
        blocked = causal | (key_pad[:, None, None, :] & ~eye)  # (B, 1, L, L)
        probs = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
        ctx = self.attn_drop(probs) @ v  # (B, h, L, d_head)
        ctx_flat = ctx.transpose(1, 2).reshape(b, length, self.d)
        out = self.out_proj(ctx_flat)
        if self._trace is not None:
            self._trace.update(q=q, k=k, v=v, scores=scores, attn=probs, attn_ctx=ctx_flat, attn_out=out)
        return out


class Block(nn.Module):
    """Pre-LayerNorm Transformer block: x + Attn(LN(x)), then x + FFN(LN(x))."""

    def __init__(self, d, n_heads, dropout, layer_index, ffn_dim, activation):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, n_heads, dropout, layer_index)
        self.ln2 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ffn_dim)
        self.ff2 = nn.Linear(ffn_dim, d)
        self.act = {"relu": nn.ReLU(), "gelu": nn.GELU()}[activation]
        self.drop = nn.Dropout(dropout)

    def forward(self, x, key_pad, mask, trace=None):
        if trace is not None:
            trace["x_in"] = x
        h1 = self.ln1(x)
        self.attn._trace = trace
        if trace is not None:
            trace["ln1"] = h1
        x = x + self.drop(self.attn(h1, key_pad))
        self.attn._trace = None
        h2 = self.ln2(x)
        pre = self.ff1(h2)
        act = self.act(pre)
        ffn = self.ff2(self.drop(act))
        out = (x + self.drop(ffn)) * mask
        if trace is not None:
            trace.update(x_mid=x, ln2=h2, ffn_pre=pre, ffn_act=act, ffn_out=ffn, x_out=out)
        return out


class SASRec(nn.Module):
    """Next-item Transformer with a (by default) tied item embedding. See the module docstring."""

    def __init__(self, n_items: int, max_len: int, d: int = 64, n_blocks: int = 2, n_heads: int = 1,
                 dropout: float = 0.2, tied: bool = True, ffn_dim: int | None = None,
                 activation: str = "relu", scale_emb: bool = True):
        super().__init__()
        if n_items < 1 or max_len < 1 or d < 1 or n_blocks < 0:
            raise ValueError(f"bad sizes: n_items={n_items}, max_len={max_len}, d={d}, n_blocks={n_blocks}")
        if activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', got {activation!r}")
        self.n_items, self.max_len, self.d, self.tied = n_items, max_len, d, tied
        self.scale = math.sqrt(d) if scale_emb else 1.0
        self.item_emb = nn.Embedding(n_items + 1, d, padding_idx=PAD)
        self.pos_emb = nn.Embedding(max_len, d)
        self.emb_drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            Block(d, n_heads, dropout, i, ffn_dim or d, activation) for i in range(n_blocks))
        self.final_ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, n_items + 1, bias=False)
        nn.init.normal_(self.item_emb.weight, std=d ** -0.5)
        with torch.no_grad():
            self.item_emb.weight[PAD].zero_()
        if tied:
            self.head.weight = self.item_emb.weight  # module tie: one Parameter, two modules
        self.record_trace = False
        self.trace: dict | None = None

    # -- Re-Attention hook points ------------------------------------------------------------
    def attention_layers(self) -> list[CausalSelfAttention]:
        return [blk.attn for blk in self.blocks]

    def set_logit_correction(self, fn) -> None:
        for layer in self.attention_layers():
            layer.logit_correction = fn

    # -- forward ---------------------------------------------------------------------------
    def encode(self, seqs: torch.Tensor) -> torch.Tensor:
        if seqs.dim() != 2:
            raise ValueError(f"seqs must be (B, L), got shape {tuple(seqs.shape)}")
        b, length = seqs.shape
        if length > self.max_len:
            raise ValueError(f"sequence length {length} exceeds max_len {self.max_len}")
        key_pad = seqs == PAD
        mask = (~key_pad).unsqueeze(-1).to(self.item_emb.weight.dtype)
        emb = self.item_emb(seqs)
        positions = torch.arange(length, device=seqs.device).repeat(b, 1)  # contiguous (opacus)
        x = self.emb_drop(emb * self.scale + self.pos_emb(positions)) * mask
        trace = None
        if self.record_trace:
            trace = self.trace = {"ids": seqs, "mask": mask, "emb": emb, "x0": x, "blocks": []}
        for blk in self.blocks:
            bt = None
            if trace is not None:
                bt = {}
                trace["blocks"].append(bt)
            x = blk(x, key_pad, mask, bt)
        h = self.final_ln(x)
        if trace is not None:
            trace["final"] = h
        return h

    def scores(self, h: torch.Tensor) -> torch.Tensor:
        logits = self.head(h)
        return logits + _pad_column(logits)  # -inf on the pad column; an add is cheaper than masked_fill

    def forward(self, seqs: torch.Tensor) -> torch.Tensor:
        return self.scores(self.encode(seqs))


def _pad_column(logits):
    col = torch.zeros(logits.shape[-1], dtype=logits.dtype, device=logits.device)
    col[PAD] = float("-inf")
    return col


def per_sample_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(B, L, V) logits, (B, L) targets (0 = none) -> (B,) mean CE over each sample's targets."""
    if logits.shape[:2] != targets.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and targets {tuple(targets.shape)} disagree")
    ce = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=PAD, reduction="none")
    ce = ce.view(targets.shape)
    n = (targets != PAD).sum(1).clamp(min=1)
    return ce.sum(1) / n
