"""The encoder's forward written against primitives, for SecretFlow SPU's whole-model runs.

SPU's environment holds no torch, so ``encoder.forward`` (torch and CrypTen) cannot run there. This
is the same computation, layer for layer, for one unpadded sentence: the client's one-hot tokens
times the embedding table, public positions, LayerNorm, every block with the attention normaliser
of ``normalisers`` and the activation of ``privtrans.shared.activations``, mean pooling and the head. It imports neither torch
nor JAX: ``normalisers.JaxOps`` runs it in SPU, ``normalisers.TorchOps`` in the test that keeps it
equal to ``encoder.forward`` for every attention and activation (tests/test_mpc_attention_normalisers.py).

Weights are a flat dict of arrays named as ``flat_params`` names them (torch layout: Linear
weights (out, in)), so the book's environment can write them to an ``.npz`` the worker reads.
"""

from __future__ import annotations

import math

from privtrans.shared.activations import activation

from .normalisers import UNSCALED, PowerLaw, normalise

LN_EPS = 1e-5  # encoder.LN_EPS (a test keeps them equal; this module may not import torch)


def layer_norm(x, g, b, ops):
    xc = x - ops.rowmean(x)
    return xc * ops.rsqrt(ops.rowmean(ops.square(xc)) + LN_EPS) * g + b


def linear(x, p: dict, name: str, ops):
    return ops.matmul(x, ops.t(p[f"{name}.weight"])) + p[f"{name}.bias"]


def forward(p: dict, onehot, cfg: dict, ops, fits: dict | None = None):
    """Logits (1, n_out) of one sentence: ``onehot`` (T, vocab) the client's tokens, ``p`` the weights
    (``TinyEncoder.state_dict()`` names), ``cfg`` an ``EncoderConfig`` as a dict, ``fits``
    {'softmax' | '2quad': PowerLaw} for the freeDiv normalisers."""
    T, d, H = ops.n_rows(onehot), cfg["d_model"], cfg["n_heads"]
    dh = d // H
    x = ops.matmul(onehot, p["tok.weight"]) + p["pos.weight"][:T] + p["typ.weight"][0]
    h = layer_norm(x, p["ln0.weight"], p["ln0.bias"], ops)
    for i in range(cfg["n_layers"]):
        pre = f"layers.{i}."
        q, k, v = (ops.heads(linear(h, p, pre + w, ops), H, dh) for w in "qkv")  # (H, T, dh)
        qk = ops.matmul(q, ops.t(k))
        # Scaling reads QK^T itself (paper eq. 10), the others QK^T/sqrt(d): as ``encoder.block``
        scores = qk if cfg["attention"] in UNSCALED else qk * (1.0 / math.sqrt(dh))
        probs = normalise(scores, cfg["attention"], ops, fits)
        ctx = linear(ops.merge(ops.matmul(probs, v), d), p, pre + "o", ops)
        h = layer_norm(h + ctx, p[pre + "ln1.weight"], p[pre + "ln1.bias"], ops)
        f = linear(activation(cfg["activation"], linear(h, p, pre + "f1", ops), ops), p, pre + "f2", ops)
        h = layer_norm(h + f, p[pre + "ln2.weight"], p[pre + "ln2.bias"], ops)
    pooled = ops.colmean(h)  # (1, d): every token is real, so the mean over T
    return linear(pooled, p, "head", ops)


def fits_from(const: dict | None) -> dict | None:
    """{'softmax': (a, b), '2quad': (a, b)} -> PowerLaw objects (the teacher's fitted constants)."""
    return None if const is None else {k: PowerLaw(*map(float, v)) for k, v in const.items()}
