"""The paper's six attention normalisers and the denominators f(n) is fitted to: ONE formula each,
for every back-end (torch, CrypTen, SecretFlow SPU), and the chapter's names and constants for them.

Every function takes the back-end's operations (``ops``: ``ops.TENSOR`` for torch tensors and
CrypTen shares, the default; ``ops.JaxOps`` for SPU), so the plaintext model, the CrypTen runs and
SPU's compiled program evaluate the same expression. The module imports neither torch nor JAX: SPU's
environment (numpy < 2, no torch) imports it.

Row-wise over keys, ``x = QK^T/sqrt(d)`` (for Scaling ``x = QK^T``: the paper's eq. 10 is
ScaleAttn = (1/n) QK^T V, without 1/sqrt(d); ``UNSCALED``, and the encoder passes it so),
``mask01`` the public 0/1 key mask (None: every key is real, as in SPU's runs), ``n`` the number
of unmasked keys (public: freeDiv needs it in the clear, paper Sec. 4.1):

=================  ===================================================  ====================
kind               formula                                              secure non-linear ops
=================  ===================================================  ====================
softmax            e^{x-max} / sum e^{x-max}                            max, exp, reciprocal
2relu              relu(x) / sum relu(x)                                comparison, reciprocal
2quad              (x+c)^2 / sum (x+c)^2, c = 5                         square, reciprocal
scaling            x / n,  x = QK^T (no 1/sqrt(d), eq. 10)             none
softmax_freediv    e^{x-max} / f_softmax(n),  f(n) = a n^b (public)     max, exp
2quad_freediv      (x+c)^2 / f_2quad(n)                                 square
=================  ===================================================  ====================

f(n) = a·nᵇ is fitted offline (``fit``); the paper's constants are ``PAPER_FITS``.

CrypTen's fixed point decides the public scalings (appendix A of the paper runs CrypTen's
approximations too); each is exact in the ratio, so the plaintext value is unchanged:

- masked keys get ``MASK_VALUE`` (-30, from ``privtrans.shared.activations``) added before the
  max, never -1e4: CrypTen's exp is garbage below about -511 (``EXP_FLOOR``); the exp output is
  then multiplied by the 0/1 mask, so masked keys give exactly 0. A padded key is removed
  multiplicatively, never by an additive mask alone.
- CrypTen's Newton reciprocal is correct only for inputs in about (0, 128] (``RECIP_MAX``): 2Quad's
  row sum (about 84 n^0.72, 2 700 at n = 128) is taken of ``((x+c)/(c sqrt(n)))^2``, i.e. divided
  by the public c^2 n first; 2ReLU's row sum is divided by n.
- 1/f(128) ~ 3.7e-4 keeps only four significant bits in CrypTen's 16-bit fixed point, its square
  root ten: 2Quad-freeDiv multiplies ``x + c`` by the public 1/sqrt(f) *before* squaring.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import NamedTuple

from privtrans.shared.activations import MASK_VALUE, RELU_ATTENTION_EPS

from .ops import TENSOR

ATTENTIONS = ("softmax", "2relu", "2quad", "scaling", "softmax_freediv", "2quad_freediv")
#: the normalisers whose input is QK^T itself, not QK^T/sqrt(d): the paper's ScaleAttn (eq. 10,
#: MPCViT) is (1/n)·QK^T·V. Every other kind reads QK^T/sqrt(d) (eqs. 1, 11, 12; MPCFormer's 2ReLU
#: and 2Quad). The encoder (``encoder_ops.block``) passes the input accordingly.
UNSCALED = ("scaling",)
LABELS = {"softmax": "Softmax", "2relu": "2ReLU", "2quad": "2Quad", "scaling": "Scaling",
          "softmax_freediv": "Softmax freeDiv", "2quad_freediv": "2Quad freeDiv"}
#: each freeDiv variant and the variant whose reciprocal it removes
FREEDIV = {"softmax_freediv": "softmax", "2quad_freediv": "2quad"}
QUAD_C = 5.0          # MPCFormer's shift in (x + c)²
EXP_FLOOR = -511.0    # below this CrypTen's exp (1 + x/256)^256 is garbage
RECIP_MAX = 128.0     # above this CrypTen's Newton reciprocal is garbage


class PowerLaw(NamedTuple):
    """f(n) = a·nᵇ: the public denominator of a freeDiv normaliser for n keys. A pair (a, b), as
    every back-end takes f(n)'s constants (``power_law``)."""

    a: float
    b: float

    def __call__(self, n: int) -> float:
        if n < 1:
            raise ValueError(f"n must be a positive number of keys, got {n}")
        return power_law(n, self)


#: the paper's fits over all layers of BERT-Base on GLUE (Figures 6 and 7), verbatim
PAPER_FITS = {"softmax": PowerLaw(0.9923937666772096, 0.333253253864762922),
              "2quad": PowerLaw(84.07373758071103, 0.7174745255779887)}


def check_attention(kind: str) -> str:
    if kind not in ATTENTIONS:
        raise ValueError(f"unknown attention {kind!r}: allowed values are {', '.join(ATTENTIONS)}")
    return kind


def power_law(n, const, ops=None):
    """f(n) = a * n**b, public: ``n`` a number of keys (a number, or a tensor (B, 1, 1, 1) of them),
    ``const`` (a, b) floats (one curve for all layers and heads, the paper) or (H,) each (one per
    head) as ``ops.constants`` reads them (numbers when ``ops`` is None)."""
    a, b = const if ops is None else ops.constants(const, n)
    return a * n ** b


def key_count(x, mask01, ops=TENSOR):
    """n per query row: the number of unmasked keys (public), a tensor (..., n_q, 1) under a mask,
    else the number of keys of ``x``."""
    return x.shape[-1] if mask01 is None else ops.rowsum(mask01)


def shifted_scores(x, mask01, ops=TENSOR):
    """x - max(x) over unmasked keys: what softmax variants feed to exp (>= MASK_VALUE - spread)."""
    if mask01 is not None:
        x = x + (1.0 - mask01) * MASK_VALUE
    return x - ops.rowmax(x)


def _masked(x, mask01):
    return x if mask01 is None else x * mask01


def _sqrt(v):
    return math.sqrt(v) if isinstance(v, Real) else v.sqrt()


def _rsqrt(v):
    return 1.0 / math.sqrt(v) if isinstance(v, Real) else v.rsqrt()


def normalise(kind: str, x, mask01=None, const=None, ops=TENSOR):
    """Attention weights from scores ``x`` (..., n_q, n_k) under a public 0/1 key mask
    (broadcastable; None: no padding). ``const`` = (a, b) of f(n) for the freeDiv variants (ignored
    otherwise)."""
    check_attention(kind)
    mask01 = None if mask01 is None else ops.mask(mask01)
    n = key_count(x, mask01, ops)
    if kind in ("softmax", "softmax_freediv"):
        num = _masked(ops.exp(shifted_scores(x, mask01, ops)), mask01)
        if kind == "softmax_freediv":
            return num * (1.0 / power_law(n, _need(const, kind), ops))
        return num * ops.reciprocal_pos(ops.rowsum(num))
    if kind == "2quad":
        num = _masked(ops.square((x + QUAD_C) * (1.0 / (QUAD_C * _sqrt(n)))), mask01)
        return num * ops.reciprocal_pos(ops.rowsum(num))
    if kind == "2quad_freediv":
        return _masked(ops.square((x + QUAD_C) * _rsqrt(power_law(n, _need(const, kind), ops))), mask01)
    if kind == "2relu":
        num = _masked(ops.relu(x), mask01)
        return num * ops.reciprocal_pos(ops.rowsum(num) * (1.0 / n) + RELU_ATTENTION_EPS) * (1.0 / n)
    return _masked(x, mask01) * (1.0 / n)  # scaling


def denominator(kind: str, x, mask01=None, ops=TENSOR):
    """The row denominator the parent variant divides by (paper Sec. 2.3): what f(n) is fitted to,
    one value per query row (the key axis summed away). softmax: the sum over unmasked keys of
    e^{x - max}; 2quad: the sum of (x + c)^2."""
    mask01 = None if mask01 is None else ops.mask(mask01)
    if kind == "softmax":
        return ops.rowsum(_masked(ops.exp(shifted_scores(x, mask01, ops)), mask01))[..., 0]
    if kind == "2quad":
        return ops.rowsum(_masked(ops.square(x + QUAD_C), mask01))[..., 0]
    raise ValueError(f"denominators are fitted for 'softmax' or '2quad', got {kind!r}")


def _need(const, kind):
    if const is None:
        raise ValueError(f"{kind} needs the public constants (a, b) of f(n) = a*n**b")
    return const
