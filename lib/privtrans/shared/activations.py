"""The MPC-friendly activations, written once for every back-end: torch, CrypTen, and JAX (SPU).

Each formula calls only ``square``, ``tanh`` and ``relu`` through an ``ops`` object and otherwise
``+`` and ``*`` by public constants. ``Methods`` (the default) calls them as tensor methods, which
``torch.Tensor`` and CrypTen's ``MPCTensor`` share; SPU's JAX front end passes an object with the
same three functions (the MPC-attention chapter's ``ops.JaxOps``). No torch import, so SPU's own
environment can import it.

- GeLU, tanh form: x (1 + tanh(√(2/π) (x + 0.044715 x³))) / 2 (the MPC-attention paper's eq. 5
  prints 0.047715; 0.044715 is Hendrycks and Gimpel's constant and the one every code base uses);
- ReLU;
- Quad: 0.125 x² + 0.25 x + 0.5, MPCFormer's stand-in for GeLU (its training code), which MERGE
  and the MPC-attention paper reuse.
"""

from __future__ import annotations

import math

KINDS = ("gelu", "relu", "quad")
GELU_K = 0.044715
#: added to a ReLU attention's row sum, relu(x) / (sum relu(x) + eps), so that an all-negative row
#: cannot divide by zero and CrypTen's Newton reciprocal stays in its range (MPCFormer's 1e-12 is
#: below CrypTen's 2^-16 step). MERGE adds it to the raw sum (``models.plain_gpt``, ``mpc.layers``:
#: sf2relu, thex); the MPC-attention chapter to the sum scaled by 1/n (its ``normalisers``).
RELU_ATTENTION_EPS = 1e-2
#: added to the scores of masked keys before a softmax, in every back-end: finite, never -1e4.
#: CrypTen's exp is the limit approximation (1 + x/2^8)^(2^8), wrong for x < -256 and unbounded
#: below about -511 (a -1e4 mask gives errors ~1e8); after max-subtraction exp(-30) is below the
#: 2^-16 fixed-point step anyway. MERGE's models add it (``models.plain_gpt``, ``mpc.layers``); the
#: MPC-attention chapter also multiplies the exp by the 0/1 mask (its ``normalisers``).
MASK_VALUE = -30.0


class Methods:
    """The three primitives as tensor methods (torch and CrypTen)."""

    @staticmethod
    def square(x):
        return x.square()

    @staticmethod
    def tanh(x):
        return x.tanh()

    @staticmethod
    def relu(x):
        return x.relu()


def activation(kind: str, x, ops=Methods):
    """``kind`` (``KINDS``) applied to ``x``."""
    if kind == "quad":
        return ops.square(x) * 0.125 + x * 0.25 + 0.5
    if kind == "relu":
        return ops.relu(x)
    if kind == "gelu":
        return x * (ops.tanh((x + ops.square(x) * x * GELU_K) * math.sqrt(2.0 / math.pi)) + 1.0) * 0.5
    raise ValueError(f"unknown activation {kind!r}: allowed values are {', '.join(KINDS)}")
