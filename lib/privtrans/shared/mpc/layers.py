"""The tiny GPT's forward passes and greedy decoding written directly with CrypTensor ops.

``SecureGPT(model)`` secret-shares the weights of a ``plain_gpt.TinyGPT`` (the server, rank 0,
owns them) and runs the same function as the plaintext twin under CrypTen 2PC: every switch of
``GPTConfig`` (softmax / sf2relu / sf2quad / thex / constant attention, gelu / quad / relu,
LayerNorm / affine norm, merged MM block) and both decodings (vanilla, ER).
We do not use ``crypten.nn.from_pytorch``: CrypTen 0.4.1's ONNX import cannot convert LayerNorm,
Split or Identity.

Private-protocol choices (each mirrors the official benchmark unless noted):

- Tokens are one-hot rows shared by the client (rank 1); the embedding is a one-hot x table
  Beaver matmul ("Embed"). Positions are public, so adding the position row is a local slice.
- Decoding keeps a KV cache (vanilla) or a cache of layer inputs (MM, the official
  ``feature_onestep``); each step processes one new position. The loop always runs the full
  length: stopping at EOS would reveal a token.
- Vanilla decoding: LM head on the last position, ``argmax(one_hot=True)``, the one-hot feeds the
  next embedding ("Gen"). The official code also runs a softmax over V before the argmax; we do
  not (same token, fewer rounds).
- ER decoding: the last hidden state is the next input embedding; one LM head + argmax over all
  generated positions at the end ("Gen").
- Causal masks: additive ``MASK_VALUE`` (-30) inside CrypTen's softmax (its exp diverges below
  -256, so the usual -1e4 breaks it); multiplicative 0/1 masks for the softmax substitutes.
  Only the prefix pass needs a mask: a new query may see every cached key.
- C (constant attention) and all weights stay secret-shared: only the final token ids are revealed.

Operation groups for the meter (the paper's columns): Embed, Linear (every other Beaver matmul:
projections, FFN, attention score/value products, C products), Softmax (attention
normalisation or its substitute), Norm, Act, Gen (LM head + argmax).
"""

from __future__ import annotations

import math

import torch

from privtrans.book import dry
from privtrans.shared.activations import MASK_VALUE, RELU_ATTENTION_EPS, activation
from privtrans.shared.models.plain_gpt import TinyGPT, causal_mask

from . import compat
from .meter import NullMeter

SERVER, CLIENT = 0, 1
LN_NR_ITERS = 10


def _owner(cr, src: int) -> int:
    """The party that owns an input; in a one-party world (numerics tests) that is party 0."""
    return min(src, cr.communicator.get().get_world_size() - 1)


def encrypt(cr, t, src=SERVER):
    return cr.cryptensor(t.detach().to(torch.float32).cpu(), src=_owner(cr, src))


class SecureGPT:
    """Secret-shared twin of a ``TinyGPT``; batch size 1, sequences as (T, d) CrypTensors."""

    def __init__(self, model: TinyGPT, meter=None, ln_nr_iters: int = LN_NR_ITERS):
        self.cr = compat.crypten()
        # CrypTen's inv_sqrt (Newton, default 3 iterations) is off by 40 % at variance 1e-2, which
        # tiny models' LayerNorm inputs reach; 10 iterations are accurate on [1e-3, 300].
        self.cr.cfg.functions.sqrt_nr_iters = ln_nr_iters
        self.cfg = cfg = model.cfg
        self.meter = meter or NullMeter()
        cr = self.cr
        with torch.no_grad():
            self.wte = encrypt(cr, model.wte.weight)          # (V, d) embedding table
            self.wte_t = encrypt(cr, model.wte.weight.T)      # (d, V) tied LM head (shared separately)
            self.wpe = encrypt(cr, model.wpe.weight)          # (max_len, d)
            self.blocks = [self._share_block(blk) for blk in model.blocks]

    def _share(self, m) -> tuple:
        """Shares of a Linear as (W^T, b) or of a Norm as (g, b): the pairs ``linear`` / ``norm`` take."""
        with torch.no_grad():
            w = m.weight.T if isinstance(m, torch.nn.Linear) else m.weight
            return encrypt(self.cr, w), encrypt(self.cr, m.bias)

    def _share_block(self, blk) -> dict:
        """Secret shares of one block's weights (C at full length: causal rows do not depend on it)."""
        cr, cfg = self.cr, self.cfg
        p = {}
        if cfg.merged:
            p["w0"] = self._share(blk.w0)
        else:
            p["qkv"], p["proj"], p["norm1"] = self._share(blk.qkv), self._share(blk.proj), self._share(blk.norm1)
        with torch.no_grad():
            if cfg.attention == "constant" and blk.causal:
                p["C"] = encrypt(cr, blk.constant_attention(cfg.max_len))  # (H, L, L), precomputed
            if cfg.attention == "thex":
                p["thex_w"] = encrypt(cr, blk.thex_w)
        p["fc_in"], p["fc_out"], p["norm2"] = self._share(blk.fc_in), self._share(blk.fc_out), self._share(blk.norm2)
        return p

    # ------------------------------------------------------------------ primitives
    def linear(self, x, wb):
        with self.meter("Linear"):
            return x.matmul(wb[0]) + wb[1]

    def norm(self, x, gb, kind: str):
        with self.meter("Norm"):
            if kind == "affine":
                return x * gb[0] + gb[1]
            mu = x.mean(-1, keepdim=True)
            xc = x - mu
            var = (xc * xc).mean(-1, keepdim=True)
            return xc * (var + self.cfg.ln_eps).inv_sqrt() * gb[0] + gb[1]

    def act(self, x):
        with self.meter("Act"):
            return activation(self.cfg.act, x)

    def _heads(self, x):  # (T, d) -> (H, T, dh)
        T = x.size(0)
        return x.view(T, self.cfg.n_heads, self.cfg.d_head).permute(1, 0, 2)

    def _merge(self, x):  # (H, T, dh) -> (T, d)
        T = x.size(1)
        return x.permute(1, 0, 2).reshape(T, self.cfg.d_model)

    def normalise(self, scores, mask01, p):
        """Attention probabilities from (H, n, t) scores: the variant's softmax or its substitute."""
        kind = self.cfg.attention
        with self.meter("Softmax"):
            if kind == "softmax":
                if mask01 is not None:
                    scores = scores + (1.0 - mask01) * MASK_VALUE
                return scores.softmax(-1)
            if kind == "sf2relu":
                num = scores.relu()
            elif kind == "sf2quad":
                # scaled by the public 1/(c^2 t) so the row sum stays inside the Newton
                # reciprocal's convergence range (y0 = 0.003 < 2/s needs s < 667); exact in the ratio
                c = self.cfg.sf2quad_c
                num = (scores + c).square() * (1.0 / (c * c * scores.size(-1)))
            else:  # thex
                num = (scores * 0.5 + 1.0).relu()
                num = num.square() * num
            if mask01 is not None:
                num = num * mask01
            s = num.sum(-1, keepdim=True)
            if kind == "thex":
                return num * (s * p["thex_w"][0] + p["thex_w"][1])
            if kind == "sf2relu":
                s = s + RELU_ATTENTION_EPS
            with self.cr.cfg.temp_override({"functions.reciprocal_all_pos": True}):  # sums are > 0
                return num * s.reciprocal()

    # ------------------------------------------------------------------ one block, n new positions
    def block(self, p: dict, x, cache: dict, causal: bool = True):
        """One block (shares ``p``) on the n newest positions ``x`` (n, d); ``cache`` holds its past."""
        cfg = self.cfg
        n = x.size(0)
        if cfg.merged or cfg.attention == "constant":
            src = x if cfg.merged else self.linear(x, p["qkv"])[:, 2 * cfg.d_model:]
            past = cache.get("h")
            allh = src if past is None else self.cr.cat([past, src], 0)
            cache["h"] = allh
            t = allh.size(0)
            with self.meter("Linear"):
                mixed = self._merge(p["C"][:, t - n:t, :t].matmul(self._heads(allh)))
            if cfg.merged:
                u = self.linear(mixed, p["w0"])
            else:
                u = self.norm(self.linear(mixed, p["proj"]) + x, p["norm1"], cfg.attn_norm)
        else:
            qkv = self.linear(x, p["qkv"])
            d = cfg.d_model
            q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
            if "k" in cache:
                k, v = self.cr.cat([cache["k"], k], 0), self.cr.cat([cache["v"], v], 0)
            cache["k"], cache["v"] = k, v
            t = k.size(0)
            with self.meter("Linear"):
                scores = self._heads(q).matmul(self._heads(k).permute(0, 2, 1)) * (1.0 / math.sqrt(cfg.d_head))
            mask = causal_mask(n, t) if (causal and n > 1) else None
            probs = self.normalise(scores, mask, p)
            with self.meter("Linear"):
                att = self._merge(probs.matmul(self._heads(v)))
            u = self.norm(self.linear(att, p["proj"]) + x, p["norm1"], cfg.attn_norm)
        u = self.cross_attention(p, u, t)
        y = self.linear(self.act(self.linear(u, p["fc_in"])), p["fc_out"])
        return self.norm(y + u, p["norm2"], cfg.ffn_norm)

    def cross_attention(self, p: dict, u, t: int):
        """The sub-layer between attention and FFN: none in a decoder-only model."""
        return u

    def layers(self, emb, caches: list, start: int, causal: bool = True):
        """All blocks on input embeddings ``emb`` (n, d) at positions start..start+n-1."""
        n = emb.size(0)
        if start + n > self.cfg.max_len:
            raise ValueError(f"position {start + n} exceeds max_len {self.cfg.max_len}")
        x = emb + self.wpe[start:start + n]
        for p, cache in zip(self.blocks, caches):
            x = self.block(p, x, cache, causal)
        return x

    # ------------------------------------------------------------------ public entry points
    def onehot(self, ids, src=CLIENT):
        """The client's tokens as secret one-hot rows (n, V)."""
        ids = torch.as_tensor(ids).reshape(-1)
        return self.cr.cryptensor(torch.nn.functional.one_hot(ids, self.cfg.vocab_size).float(),
                                  src=_owner(self.cr, src))

    def embed(self, onehot):
        with self.meter("Embed"):
            return onehot.matmul(self.wte)

    def forward(self, ids=None, inputs_embeds=None, causal: bool = True):
        """Full-sequence forward (no generation): returns (logits, hidden) as CrypTensors."""
        emb = self.embed(self.onehot(ids)) if inputs_embeds is None else inputs_embeds
        h = self.layers(emb, [{} for _ in range(self.cfg.n_layers)], 0, causal)
        with self.meter("Gen"):
            return h.matmul(self.wte_t), h

    def generate(self, prefix_ids, n_new: int, decoding: str = "vanilla"):
        """Greedy private decoding; returns the revealed token ids (n_new,) and the secret hiddens.

        The prefix is processed in one pass; then n_new - 1 single-position steps.
        """
        if decoding not in ("vanilla", "er"):
            raise ValueError(f"decoding must be 'vanilla' or 'er', got {decoding!r}")
        prefix = torch.as_tensor(prefix_ids).reshape(-1)
        p = prefix.numel()
        if p < 1 or n_new < 1 or p + n_new - 1 > self.cfg.max_len:
            raise ValueError(f"need prefix >= 1, n_new >= 1, prefix + n_new - 1 <= {self.cfg.max_len}")
        caches = [{} for _ in range(self.cfg.n_layers)]
        h = self.layers(self.embed(self.onehot(prefix)), caches, 0)[-1:]
        hiddens, tokens = [h], []
        for step in dry.loop(range(n_new), "generated tokens (private)"):
            if decoding == "vanilla":
                with self.meter("Gen"):
                    tok = h.matmul(self.wte_t).argmax(dim=-1, one_hot=True)
                tokens.append(tok)
                if step == n_new - 1:
                    break
                h = self.layers(self.embed(tok), caches, p + step)
            else:
                if step == n_new - 1:
                    break
                h = self.layers(h, caches, p + step)
            hiddens.append(h)
        if decoding == "er":
            with self.meter("Gen"):
                onehots = self.cr.cat(hiddens, 0).matmul(self.wte_t).argmax(dim=-1, one_hot=True)
        else:
            onehots = self.cr.cat(tokens, 0)
        with self.meter("Other"):
            ids = onehots.get_plain_text().argmax(-1)  # reveal (the paper reveals to the client)
        return ids, self.cr.cat(hiddens, 0)
