"""A tiny encoder-decoder (the paper's "T5 (138M)" rows), in plaintext: the twin of ``SecureEncDec``.

The paper's Tables 1-2 also time a 6 + 6 layer encoder-decoder ("T5 (138M)"; in the authors'
benchmark a d = 768, V = 50257 stack with cross-attention, not the real T5). Ours reuses the GPT
pieces of ``plain_gpt`` with every switch (attention kind, activation, norms, MM, decoding):

    e      = Encoder(E[src] + P_src)           bidirectional blocks (``Block(causal=False)``)
    x_0    = E[tgt] + P                        (or inputs_embeds + P: ER)
    x_att  = Norm_1(SelfAttn(x) + x)           causal, as in ``plain_gpt.Block``
    x_crs  = Norm_c(CrossAttn(x_att, e) + x_att)
    x'     = Norm_2(W_O Act(W_I x_crs + b_I) + b_O + x_crs)
    logits = x_L E^T                           (one table for both sides and the LM head, as T5)

Cross-attention uses the variant's normalisation (softmax / sf2relu / sf2quad / thex) over all
source positions, or a constant C_x (H, max_len, max_src) for MM. In the merged (MM) block the
cross sub-layer becomes an additive term that depends on the encoder output only::

    x_crs = u + Concat_j( C_x,j e[:, slice_j] ) W_x + b_x        (u: the merged self part)

which is what an affine Norm_c with a constant C_x folds to (as Eq. 10 folds Norm_1: g_c is absorbed
into W_0 and W_x). A private decoder can therefore compute it for every target position once,
right after the encoder, and no per-token cross-attention cost remains. (The authors' benchmark
graph instead recomputes C_x e per token, and then discards the self-attention path: its
``feature_onestep`` overwrites ``xo`` with the cross term.)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from .plain_gpt import Block, GPTConfig, Norm, TinyGPT, activation, attention_probs, variant_config


@dataclass(frozen=True)
class EncDecConfig(GPTConfig):
    """``GPTConfig`` (the decoder: ``n_layers``, ``max_len``) plus the encoder's depth and length."""

    n_enc_layers: int = 1
    max_src: int = 16

    def __post_init__(self):
        super().__post_init__()
        if min(self.n_enc_layers, self.max_src) < 1:
            raise ValueError(f"encoder sizes must be positive: {self}")


def encdec_variant_config(variant: str, **sizes) -> tuple[EncDecConfig, str]:
    """(config, decoding) of one of the paper's seven variants for the encoder-decoder."""
    return variant_config(variant, EncDecConfig(**sizes))


class DecoderBlock(Block):
    """A causal ``Block`` with a cross-attention sub-layer between self-attention and the FFN."""

    def __init__(self, cfg: EncDecConfig):
        super().__init__(cfg, causal=True)
        d, H = cfg.d_model, cfg.n_heads
        if cfg.merged:
            self.wx = nn.Linear(d, d)
        else:
            self.q_x = nn.Linear(d, d)
            self.kv_x = nn.Linear(d, 2 * d)  # k stays unused (dead weight) for constant attention
            self.proj_x = nn.Linear(d, d)
            self.norm_x = Norm(d, cfg.attn_norm, cfg.ln_eps)
        if cfg.attention == "constant":
            self.cx_logits = nn.Parameter(torch.zeros(H, cfg.max_len, cfg.max_src))
        if cfg.attention == "thex":
            self.thex_wx = nn.Parameter(torch.tensor([0.0, 1.0]))

    def cross_constant(self, t: int, s: int) -> torch.Tensor:
        """C_x for target positions 0..t-1 over s source positions: (H, t, s), rows sum to 1."""
        return torch.softmax(self.cx_logits[:, :t, :s], dim=-1)

    def cross(self, x, enc, start: int = 0):
        """The cross sub-layer's output for target positions start..start+n-1 (``x``: (B, n, d))."""
        cfg = self.cfg
        n, s = x.shape[1], enc.shape[1]
        if cfg.attention == "constant":
            C = self.cross_constant(start + n, s)[:, start:]
            src = enc if cfg.merged else self.kv_x(enc)[..., cfg.d_model:]
            mixed = self.merge_heads(C.unsqueeze(0) @ self.split_heads(src))
            if cfg.merged:
                return x + self.wx(mixed)
            return self.norm_x(self.proj_x(mixed) + x)
        k, v = self.kv_x(enc).split(cfg.d_model, dim=-1)
        scores = self.split_heads(self.q_x(x)) @ self.split_heads(k).transpose(-1, -2) / cfg.d_head ** 0.5
        probs = attention_probs(cfg.attention, scores, torch.ones(n, s, device=x.device),
                                getattr(self, "thex_wx", None), cfg.sf2quad_c)
        return self.norm_x(self.proj_x(self.merge_heads(probs @ self.split_heads(v))) + x)

    def forward(self, x, enc):
        u = self.attend(x) if self.cfg.merged else self.norm1(self.attend(x) + x)
        u = self.cross(u, enc)
        return self.norm2(self.fc_out(activation(self.cfg.act, self.fc_in(u))) + u)


class TinyEncDec(TinyGPT):
    """Tiny encoder-decoder; ``forward(src_ids, ...)`` returns ``(logits, hidden)`` of the decoder."""

    block_type = DecoderBlock

    def __init__(self, cfg: EncDecConfig):
        super().__init__(cfg)
        self.wpe_src = nn.Embedding(cfg.max_src, cfg.d_model)
        self.enc_blocks = nn.ModuleList(Block(cfg, causal=False) for _ in range(cfg.n_enc_layers))
        for part in (self.wpe_src, self.enc_blocks):
            part.apply(self._init)

    def encode(self, src_ids):
        src_ids = torch.as_tensor(src_ids)
        if src_ids.dim() == 1:
            src_ids = src_ids[None]
        S = src_ids.shape[1]
        if S > self.cfg.max_src:
            raise ValueError(f"source length {S} exceeds max_src {self.cfg.max_src}")
        e = self.wte(src_ids) + self.wpe_src.weight[:S]
        for blk in self.enc_blocks:
            e = blk(e)
        return e

    def forward(self, src_ids=None, input_ids=None, inputs_embeds=None, enc=None):
        """Decoder pass over the target given the source (or a precomputed encoder output ``enc``)."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids, inputs_embeds")
        return super().forward(input_ids, inputs_embeds, enc=self.encode(src_ids) if enc is None else enc)

    def generate(self, src_ids, prefix_ids, n_new: int, decoding: str = "vanilla"):
        """Greedy decoding after ``prefix_ids`` given the source; ER as in ``TinyGPT.generate``."""
        with torch.no_grad():
            return super().generate(prefix_ids, n_new, decoding, enc=self.encode(src_ids))
