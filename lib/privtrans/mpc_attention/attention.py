"""The paper's attention normalisers and GeLU stand-ins: ONE formula each, for torch and CrypTen.

Every function below only calls methods that ``torch.Tensor`` and CrypTen's ``MPCTensor`` share
(``+ - *``, ``square``, ``exp``, ``relu``, ``max(dim, keepdim=True)[0]``, ``sum``, ``reciprocal``),
so the plaintext model and every secure back-end run the very same expression and cannot drift.

Row-wise over keys, ``x = QK^T/sqrt(d)``, ``mask01`` the public 0/1 key mask, ``n`` the number of
unmasked keys (public: freeDiv needs it in the clear, paper Sec. 4.1):

=================  ===================================================  ====================
kind               formula                                              secure non-linear ops
=================  ===================================================  ====================
softmax            e^{x-max} / sum e^{x-max}                            max, exp, reciprocal
2relu              relu(x) / sum relu(x)                                comparison, reciprocal
2quad              (x+c)^2 / sum (x+c)^2, c = 5                         square, reciprocal
scaling            x / n                                                none
softmax_freediv    e^{x-max} / f_softmax(n),  f(n) = a n^b (public)     max, exp
2quad_freediv      (x+c)^2 / f_2quad(n)                                 square
=================  ===================================================  ====================

CrypTen numerics decide the public scalings (research notes §5.3, A.1); each is exact in the
ratio, so the plaintext value is unchanged:

- masked keys get ``MASK_SHIFT`` (-30) added before the max, never -1e4: CrypTen's exp is garbage
  below about -511; the exp output is then multiplied by the 0/1 mask, so masked keys give exactly 0.
- CrypTen's Newton reciprocal is correct only for inputs in about (0, 128]: 2Quad's row sum
  (about 84 n^0.72, 2 700 at n = 128) is taken of ``((x+c)/(c sqrt(n)))^2``, i.e. divided by the
  public c^2 n first; 2ReLU's row sum is divided by n.
- 1/f(128) ~ 3.7e-4 has only 24 units of 2^-16 in fixed point: 2Quad-freeDiv multiplies
  ``x + c`` by the public 1/sqrt(f) *before* squaring (the issue's "scale before squaring").
"""

from __future__ import annotations

import math

import torch

from privtrans.shared.activations import activation as shared_activation

ATTENTIONS = ("softmax", "2relu", "2quad", "scaling", "softmax_freediv", "2quad_freediv")
FREEDIV = {"softmax_freediv": "softmax", "2quad_freediv": "2quad"}  # variant -> parent
ACTIVATIONS = ("gelu", "relu", "quad")
LABELS = {"softmax": "Softmax", "2relu": "2ReLU", "2quad": "2Quad", "scaling": "Scaling",
          "softmax_freediv": "Softmax freeDiv", "2quad_freediv": "2Quad freeDiv",
          "gelu": "GeLU", "relu": "ReLU", "quad": "Quad"}

QUAD_C = 5.0          # 2Quad's shift c (MPCFormer, paper eq. 12)
MASK_SHIFT = -30.0    # added to masked scores before the max (CrypTen's exp is valid down to ~-511)
EXP_FLOOR = -511.0    # below this CrypTen's exp (1 + x/256)^256 is garbage (notes A.1)
RECIP_MAX = 128.0     # above this CrypTen's Newton reciprocal is garbage (notes A.1)
RELU_EPS = 1e-2       # 2ReLU: added to the (scaled) row sum so an all-negative row gives 0, not 1/0

#: the paper's fitted constants f(n) = a * n**b (Fig. 6 and Fig. 7, verbatim)
PAPER_CONSTANTS = {
    "softmax": (0.9923937666772096, 0.333253253864762922),
    "2quad": (84.07373758071103, 0.7174745255779887),
}


def check_attention(kind: str) -> str:
    if kind not in ATTENTIONS:
        raise ValueError(f"unknown attention {kind!r}: allowed values are {', '.join(ATTENTIONS)}")
    return kind


def check_activation(kind: str) -> str:
    if kind not in ACTIVATIONS:
        raise ValueError(f"unknown activation {kind!r}: allowed values are {', '.join(ACTIVATIONS)}")
    return kind


def _is_secure(t) -> bool:
    return hasattr(t, "get_plain_text")


def _reciprocal_pos(s):
    """1/s for s > 0: CrypTen skips its sign comparison when told the input is positive."""
    if _is_secure(s):
        from privtrans.shared.mpc import compat

        with compat.module().cfg.temp_override({"functions.reciprocal_all_pos": True}):
            return s.reciprocal()
    return s.reciprocal()


def power_law(n, const) -> torch.Tensor:
    """f(n) = a * n**b as a public float tensor broadcasting over (..., H, n_q, 1).

    ``n``: number of unmasked keys, a number or a tensor of shape (B, 1, 1, 1) / broadcastable.
    ``const``: (a, b) floats (one curve for all layers and heads, the paper) or tensors of shape
    (H,) (one per head: the extension the paper names as future work).
    """
    a, b = (torch.as_tensor(v, dtype=torch.float32) for v in const)
    if a.dim() == 1:
        a, b = a.view(-1, 1, 1), b.view(-1, 1, 1)
    return a * torch.as_tensor(n, dtype=torch.float32) ** b


def key_count(mask01: torch.Tensor) -> torch.Tensor:
    """n per query row: the number of unmasked keys (public), shape (..., n_q, 1)."""
    return mask01.sum(-1, keepdim=True)


def shifted_scores(scores, mask01):
    """x - max(x) over unmasked keys: what softmax variants feed to exp (>= MASK_SHIFT - spread)."""
    x = scores + (1.0 - mask01) * MASK_SHIFT
    return x - x.max(-1, keepdim=True)[0]


def normalise(kind: str, scores, mask01: torch.Tensor, const=None):
    """Attention weights from scores (..., n_q, n_k) under a public 0/1 key mask (broadcastable).

    ``const`` = (a, b) of f(n) for the freeDiv variants (ignored otherwise).
    """
    check_attention(kind)
    mask01 = mask01.to(torch.float32)
    n = key_count(mask01)
    if kind in ("softmax", "softmax_freediv"):
        num = shifted_scores(scores, mask01).exp() * mask01
        if kind == "softmax_freediv":
            return num * (1.0 / power_law(n, _need(const, kind)))
        return num * _reciprocal_pos(num.sum(-1, keepdim=True))
    if kind == "2quad":
        num = ((scores + QUAD_C) * (1.0 / (QUAD_C * n.sqrt()))).square() * mask01
        return num * _reciprocal_pos(num.sum(-1, keepdim=True))
    if kind == "2quad_freediv":
        return ((scores + QUAD_C) * power_law(n, _need(const, kind)).rsqrt()).square() * mask01
    if kind == "2relu":
        num = scores.relu() * mask01
        return num * _reciprocal_pos(num.sum(-1, keepdim=True) * (1.0 / n) + RELU_EPS) * (1.0 / n)
    return scores * mask01 * (1.0 / n)  # scaling


def denominator(kind: str, scores, mask01):
    """The row denominator the parent variant divides by (paper Sec. 2.3): what f(n) is fitted to.

    softmax: sum over unmasked keys of e^{x - max}; 2quad: sum of (x + c)^2. Plaintext only.
    """
    mask01 = mask01.to(scores.dtype)
    if kind == "softmax":
        return (shifted_scores(scores, mask01).exp() * mask01).sum(-1)
    if kind == "2quad":
        return ((scores + QUAD_C).square() * mask01).sum(-1)
    raise ValueError(f"denominators are fitted for 'softmax' or '2quad', got {kind!r}")


def _need(const, kind):
    if const is None:
        raise ValueError(f"{kind} needs the public constants (a, b) of f(n) = a*n**b")
    return const


def activation(kind: str, x):
    """GeLU (tanh form), ReLU, or Quad = 0.125 x^2 + 0.25 x + 0.5 (MPCFormer's training code, which
    the paper reuses): ``privtrans.shared.activations``, the one formula MERGE and SPU use too."""
    check_activation(kind)
    return shared_activation(kind, x)
