"""The six attention normalisers written against a set of primitives, for SecretFlow SPU.

``privtrans.mpc_attention.attention`` is the chapter's formula for torch and CrypTen; it needs
torch, which SPU's own environment (numpy < 2, JAX 0.4.34) cannot hold. This module writes the same
six formulas, with the same public scalings, against primitives a back-end supplies (exp, ReLU,
square, row max, row sum, reciprocal): ``JaxOps`` for SPU (which compiles the JAX function to its
protocol) and ``TorchOps`` for the test that keeps it equal to ``attention.normalise`` on every
kind (tests/test_mpc_attention_normalisers.py). It imports neither torch nor JAX. No key mask: Table 1's scores
have none.

- softmax: e^{x−max} / Σ e^{x−max} (max, exp, reciprocal, multiplication);
- 2relu: ReLU(x) / Σ ReLU(x) (MPCFormer, SecureML);
- 2quad: (x + c)² / Σ (x + c)², c = 5 (MPCFormer);
- scaling: x / n with x = QKᵀ, not QKᵀ/√d (MPCViT's ScaleAttn, paper eq. 10:
  (1/n)·QKᵀ·V; ``UNSCALED``); no non-linear operation;
- softmax_freediv: e^{x−max} / f_softmax(n), eq. 11: the reciprocal replaced by a public constant;
- 2quad_freediv: (x + c)² / f_2quad(n), eq. 12: squares only.
f(n) = a·nᵇ is fitted offline (``privtrans.mpc_attention.fit``); the paper's constants are
``PAPER_FITS``. n is the number of keys (no padding in these formulas: a padded key must be
removed multiplicatively, never with an additive −1e4 mask, which CrypTen's exp cannot take).

Fixed-point care, identical in every back-end: 2ReLU and 2Quad numerators are scaled by a public
1/n (1/(c²n)) so that their row sums stay near 1, inside the range where CrypTen's Newton
reciprocal is right (it fails above about 128); the ratio is unchanged. 2Quad and 2Quad-freeDiv
scale *before* squaring (by 1/(c√n) and 1/√f(n)): a public factor as small as 1/f(128) ≈ 3.7e-4
keeps only four significant bits in CrypTen's 16-bit fixed point, its square root keeps ten.
"""

from __future__ import annotations

import math
from typing import NamedTuple

#: added to 2ReLU's (scaled) row sum so an all-negative row cannot divide by zero: MERGE's
#: ``plain_gpt.DENOM_EPS`` (a test keeps them equal; this module may not import torch)
RELU_EPS = 1e-2

ATTENTIONS = ("softmax", "2relu", "2quad", "scaling", "softmax_freediv", "2quad_freediv")
#: the normalisers whose input is QK^T itself, not QK^T/sqrt(d): the paper's ScaleAttn (eq. 10,
#: MPCViT) is (1/n)·QK^T·V. Every other kind reads QK^T/sqrt(d) (eqs. 1, 11, 12; MPCFormer's 2ReLU
#: and 2Quad). The encoders (``encoder.block``, ``encoder_ops.forward``) pass the input accordingly.
UNSCALED = ("scaling",)
LABELS = {"softmax": "Softmax", "2relu": "2ReLU", "2quad": "2Quad", "scaling": "Scaling",
          "softmax_freediv": "Softmax freeDiv", "2quad_freediv": "2Quad freeDiv"}
#: each freeDiv variant and the variant whose reciprocal it removes
FREEDIV = {"softmax_freediv": "softmax", "2quad_freediv": "2quad"}
QUAD_C = 5.0  # MPCFormer's shift in (x + c)²


class PowerLaw(NamedTuple):
    """f(n) = a·nᵇ: the public denominator of a freeDiv normaliser for n keys. A pair (a, b), so the
    torch and CrypTen code (``attention.power_law``, ``EncoderConfig.const``) take it as it is."""

    a: float
    b: float

    def __call__(self, n: int) -> float:
        if n < 1:
            raise ValueError(f"n must be a positive number of keys, got {n}")
        return self.a * n ** self.b


#: the paper's fits over all layers of BERT-Base on GLUE (Figures 6 and 7), verbatim
PAPER_FITS = {"softmax": PowerLaw(0.9923937666772096, 0.333253253864762922),
              "2quad": PowerLaw(84.07373758071103, 0.7174745255779887)}


class TorchOps:
    """Plaintext torch: exact primitives (the methods CrypTen's tensors share)."""

    @staticmethod
    def n(x):
        return x.size(-1)

    @staticmethod
    def exp(x):
        return x.exp()

    @staticmethod
    def relu(x):
        return x.relu()

    @staticmethod
    def square(x):
        return x.square()

    @staticmethod
    def rowsum(x):
        return x.sum(-1, keepdim=True)

    @staticmethod
    def rowmax(x):
        return x.amax(-1, keepdim=True)

    @staticmethod
    def reciprocal(s):
        return s.reciprocal()

    # what ``encoder_ops.forward`` adds: the rest of a whole model
    @staticmethod
    def tanh(x):
        return x.tanh()

    @staticmethod
    def rsqrt(x):
        return x.rsqrt()

    @staticmethod
    def rowmean(x):
        return x.mean(-1, keepdim=True)

    @staticmethod
    def colmean(x):
        return x.mean(-2, keepdim=True)

    @staticmethod
    def matmul(a, b):
        return a @ b

    @staticmethod
    def t(x):
        return x.transpose(-1, -2)

    @staticmethod
    def n_rows(x):
        return x.shape[-2]

    @staticmethod
    def heads(x, h: int, dh: int):
        return x.reshape(x.shape[0], h, dh).permute(1, 0, 2)

    @staticmethod
    def merge(x, d: int):
        return x.permute(1, 0, 2).reshape(x.shape[1], d)


class JaxOps:
    """jax.numpy: plaintext, or traced by SPU into its protocol's exp, max and reciprocal."""

    def __init__(self):
        import jax.numpy as jnp

        self.jnp = jnp

    @staticmethod
    def n(x):
        return x.shape[-1]

    def exp(self, x):
        return self.jnp.exp(x)

    def relu(self, x):
        return self.jnp.maximum(x, 0.0)

    @staticmethod
    def square(x):
        return x * x

    def rowsum(self, x):
        return self.jnp.sum(x, axis=-1, keepdims=True)

    def rowmax(self, x):
        return self.jnp.max(x, axis=-1, keepdims=True)

    @staticmethod
    def reciprocal(s):
        return 1.0 / s

    def tanh(self, x):
        return self.jnp.tanh(x)

    def rsqrt(self, x):
        import jax

        return jax.lax.rsqrt(x)

    def rowmean(self, x):
        return self.jnp.mean(x, axis=-1, keepdims=True)

    def colmean(self, x):
        return self.jnp.mean(x, axis=-2, keepdims=True)

    @staticmethod
    def matmul(a, b):
        return a @ b

    def t(self, x):
        return self.jnp.swapaxes(x, -1, -2)

    @staticmethod
    def n_rows(x):
        return x.shape[-2]

    def heads(self, x, h: int, dh: int):
        return self.jnp.transpose(x.reshape(x.shape[0], h, dh), (1, 0, 2))

    def merge(self, x, d: int):
        return self.jnp.transpose(x, (1, 0, 2)).reshape(x.shape[1], d)


def normalise(x, kind: str, ops, fits: dict | None = None):
    """Attention weights from scores ``x`` (..., n) by the normaliser ``kind`` (``ATTENTIONS``)."""
    fits = PAPER_FITS if fits is None else fits
    n = ops.n(x)
    if kind == "softmax":
        e = ops.exp(x - ops.rowmax(x))
        return e * ops.reciprocal(ops.rowsum(e))
    if kind == "2relu":
        num = ops.relu(x) * (1.0 / n)
        return num * ops.reciprocal(ops.rowsum(num) + RELU_EPS)
    if kind == "2quad":
        num = ops.square((x + QUAD_C) * (1.0 / (QUAD_C * math.sqrt(n))))
        return num * ops.reciprocal(ops.rowsum(num))
    if kind == "scaling":
        return x * (1.0 / n)
    if kind == "softmax_freediv":
        return ops.exp(x - ops.rowmax(x)) * (1.0 / fits["softmax"](n))
    if kind == "2quad_freediv":
        return ops.square((x + QUAD_C) * (1.0 / math.sqrt(fits["2quad"](n))))
    raise ValueError(f"kind must be one of {ATTENTIONS}, got {kind!r}")


def denominator(x, kind: str, ops=TorchOps):
    """The row sum a normaliser divides by, before any fit (Figures 5-7): Σ e^{x−max} for
    softmax, Σ (x + c)² for 2Quad."""
    if kind == "softmax":
        return ops.rowsum(ops.exp(x - ops.rowmax(x)))
    if kind == "2quad":
        return ops.rowsum(ops.square(x + QUAD_C))
    raise ValueError(f"denominators are fitted for 'softmax' and '2quad', got {kind!r}")
