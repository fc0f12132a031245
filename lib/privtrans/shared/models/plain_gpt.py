"""The tiny word-level GPT of the MERGE chapter, in plaintext PyTorch: the twin of the private model.

One class, ``TinyGPT``, with the switches that the paper's variants need. The *same* weights run
privately in ``privtrans.shared.mpc.layers`` (CrypTensor ops), so a model trained here (by the quality
notebooks) can be generated from under 2-party MPC, and every private forward is tested against
this one.

Architecture (post-LN, as the paper writes the block in Sec. 3.2, not GPT-2's pre-LN)::

    x_0   = E[tokens] + P[positions]          (or inputs_embeds + P: embedding resending, ER)
    a     = Attn(x)                            softmax / sf2relu / sf2quad / thex / constant C
    x_att = Norm_1(a + x)                      Norm_1 = LayerNorm, or affine x*g+b (THE-X, MM)
    x'    = Norm_2(W_O Act(W_I x_att + b_I) + b_O + x_att)
    logits = x_L E^T                           (LM head tied to the token embedding)

MM (merge module, Sec. 4.3) in *merged form* (``merged=True``; needs ``attention="constant"``,
``attn_norm="affine"``) replaces the first three lines by::

    u  = Concat_j( C_j h[:, slice_j] ) W_0 + b_0      # C_j: constant causal attention of head j,
    x' = Norm_2(W_O Act(W_I u + b_I) + b_O + u)       #      acting on h's channel slice j

i.e. 9 d^2 secret weights per layer instead of 12 d^2, and no softmax. This is the official
benchmark's timed MERGE graph (``multiheadMut`` -> W0 -> W1 -> act -> W2) with the FFN residual
and LayerNorm kept, so that training and private inference are the same function.
``merge_block`` builds it from an unmerged constant-attention block with Eq. 10
(W_0 = (W_V W_d + I) diag(g), b_0 = g*(b_V W_d + b_d) + beta). That is *exact* only when (i) C is
shared by the heads (or there is one head), (ii) the residual also passes through C, (iii) b_V = 0
or the rows of C sum to 1 (ours do; the official ``gpt2_no_softmax`` C does not); the paper's
Eqs. 10-11 state it without these conditions. Eq. 11's further fold M_u = W_0 W_I (8 d^2) is exact
only without the FFN residual, which we keep.

Variants (``VARIANTS``; model switches + decoding mode, as in the paper's Tables 1-3):

=================== ============ ====== ========== ========= ======== ========
name                attention    act    attn_norm  ffn_norm  merged   decoding
=================== ============ ====== ========== ========= ======== ========
crypten (vanilla)   softmax      gelu   ln         ln        no       vanilla
mpcformer_sf2relu   sf2relu      quad   ln         ln        no       vanilla
mpcformer_sf2quad   sf2quad      quad   ln         ln        no       vanilla
thex                thex         relu   affine     affine    no       vanilla
only_er             softmax      gelu   ln         ln        er
only_mm             constant     gelu   affine     ln        yes      vanilla
merge (ER+MM)       constant     quad   affine     ln        yes      er
=================== ============ ====== ========== ========= ======== ========

THE-X "replaces all layer normalization operations to the approximate normalization" (MERGE §5.4;
Chen et al. 2022): both of its block's norms are affine maps. MM replaces only the norm before
attention (§4.3).

Decoding (``generate``): greedy. ``vanilla`` feeds the argmax token's embedding back; ``er`` feeds
the last hidden state back as the next input embedding and reads all tokens with one LM-head pass at
the end (Eq. 3). Training code (the quality notebooks) calls ``forward(input_ids=...)`` or
``forward(inputs_embeds=...)`` and gets ``(logits, hidden)``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from privtrans.shared.activations import MASK_VALUE, RELU_ATTENTION_EPS
from privtrans.shared.activations import activation as shared_activation

ATTENTIONS = ("softmax", "sf2relu", "sf2quad", "thex", "constant")
ACTS = ("gelu", "quad", "relu")
NORMS = ("ln", "affine")



@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 512
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 2
    d_ff: int = 0  # 0 -> 4 * d_model
    max_len: int = 64
    attention: str = "softmax"
    act: str = "gelu"
    attn_norm: str = "ln"
    ffn_norm: str = "ln"
    merged: bool = False
    sf2quad_c: float = 5.0  # MPCformer's shift c in (x + c)^2 / sum (x + c)^2
    ln_eps: float = 1e-5

    def __post_init__(self):
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, got {self.attention!r}")
        if self.act not in ACTS:
            raise ValueError(f"act must be one of {ACTS}, got {self.act!r}")
        for n in (self.attn_norm, self.ffn_norm):
            if n not in NORMS:
                raise ValueError(f"norms must be one of {NORMS}, got {n!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if self.merged and (self.attention != "constant" or self.attn_norm != "affine"):
            raise ValueError("merged=True (MM) needs attention='constant' and attn_norm='affine'")
        if min(self.vocab_size, self.d_model, self.n_layers, self.max_len) < 1:
            raise ValueError(f"sizes must be positive: {self}")

    @property
    def ff(self) -> int:
        return self.d_ff or 4 * self.d_model

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)


#: model switches and decoding mode of the paper's seven private-generation variants
VARIANTS: dict[str, dict] = {
    "crypten": dict(model={}, decoding="vanilla"),
    "mpcformer_sf2relu": dict(model=dict(attention="sf2relu", act="quad"), decoding="vanilla"),
    "mpcformer_sf2quad": dict(model=dict(attention="sf2quad", act="quad"), decoding="vanilla"),
    "thex": dict(model=dict(attention="thex", act="relu", attn_norm="affine", ffn_norm="affine"), decoding="vanilla"),
    "only_er": dict(model={}, decoding="er"),
    "only_mm": dict(model=dict(attention="constant", attn_norm="affine", merged=True), decoding="vanilla"),
    "merge": dict(model=dict(attention="constant", act="quad", attn_norm="affine", merged=True), decoding="er"),
}
#: the paper's row labels
VARIANT_LABELS = {
    "crypten": "CrypTen", "mpcformer_sf2relu": "MPCformer (sm2relu)", "mpcformer_sf2quad": "MPCformer (sm2quad)",
    "thex": "THE-X", "only_er": "MERGE (only ER)", "only_mm": "MERGE (only MM)", "merge": "MERGE (ER+MM)",
}


def variant_switches(variant: str) -> tuple[dict, str]:
    """(every model switch of a named variant, its decoding); the cost model reads these too."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    spec = VARIANTS[variant]
    reset = dict(attention="softmax", act="gelu", attn_norm="ln", ffn_norm="ln", merged=False)
    return {**reset, **spec["model"]}, spec["decoding"]


def variant_config(variant: str, base: GPTConfig | None = None, **sizes) -> tuple[GPTConfig, str]:
    """(config, decoding) of a named variant, on top of ``base`` / the given sizes."""
    switches, decoding = variant_switches(variant)
    return replace(replace(base or GPTConfig(), **sizes), **switches), decoding


# ----------------------------------------------------------------------------- functional pieces
def activation(name: str, x):
    """The secure model's formula (``privtrans.shared.activations``): GeLU (tanh form), Quad, ReLU."""
    return shared_activation(name, x)


def causal_mask(t_q: int, t_k: int, device=None) -> torch.Tensor:
    """1 where query i (the last t_q of t_k positions) may attend key j, else 0."""
    q = torch.arange(t_k - t_q, t_k, device=device)[:, None]
    return (torch.arange(t_k, device=device)[None, :] <= q).to(torch.get_default_dtype())


def attention_probs(kind: str, scores, mask01, thex_w=None, c: float = 5.0):
    """Row-normalised attention from scores (..., t_q, t_k) under a 0/1 mask; same math as MPC."""
    if kind == "softmax":
        return torch.softmax(scores + (1.0 - mask01) * MASK_VALUE, dim=-1)
    if kind == "sf2relu":
        num = F.relu(scores) * mask01
        return num / (num.sum(-1, keepdim=True) + RELU_ATTENTION_EPS)
    if kind == "sf2quad":
        num = (scores + c) ** 2 * mask01
        return num / num.sum(-1, keepdim=True)
    if kind == "thex":
        # THE-X stand-in of the official benchmark: polynomial "exp" times a learned affine
        # estimate of the reciprocal of its row sum (no division in MPC).
        num = F.relu(scores / 2.0 + 1.0) ** 3 * mask01
        s = num.sum(-1, keepdim=True)
        return num * (thex_w[0] * s + thex_w[1])
    raise ValueError(f"attention_probs does not handle {kind!r}")


class Norm(nn.Module):
    """LayerNorm, or THE-X's affine replacement x*g + b (per-dimension g, b as the paper says)."""

    def __init__(self, d: int, kind: str, eps: float):
        super().__init__()
        self.kind, self.eps = kind, eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        if self.kind == "ln":
            return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
        return x * self.weight + self.bias


class Block(nn.Module):
    """One post-LN block; with ``cfg.merged`` the MM merged form (see module docstring).

    ``causal=False`` makes it an encoder block (every position sees every position; constant
    attention is then a softmax over all positions of the current length)."""

    def __init__(self, cfg: GPTConfig, causal: bool = True):
        super().__init__()
        self.cfg, self.causal = cfg, causal
        d, H = cfg.d_model, cfg.n_heads
        if cfg.merged:
            self.w0 = nn.Linear(d, d)
        else:
            self.qkv = nn.Linear(d, 3 * d)  # q, k stay unused (dead weight) for constant attention
            self.proj = nn.Linear(d, d)
            self.norm1 = Norm(d, cfg.attn_norm, cfg.ln_eps)
        if cfg.attention == "constant":
            # logits of C; softmax over the causal past makes every row a distribution (gpt2_new).
            self.c_logits = nn.Parameter(torch.zeros(H, cfg.max_len, cfg.max_len))
        if cfg.attention == "thex":
            self.thex_w = nn.Parameter(torch.tensor([0.0, 1.0]))
        self.fc_in = nn.Linear(d, cfg.ff)
        self.fc_out = nn.Linear(cfg.ff, d)
        self.norm2 = Norm(d, cfg.ffn_norm, cfg.ln_eps)

    def mask(self, t: int) -> torch.Tensor:
        """The 0/1 attention mask at length t: causal, or all ones for an encoder block."""
        if self.causal:
            return causal_mask(t, t)
        return torch.ones(t, t)

    def constant_attention(self, t: int) -> torch.Tensor:
        """C as used at length t: (H, t, t), rows sum to 1; what the server secret-shares."""
        m = self.mask(t).to(self.c_logits.device)
        logits = self.c_logits[:, :t, :t] + (1.0 - m) * -1e9
        return torch.softmax(logits, dim=-1) * m

    def split_heads(self, x):  # (B, T, d) -> (B, H, T, dh)
        B, T, _ = x.shape
        return x.view(B, T, self.cfg.n_heads, self.cfg.d_head).transpose(1, 2)

    def merge_heads(self, x):
        B, H, T, dh = x.shape
        return x.transpose(1, 2).reshape(B, T, H * dh)

    def attend(self, x):
        cfg = self.cfg
        T = x.shape[1]
        if cfg.merged:
            return self.w0(self.merge_heads(self.constant_attention(T) @ self.split_heads(x)))
        q, k, v = self.qkv(x).split(cfg.d_model, dim=-1)
        if cfg.attention == "constant":
            probs = self.constant_attention(T).unsqueeze(0)
        else:
            scores = self.split_heads(q) @ self.split_heads(k).transpose(-1, -2) / math.sqrt(cfg.d_head)
            probs = attention_probs(cfg.attention, scores, self.mask(T).to(x.device),
                                    getattr(self, "thex_w", None), cfg.sf2quad_c)
        return self.proj(self.merge_heads(probs @ self.split_heads(v)))

    def forward(self, x):
        u = self.attend(x) if self.cfg.merged else self.norm1(self.attend(x) + x)
        return self.norm2(self.fc_out(activation(self.cfg.act, self.fc_in(u))) + u)


class TinyGPT(nn.Module):
    """Tiny word-level GPT; ``forward`` returns ``(logits, hidden)``, hidden = last block output."""

    block_type = Block  # the encoder-decoder's decoder swaps in blocks with cross-attention

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.wpe = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(self.block_type(cfg) for _ in range(cfg.n_layers))
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02 if isinstance(m, nn.Linear) else 0.1)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def embed(self, ids):
        """Token embeddings E[ids] (no positions): the ER alignment target."""
        return self.wte(ids)

    def forward(self, input_ids=None, inputs_embeds=None, **block_context):
        """``block_context`` goes to every block (the encoder-decoder's encoder output)."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids, inputs_embeds")
        x = self.wte(input_ids) if inputs_embeds is None else inputs_embeds
        if x.dim() != 3:
            raise ValueError(f"expected (batch, time, d) embeddings, got shape {tuple(x.shape)}")
        T = x.shape[1]
        if T > self.cfg.max_len:
            raise ValueError(f"sequence length {T} exceeds max_len {self.cfg.max_len}")
        x = x + self.wpe.weight[:T]
        for blk in self.blocks:
            x = blk(x, **block_context)
        return self.lm_head(x), x

    def lm_head(self, h):
        return h @ self.wte.weight.T

    @torch.no_grad()
    def generate(self, prefix_ids, n_new: int, decoding: str = "vanilla", **context):
        """Greedy decoding of ``n_new`` tokens after ``prefix_ids`` (B, p); returns (B, n_new) ids.

        ``er``: embedding resending; the hidden state of step t-1 is the input embedding of step t
        and the tokens are read from all hidden states by one LM-head pass at the end.
        ``context`` goes to every forward call (the encoder-decoder passes its encoder output).
        """
        if decoding not in ("vanilla", "er"):
            raise ValueError(f"decoding must be 'vanilla' or 'er', got {decoding!r}")
        ids = torch.as_tensor(prefix_ids)
        if ids.dim() == 1:
            ids = ids[None]
        if ids.shape[1] + n_new - 1 > self.cfg.max_len:
            raise ValueError(f"prefix {ids.shape[1]} + {n_new} new tokens exceed max_len {self.cfg.max_len}")
        emb = self.wte(ids)
        if decoding == "er":
            return self.lm_head(self._er_hiddens(emb, n_new, **context)).argmax(-1)
        outs = []
        for _ in range(n_new):
            logits, _ = self(inputs_embeds=emb, **context)
            nxt = logits[:, -1].argmax(-1)
            outs.append(nxt)
            emb = torch.cat([emb, self.wte(nxt)[:, None]], 1)
        return torch.stack(outs, 1)

    def _er_hiddens(self, emb, n_new: int, **context):
        """ER's n_new last hidden states (B, n_new, d) after the embeddings ``emb``: each is fed back
        as the next input embedding."""
        outs = []
        for _ in range(n_new):
            h = self(inputs_embeds=emb, **context)[1][:, -1:]
            outs.append(h)
            emb = torch.cat([emb, h], 1)
        return torch.cat(outs, 1)

    @torch.no_grad()
    def step_logits(self, prefix_ids, tokens, decoding: str = "vanilla"):
        """The logits (n, V) that greedy decoding after ``prefix_ids`` (p,) argmaxes at each of its n
        steps, given that the earlier steps chose ``tokens`` (n,): vanilla feeds the tokens back (one
        causal pass over prefix + tokens[:-1]); ER feeds its hidden states back, so the tokens do not
        enter. Decoding that chose ``tokens`` differently (a private run) can thus be compared step by
        step with the plaintext model on the same prefix."""
        if decoding not in ("vanilla", "er"):
            raise ValueError(f"decoding must be 'vanilla' or 'er', got {decoding!r}")
        prefix = torch.as_tensor(prefix_ids).reshape(-1)
        toks = torch.as_tensor(tokens).reshape(-1)
        p, n = prefix.numel(), toks.numel()
        if p < 1 or n < 1 or p + n - 1 > self.cfg.max_len:
            raise ValueError(f"need a prefix >= 1 and tokens >= 1 with prefix + tokens - 1 <= {self.cfg.max_len}, "
                             f"got {p} and {n}")
        if decoding == "vanilla":
            logits, _ = self(input_ids=torch.cat([prefix, toks[:-1]])[None])
            return logits[0, p - 1:]
        return self.lm_head(self._er_hiddens(self.wte(prefix[None]), n)[0])


# ----------------------------------------------------------------------------- MM merge (Eq. 10)
def merge_block(block: Block) -> Block:
    """The merged-form twin of an unmerged constant-attention block with affine Norm_1 (Eq. 10).

    W_0 = (W_V W_d + I) diag(g), b_0 = g * (b_V W_d + b_d) + beta, C and the FFN copied. Exact only
    under the conditions in the module docstring (head-shared C, residual through C); see
    ``unmerged_reference`` for the function it reproduces exactly.
    """
    cfg = block.cfg
    if cfg.merged or cfg.attention != "constant" or cfg.attn_norm != "affine":
        raise ValueError("merge_block needs an unmerged block with attention='constant', attn_norm='affine'")
    d = cfg.d_model
    out = Block(replace(cfg, merged=True))
    with torch.no_grad():
        w_v = block.qkv.weight[2 * d:].T  # (d, d), x @ w_v
        w_d = block.proj.weight.T
        g, beta = block.norm1.weight, block.norm1.bias
        out.w0.weight.copy_(((w_v @ w_d + torch.eye(d)) * g).T)
        b_v = block.qkv.bias[2 * d:]  # C's rows sum to 1, so C (1 b_V) W_d = 1 (b_V W_d): folds
        out.w0.bias.copy_(g * (b_v @ w_d + block.proj.bias) + beta)
        out.c_logits.copy_(block.c_logits)
        for name in ("fc_in", "fc_out", "norm2"):
            getattr(out, name).load_state_dict(getattr(block, name).state_dict())
    return out


def unmerged_reference(block: Block, x, residual_through_c: bool = True, shared_c: bool = True):
    """Eq. 9 with affine LN' written out for an unmerged constant block, on (B, T, d) input.

    ``residual_through_c``: x_att = LN'(C(h W_V W_d + h) + b_d) instead of LN'(C h W_V W_d + b_d + h);
    ``shared_c``: every head uses head 0's C. With both True it equals the merged block exactly; otherwise it differs (the paper's Eq. 10-11 gloss over this).
    """
    cfg = block.cfg
    d, T = cfg.d_model, x.shape[1]
    C = block.constant_attention(T)
    if shared_c:
        C = C[:1].expand_as(C)
    q, k, v = block.qkv(x).split(d, dim=-1)
    head_mix = lambda y: block.merge_heads(C.unsqueeze(0) @ block.split_heads(y))  # noqa: E731
    w_d, b_d = block.proj.weight.T, block.proj.bias
    if shared_c:  # one C for all heads: the sequence mix commutes with every feature map
        mixed_v, mixed_x = C[0] @ v, C[0] @ x
    else:  # standard multi-head: head j's C mixes V's output-channel slice j
        mixed_v, mixed_x = head_mix(v), head_mix(x)
    pre = mixed_v @ w_d + b_d + (mixed_x if residual_through_c else x)
    u = block.norm1(pre)
    return block.norm2(block.fc_out(activation(cfg.act, block.fc_in(u))) + u)
