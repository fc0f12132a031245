"""Closed-form per-party communication of private greedy generation, per operation group.

Why the baselines send so much: CrypTen's Beaver matmul of a secret (n x k) by a secret (k x m)
re-opens both masked operands on every call, so it costs ``16 (n k + k m)`` bytes per party
(8 B per ring element, both directions) in one round, *whatever n is*. Generating one token
therefore re-sends every weight matrix: V d for the embedding, 12 L d^2 for the layers and V d for
the LM head. ER removes the two V d terms from the loop; MM's merged block has 9 L d^2 instead
of 12 L d^2 and no softmax.

``generation_cost(shape, variant)`` follows ``privtrans.shared.mpc.layers.SecureGPT.generate`` step by
step (prefix pass, then one position per step with a KV / layer-input cache):

- Embed, Linear, and the LM-head part of Gen are *exact* (tests compare them with CrypTen's byte
  counter to the byte);
- nonlinear groups (Softmax, Norm, Act, argmax in Gen) use byte counts per element / per row
  measured once on CrypTen 0.4.1 (``parties.nonlinear_probe``, ``parties.rowop_probe``), with the
  structure of CrypTen's algorithms (the log-reduction max of softmax/argmax); they reproduce the
  measured bytes exactly on every shape we probed.

Rounds: one per matmul, per-call counts for the nonlinear ops (softmax and argmax grow with the
log of the row length). The paper's "GB" are GiB per party (``GIB``).

``graph``: the same counts for a benchmark graph that differs from ours in how it runs the protocol
(:class:`Graph`). :data:`AUTHORS` is MERGE's own benchmark code (``benchmark/gpt.py``,
``encryp_decoder_nosimLN.py``): the one-hot embedding split into 250 matmuls (250 rounds a call),
separate Q, K and V projections, a BatchNorm stand-in (an affine map in eval mode) for every
LayerNorm and none in the merged graph, a softmax over the vocabulary before each vanilla argmax,
no reveal, and ER that embeds prefix[:-1] and the last prefix token apart, runs every new token
through the layers and ends with one LM head over all positions and no argmax. Its counts are the
rounds that go with the paper's printed bytes (the paper prints no rounds): the MERGE chapter
calibrates its link on them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from privtrans.shared.models.plain_gpt import VARIANTS, variant_switches

GIB = 1024 ** 3
ELEM = 16  # bytes per opened ring element per party: 8 B, logged for both directions


@dataclass(frozen=True)
class Shape:
    vocab: int
    d: int
    layers: int
    heads: int
    d_ff: int = 0  # 0 -> 4 d
    prefix: int = 4
    n_new: int = 124  # the paper: prefix 4, generate to total length 128

    @property
    def ff(self) -> int:
        return self.d_ff or 4 * self.d

    @property
    def params(self) -> int:
        """Parameter count of the decoder (tied LM head; biases and norms ignored)."""
        return self.vocab * self.d + self.layers * (4 * self.d ** 2 + 2 * self.d * self.ff)


#: the paper's GPT-2 (124M) benchmark shape
GPT2 = Shape(vocab=50257, d=768, layers=12, heads=12, d_ff=3072, prefix=4, n_new=124)


def matmul_bytes(n: int, k: int, m: int, batch: int = 1) -> int:
    """Per-party bytes of a secret (batch, n, k) @ secret (batch, k, m) Beaver matmul."""
    return ELEM * batch * (n * k + k * m)


# Bytes of the nonlinear ops per party, measured once on CrypTen 0.4.1 (``parties.nonlinear_probe``
# and ``parties.rowop_probe``) and exact on every shape we probed (bytes scale with the number of
# elements; rounds are per call). Elementwise ops: bytes per element.
NONLINEAR = {
    "act_gelu": dict(elem=832, rounds=26),       # tanh-GeLU (sigmoid via reciprocal)
    "act_quad": dict(elem=16, rounds=1),         # one square
    "act_relu": dict(elem=464, rounds=9),        # one comparison + one multiplication
    "norm_affine": dict(elem=16, vec=16, rounds=1),         # x * g + b: 16 (n d + d)
    "norm_ln": dict(elem=64, row=944, vec=16, rounds=41),   # 64 n d + 944 n + 16 d (inv_sqrt, 10 NR steps)
    # softmax substitutes over rows of length t: rows * (per_t t + per_row) + per_call
    "att_sf2relu": dict(per_t=480, per_row=624, per_call=0, rounds=38),
    "att_sf2quad": dict(per_t=32, per_row=624, per_call=0, rounds=30),
    "att_thex": dict(per_t=528, per_row=32, per_call=16, rounds=13),
}

# CrypTen's max / argmax ("log_reduction"): int(ln n) halving steps of pairwise comparisons
# (H elements compared), then an all-pairs comparison on the m remaining elements (P = (r-1) m
# comparisons, Q = m (r-2) multiplications in the product tree, r = max(m, 2)), then equality with
# the max and a random tie-break over the n inputs. Bytes per row are linear in these counts
# (coefficients fitted with zero residual on 18 row lengths 2..768); rounds are
# base + 10 * steps + ceil(log2(r - 1)).
ROWOPS = {
    "argmax": dict(H=384, P=416, Q=48, M=368, N=752, one=576, base_rounds=36),
    "softmax": dict(H=438, P=434, Q=30, M=404, N=842, one=1200, base_rounds=73),  # max, exp, reciprocal
}


def _row_counts(n: int) -> dict:
    steps, m, halved = int(math.log(n)), n, 0
    for _ in range(steps):
        halved += m // 2
        m = m // 2 + m % 2
    r = m if m > 1 else 2
    return dict(steps=steps, H=halved, P=(r - 1) * m, Q=m * max(r - 2, 0), M=m, N=n, one=1,
                depth=math.ceil(math.log2(r - 1)) if r > 2 else 0)


def rowop_cost(kind: str, rows: int, n: int) -> tuple[int, int]:
    """(bytes, rounds) of CrypTen ``argmax(one_hot=True)`` or ``softmax`` over ``rows`` rows of length n."""
    if n < 2:
        raise ValueError("row length must be >= 2")
    c, k = ROWOPS[kind], _row_counts(n)
    per_row = sum(c[f] * k[f] for f in ("H", "P", "Q", "M", "N", "one"))
    return int(round(rows * per_row)), c["base_rounds"] + 10 * k["steps"] + k["depth"]


def _att(kind: str, rows: int, t: int) -> tuple[int, float]:
    if kind == "att_softmax":
        if t == 1:  # CrypTen returns ones for a length-1 softmax
            return 0, 0
        return rowop_cost("softmax", rows, t)
    c = NONLINEAR[kind]
    return rows * (c["per_t"] * t + c["per_row"]) + c["per_call"], c["rounds"]


#: reciprocal (10 Newton steps, positive input) + the multiplication by it, per row / per element:
#: what a freeDiv variant saves over its parent (the paper's "1 division and n multiplications")
DIVISION = dict(per_t=16, per_row=624, rounds=29)


def normaliser_cost(kind: str, rows: int, t: int) -> tuple[int, int]:
    """(bytes, rounds) per party of one 2PC attention normaliser over ``rows`` rows of length t.

    Kinds of the MPC-attention chapter's normalisers: softmax, 2relu, 2quad (with the reciprocal),
    scaling (public division: local), softmax_freediv (softmax without the division),
    2quad_freediv (one square). Public masks and public scalings are local in 2PC.
    """
    if kind == "softmax":
        return _att("att_softmax", rows, t)
    if kind == "2relu":
        return _att("att_sf2relu", rows, t)
    if kind == "2quad":
        return _att("att_sf2quad", rows, t)
    if kind == "scaling":
        return 0, 0
    if kind == "2quad_freediv":
        return ELEM * rows * t, NONLINEAR["act_quad"]["rounds"]
    if kind == "softmax_freediv":
        b, r = _att("att_softmax", rows, t)
        return b - rows * (DIVISION["per_t"] * t + DIVISION["per_row"]), r - DIVISION["rounds"]
    raise ValueError(f"unknown attention normaliser {kind!r}: allowed values are softmax, 2relu, 2quad, "
                     "scaling, softmax_freediv, 2quad_freediv")


@dataclass(frozen=True)
class Graph:
    """How a benchmark graph runs the protocol where it differs from ours (:data:`OURS`)."""
    name: str
    embed_chunks: int = 1            # the one-hot x table matmul split into this many matmuls (rounds)
    separate_qkv: bool = False       # three projections (three rounds) instead of one fused
    norm_standin: bool = False       # every norm an affine map (BatchNorm in eval mode)
    merged_norm: bool = True         # the merged (MM) graph has its norms
    gen_softmax: bool = False        # vanilla decoding: a softmax over the vocabulary before the argmax
    reveal: bool = True              # the tokens are revealed at the end ("Other")
    er_split_prefix: bool = False    # ER: prefix[:-1] and the last token embedded apart; every new token run
    er_argmax: bool = True           # ER: an argmax over the final LM head's rows
    encdec_per_step: bool = False    # encoder-decoder: the cross keys (MM: the cross term) are made again
                                     # in every decoder call, and vanilla decoding re-runs the encoder layers
    kv_cache: bool = True            # False: vanilla decoding of an unmerged model re-embeds and re-runs the
                                     # whole sequence at every step (App. C.1's O(N_t^2) baseline)


#: this book's protocol (``privtrans.shared.mpc.layers``)
OURS = Graph("ours")
#: the baselines as the paper's App. C.1 analyses them: no KV cache, the whole sequence re-run per step
NO_KV_CACHE = Graph("App. C.1's baseline (no KV cache)", kv_cache=False)
#: MERGE's benchmark code (the graph behind the paper's Tables 1-2; see the module docstring)
AUTHORS = Graph("the authors' benchmark graph", embed_chunks=250, separate_qkv=True, norm_standin=True,
                merged_norm=False, gen_softmax=True, reveal=False, er_split_prefix=True, er_argmax=False,
                encdec_per_step=True)


def _spec(variant: str, decoding: str | None) -> tuple[dict, str]:
    switches, default = variant_switches(variant)
    return switches, decoding or default


class _Tally:
    """Bytes and rounds per group, added op by op in the order ``SecureGPT`` runs them."""

    def __init__(self, spec: dict, d: int, heads: int, ff: int, graph: Graph = OURS):
        self.spec, self.d, self.H, self.ff, self.graph = spec, d, heads, ff, graph
        self.g = {k: {"bytes": 0.0, "rounds": 0.0} for k in ("Embed", "Linear", "Softmax", "Norm", "Act", "Gen", "Other")}
        self.encoder = None  # (layers, source length) an encoder-decoder's encoder, re-run per step by some graphs

    def add(self, group, b, r=1):
        self.g[group]["bytes"] += b
        self.g[group]["rounds"] += r

    def embed(self, n, V):
        """n one-hot rows x the V x d table: the same bytes however the table is split, a round a piece."""
        self.add("Embed", matmul_bytes(n, V, self.d), self.graph.embed_chunks)

    def project_qkv(self, n):
        d = self.d
        if self.graph.separate_qkv:
            self.add("Linear", 3 * matmul_bytes(n, d, d), 3)
        else:
            self.add("Linear", matmul_bytes(n, d, 3 * d))

    def norm(self, kind, n):
        if self.spec["merged"] and not self.graph.merged_norm:
            return
        if self.graph.norm_standin:
            kind = "affine"
        c = NONLINEAR[f"norm_{kind}"]
        self.add("Norm", c["elem"] * n * self.d + c.get("row", 0) * n + c["vec"] * self.d, c["rounds"])

    def attention(self, n, t):
        """Scores, normalisation and value product of n queries over t keys (projections apart)."""
        d, H = self.d, self.H
        self.add("Linear", ELEM * (n * d + t * d))      # scores: (H, n, dh) @ (H, dh, t)
        self.add("Softmax", *_att(f"att_{self.spec['attention']}", H * n, t))
        self.add("Linear", ELEM * (H * n * t + t * d))  # probs (H, n, t) @ V (H, t, dh)

    def layer(self, n, t, cross_keys: int = 0):
        """One block on n new positions with t keys in total; ``cross_keys``: source length of a
        decoder block's cross sub-layer (its keys / merged term are prepared by ``cross_setup``)."""
        spec, d, H = self.spec, self.d, self.H
        if spec["merged"]:
            self.add("Linear", ELEM * (H * n * t + t * d))  # C slice (H, n, t) @ cached inputs (H, t, dh)
            self.add("Linear", matmul_bytes(n, d, d))
        else:
            self.project_qkv(n)
            if spec["attention"] == "constant":
                self.add("Linear", ELEM * (H * n * t + t * d))
            else:
                self.attention(n, t)
            self.add("Linear", matmul_bytes(n, d, d))
            self.norm(spec["attn_norm"], n)
        if cross_keys and self.graph.encdec_per_step:
            self.cross_setup(n, cross_keys)  # made again in every call
        if cross_keys and not spec["merged"]:
            S = cross_keys
            if spec["attention"] == "constant":
                self.add("Linear", ELEM * (H * n * S + S * d))
            else:
                self.add("Linear", matmul_bytes(n, d, d))   # q
                self.attention(n, S)
            self.add("Linear", matmul_bytes(n, d, d))       # output projection
            self.norm(spec["attn_norm"], n)
        self.add("Linear", matmul_bytes(n, d, self.ff))
        c = NONLINEAR[f"act_{spec['act']}"]
        self.add("Act", c["elem"] * n * self.ff, c["rounds"])
        self.add("Linear", matmul_bytes(n, self.ff, d))
        self.norm(spec["ffn_norm"], n)

    def cross_setup(self, n_target: int, S: int):
        """What one decoder block prepares from the encoder output, once per generation."""
        d, H = self.d, self.H
        if self.spec["merged"]:
            self.add("Linear", ELEM * (H * n_target * S + S * d))  # C_x (H, N, S) @ e (H, S, dh)
            self.add("Linear", matmul_bytes(n_target, d, d))         # @ W_x
        elif self.graph.separate_qkv:
            self.add("Linear", 2 * matmul_bytes(S, d, d), 2)
        else:
            self.add("Linear", matmul_bytes(S, d, 2 * d))            # K_x, V_x = e W_kv

    def rerun_encoder(self):
        """A graph that re-runs the encoder layers on the source at every vanilla decoding step."""
        if self.encoder is not None and self.graph.encdec_per_step:
            layers, S = self.encoder
            for _ in range(layers):
                self.layer(S, S)

    def decode(self, V, layers, prefix, n_new, decoding, cross_keys=0):
        """Prefix pass, then one position per step, then the final LM head (ER) and reveal."""
        d, p, T, graph = self.d, prefix, n_new, self.graph
        if decoding == "er" and graph.er_split_prefix:
            # the authors' ER: embed prefix[:-1] and the last token apart, run prefix[:-1], then every
            # new position (the last prefix token's first) through the layers; one LM head at the end
            self.embed(p - 1, V)
            self.embed(1, V)
            for _ in range(layers):
                self.layer(p - 1, p - 1, cross_keys)
            for step in range(T):
                for _ in range(layers):
                    self.layer(1, p + step, cross_keys)
            self.add("Gen", matmul_bytes(p - 1 + T, d, V))
            if graph.er_argmax:
                self.add("Gen", *rowop_cost("argmax", T, V))
            if graph.reveal:
                self.add("Other", ELEM * T * V, 1)
            return
        self.embed(p, V)
        for _ in range(layers):
            self.layer(p, p, cross_keys)
        for step in range(T):
            if decoding == "vanilla":
                self.add("Gen", matmul_bytes(1, d, V))
                if graph.gen_softmax:
                    self.add("Gen", *rowop_cost("softmax", 1, V))
                self.add("Gen", *rowop_cost("argmax", 1, V))
                if step == T - 1:
                    break
                if not graph.kv_cache and not self.spec["merged"]:  # re-run the whole sequence
                    t = p + step + 1
                    self.embed(t, V)
                    for _ in range(layers):
                        self.layer(t, t, cross_keys)
                    continue
                self.embed(1, V)
                self.rerun_encoder()
            elif step == T - 1:
                break
            for _ in range(layers):
                self.layer(1, p + step + 1, cross_keys)
        if decoding == "er":
            self.add("Gen", matmul_bytes(T, d, V))
            if graph.er_argmax:
                self.add("Gen", *rowop_cost("argmax", T, V))
        if graph.reveal:
            self.add("Other", ELEM * T * V, 1)  # revealing the one-hot tokens (all_reduce: 2 x 8 B per element)

    def result(self) -> dict:
        g = dict(self.g)
        g["Total"] = {k: sum(x[k] for x in self.g.values()) for k in ("bytes", "rounds")}
        return g


def generation_cost(shape, variant: str, decoding: str | None = None, graph: Graph = OURS) -> dict:
    """{group: {"bytes", "rounds"}} plus "Total" for one private generation of ``shape.n_new`` tokens.

    ``shape``: a ``Shape`` (GPT) or an ``EncDecShape`` (encoder-decoder); ``graph``: whose graph
    runs the protocol (:data:`OURS`, :data:`AUTHORS`)."""
    if isinstance(shape, EncDecShape):
        return encdec_generation_cost(shape, variant, decoding, graph)
    spec, decoding = _spec(variant, decoding)
    t = _Tally(spec, shape.d, shape.heads, shape.ff, graph)
    t.decode(shape.vocab, shape.layers, shape.prefix, shape.n_new, decoding)
    return t.result()


@dataclass(frozen=True)
class EncDecShape:
    """An encoder-decoder generation: encode ``src`` tokens, then decode as ``Shape`` does."""

    vocab: int
    d: int
    enc_layers: int
    dec_layers: int
    heads: int
    d_ff: int = 0
    src: int = 4
    prefix: int = 2
    n_new: int = 126

    @property
    def ff(self) -> int:
        return self.d_ff or 4 * self.d

    @property
    def params(self) -> int:
        """Parameter count (one tied embedding; biases and norms ignored)."""
        return (self.vocab * self.d + self.enc_layers * (4 * self.d ** 2 + 2 * self.d * self.ff)
                + self.dec_layers * (8 * self.d ** 2 + 2 * self.d * self.ff))


#: the paper's "T5 (138M)" benchmark shape: 6 + 6 layers of GPT-2 width, the encoder reads the
#: 4 prefix tokens, the decoder starts from 2 tokens and generates to length 128
T5 = EncDecShape(vocab=50257, d=768, enc_layers=6, dec_layers=6, heads=12, d_ff=3072, src=4, prefix=2, n_new=126)


def encdec_generation_cost(shape: EncDecShape, variant: str, decoding: str | None = None,
                           graph: Graph = OURS) -> dict:
    """Per-group cost of ``SecureEncDec.generate``: encoder pass, cross set-up, decoding (``graph``:
    :data:`AUTHORS` makes the cross keys in every decoder call and, decoding vanilla, re-runs the
    encoder layers at every step, as the authors' ``encoderDecoder_vanilla.py`` does)."""
    spec, decoding = _spec(variant, decoding)
    t = _Tally(spec, shape.d, shape.heads, shape.ff, graph)
    S = shape.src
    t.embed(S, shape.vocab)
    for _ in range(shape.enc_layers):
        t.layer(S, S)
    t.encoder = (shape.enc_layers, S)
    if not graph.encdec_per_step:
        for _ in range(shape.dec_layers):
            t.cross_setup(shape.prefix + shape.n_new - 1, S)
    t.decode(shape.vocab, shape.dec_layers, shape.prefix, shape.n_new, decoding, cross_keys=S)
    return t.result()


def table(shape: Shape = GPT2, variants=None, graph: Graph = OURS) -> list[dict]:
    """One row per variant: bytes per group in GiB, total, and fraction of the CrypTen baseline."""
    variants = list(variants or VARIANTS)
    base = generation_cost(shape, "crypten", graph=graph)["Total"]["bytes"]
    rows = []
    for v in variants:
        c = generation_cost(shape, v, graph=graph)
        row = {"variant": v}
        row.update({f"{k}_GiB": c[k]["bytes"] / GIB for k in ("Embed", "Linear", "Softmax", "Norm", "Act", "Gen")})
        row["Total_GiB"] = c["Total"]["bytes"] / GIB
        row["fraction"] = c["Total"]["bytes"] / base
        row["rounds"] = c["Total"]["rounds"]
        rows.append(row)
    return rows


def with_length(shape: Shape, total_len: int) -> Shape:
    """The same model generating up to ``total_len`` positions (prefix included)."""
    if total_len <= shape.prefix:
        raise ValueError(f"total length {total_len} must exceed the prefix {shape.prefix}")
    return replace(shape, n_new=total_len - shape.prefix)
