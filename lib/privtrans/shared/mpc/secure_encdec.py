"""The tiny encoder-decoder (``plain_encdec.TinyEncDec``) under CrypTen 2PC: encode once, then decode.

``SecureEncDec`` extends ``layers.SecureGPT`` (same primitives, same op groups, same decoding loop)
with a bidirectional encoder over the client's source tokens and a cross-attention sub-layer in
every decoder block. Everything the cross sub-layer needs from the source is computed once, right
after the encoder, for the target positions the decoder will use:

- softmax / sf2relu / sf2quad / thex: K_x, V_x = e W_kv (one matmul per layer); per new position
  q = x W_q, scores, the variant's normalisation over the source, probs V_x, W_o, Norm_c;
- constant, unmerged: V_x = e W_v; per position C_x[pos] V_x, W_o, Norm_c;
- MM (merged): the whole sub-layer is an additive term Concat_j(C_x,j e_j) W_x + b_x, computed for
  all target positions at once (one C_x e product + one d x d matmul per layer); per token it is
  a public slice, so no cross-attention communication remains in the generation loop.

The encoder's constant attention (MM) depends on the source length (its rows are a softmax over
all source positions), so the server shares it, and C_x, when the source length is known.
"""

from __future__ import annotations

import torch

from .layers import SecureGPT, encrypt
from privtrans.shared.models.plain_encdec import TinyEncDec


class SecureEncDec(SecureGPT):
    """Secret-shared twin of a ``TinyEncDec``; batch size 1."""

    def __init__(self, model: TinyEncDec, meter=None, **kwargs):
        if not isinstance(model, TinyEncDec):
            raise TypeError(f"SecureEncDec needs a TinyEncDec, got {type(model).__name__}")
        self.model = model  # the server's plaintext copy: C and C_x are shared per source length
        super().__init__(model, meter, **kwargs)
        cr = self.cr
        with torch.no_grad():
            self.wpe_src = encrypt(cr, model.wpe_src.weight)
            self.enc_blocks = [self._share_block(b) for b in model.enc_blocks]
        self.n_target = 0

    def _share_block(self, blk) -> dict:
        p = super()._share_block(blk)
        if not hasattr(blk, "cross_constant"):
            return p
        x = {"module": blk}
        if self.cfg.merged:
            x["wx"] = self._share(blk.wx)
        else:
            for name in ("q_x", "kv_x", "proj_x", "norm_x"):
                x[name] = self._share(getattr(blk, name))
        if self.cfg.attention == "thex":
            with torch.no_grad():
                x["thex_w"] = encrypt(self.cr, blk.thex_wx)
        p["cross"] = x
        return p

    # ------------------------------------------------------------------ encoder
    def encode(self, src_ids, n_target: int):
        """Encode the client's source and prepare every decoder block's cross state for
        ``n_target`` target positions. Returns the secret encoder output (S, d)."""
        cfg, cr = self.cfg, self.cr
        src = torch.as_tensor(src_ids).reshape(-1)
        S = src.numel()
        if not 1 <= S <= cfg.max_src:
            raise ValueError(f"source length {S} outside 1..{cfg.max_src}")
        if not 1 <= n_target <= cfg.max_len:
            raise ValueError(f"target length {n_target} outside 1..{cfg.max_len}")
        e = self.embed(self.onehot(src)) + self.wpe_src[:S]
        for p, blk in zip(self.enc_blocks, self.model.enc_blocks):
            if cfg.attention == "constant":
                with torch.no_grad():
                    p["C"] = encrypt(cr, blk.constant_attention(S))
            e = self.block(p, e, {}, causal=False)
        d = cfg.d_model
        for p in self.blocks:
            x, blk = p["cross"], p["cross"]["module"]
            if cfg.attention == "constant":
                with torch.no_grad():
                    C = encrypt(cr, blk.cross_constant(n_target, S))  # (H, N, S)
                if cfg.merged:
                    with self.meter("Linear"):
                        mixed = self._merge(C.matmul(self._heads(e)))
                    x["term"] = self.linear(mixed, x["wx"])        # (N, d), sliced per position
                else:
                    x["C"], x["v"] = C, self.linear(e, x["kv_x"])[:, d:]
            else:
                kv = self.linear(e, x["kv_x"])
                x["k"], x["v"] = kv[:, :d], kv[:, d:]
        self.n_target = n_target
        return e

    # ------------------------------------------------------------------ decoder hook
    def cross_attention(self, p: dict, u, t: int):
        """Cross sub-layer for the n newest target positions t-n..t-1 (``u``: (n, d))."""
        cfg, x = self.cfg, p.get("cross")
        if x is None:  # encoder block
            return u
        n = u.size(0)
        if t > self.n_target:
            raise ValueError(f"target position {t - 1} was not prepared by encode() (n_target={self.n_target})")
        if cfg.merged:
            return u + x["term"][t - n:t]
        if cfg.attention == "constant":
            with self.meter("Linear"):
                att = self._merge(x["C"][:, t - n:t].matmul(self._heads(x["v"])))
        else:
            q = self.linear(u, x["q_x"])
            with self.meter("Linear"):
                scores = self._heads(q).matmul(self._heads(x["k"]).permute(0, 2, 1)) * (cfg.d_head ** -0.5)
            probs = self.normalise(scores, None, x)
            with self.meter("Linear"):
                att = self._merge(probs.matmul(self._heads(x["v"])))
        return self.norm(self.linear(att, x["proj_x"]) + u, x["norm_x"], cfg.attn_norm)

    # ------------------------------------------------------------------ entry points
    def forward(self, src_ids, ids=None, inputs_embeds=None, causal: bool = True):
        """Teacher-forced decoder pass given the source: (logits, hidden) as CrypTensors."""
        n = len(torch.as_tensor(ids).reshape(-1)) if inputs_embeds is None else inputs_embeds.size(0)
        self.encode(src_ids, n)
        return super().forward(ids, inputs_embeds, causal)

    def generate(self, src_ids, prefix_ids, n_new: int, decoding: str = "vanilla"):
        """Private greedy decoding given the source; see ``SecureGPT.generate``."""
        p = torch.as_tensor(prefix_ids).reshape(-1).numel()
        self.encode(src_ids, p + n_new - 1)
        return super().generate(prefix_ids, n_new, decoding)
