"""The paper's attention normalisers and GeLU stand-ins: ONE formula each, for torch and CrypTen.

Every function below only calls methods that ``torch.Tensor`` and CrypTen's ``MPCTensor`` share
(``+ - *``, ``square``, ``exp``, ``relu``, ``max(dim, keepdim=True)[0]``, ``sum``, ``reciprocal``),
so the plaintext model and every secure back-end run the very same expression and cannot drift.

Row-wise over keys, ``x = QK^T/sqrt(d)`` (for Scaling ``x = QK^T``: the paper's eq. 10 is
ScaleAttn = (1/n) QK^T V, without 1/sqrt(d); ``UNSCALED``, and the encoder passes it so),
``mask01`` the public 0/1 key mask, ``n`` the number of unmasked keys (public: freeDiv needs it in
the clear, paper Sec. 4.1):

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

import torch

from privtrans.shared.activations import activation as shared_activation

# the kinds, labels, freeDiv parents, c, the 2ReLU epsilon and the paper's constants are defined once,
# in the torch-free module that SPU's environment also imports, and used here under the same names
from .normalisers import ATTENTIONS, FREEDIV, PAPER_FITS, QUAD_C, RELU_EPS, UNSCALED  # noqa: F401
from .normalisers import LABELS as _ATTENTION_LABELS

ACTIVATIONS = ("gelu", "relu", "quad")
LABELS = {**_ATTENTION_LABELS, "gelu": "GeLU", "relu": "ReLU", "quad": "Quad"}

MASK_SHIFT = -30.0    # added to masked scores before the max (CrypTen's exp is valid down to ~-511)
EXP_FLOOR = -511.0    # below this CrypTen's exp (1 + x/256)^256 is garbage (notes A.1)
RECIP_MAX = 128.0     # above this CrypTen's Newton reciprocal is garbage (notes A.1)


def check_attention(kind: str) -> str:
    if kind not in ATTENTIONS:
        raise ValueError(f"unknown attention {kind!r}: allowed values are {', '.join(ATTENTIONS)}")
    return kind


def check_activation(kind: str) -> str:
    if kind not in ACTIVATIONS:
        raise ValueError(f"unknown activation {kind!r}: allowed values are {', '.join(ACTIVATIONS)}")
    return kind


def is_secure(t) -> bool:
    return hasattr(t, "get_plain_text")


def _reciprocal_pos(s):
    """1/s for s > 0: CrypTen skips its sign comparison when told the input is positive."""
    if is_secure(s):
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
    n = torch.as_tensor(n, dtype=torch.float32)
    a, b = (torch.as_tensor(v, dtype=torch.float32, device=n.device) for v in const)
    if a.dim() == 1:
        a, b = a.view(-1, 1, 1), b.view(-1, 1, 1)
    return a * n ** b


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


def relu_eps_entries(scores: torch.Tensor, mask01: torch.Tensor) -> dict:
    """Per entry, how far 2ReLU's stabiliser moves the weights (plaintext).

    ``normalise("2relu")`` is relu(x) / (sum relu(x) + RELU_EPS n) (the ``+ RELU_EPS`` on the row sum
    scaled by 1/n); the exact 2ReLU is relu(x) / sum relu(x). Over the unmasked entries whose exact
    weight is positive, returns {"abs": |w_eps - w_exact|, "rel": that over w_exact, "n": the row's
    key count} (1-d tensors) and the counts of rows with and without a positive ReLU sum (a row
    without has no exact weights: the stabilised one gives zeros)."""
    mask01 = torch.broadcast_to(mask01.to(scores.dtype), scores.shape)
    r = scores.relu() * mask01
    total = r.sum(-1, keepdim=True)
    exact = torch.where(total > 0, r / total.clamp_min(torch.finfo(scores.dtype).tiny), torch.zeros_like(r))
    stab = normalise("2relu", scores, mask01)
    keep = (exact > 0) & (mask01 > 0)
    n = key_count(mask01).expand_as(scores)
    rows = mask01.amax(-1) > 0  # rows with at least one key
    return {"abs": (stab - exact).abs()[keep], "rel": ((exact - stab) / exact)[keep], "n": n[keep],
            "rows": int(rows.sum()), "rows_without_positive": int((rows & (total.squeeze(-1) <= 0)).sum())}


def relu_eps_change(parts: list[dict]) -> dict:
    """Summary of ``relu_eps_entries`` over many score tensors: the largest and median absolute and
    relative change of the 2ReLU weights against the exact relu(x)/sum relu(x), over all entries
    and at the largest key count present ("at_n_max")."""
    import numpy as np

    cat = {k: torch.cat([p[k].flatten().double() for p in parts]).numpy() for k in ("abs", "rel", "n")}

    def summary(sel):
        a, r = cat["abs"][sel], cat["rel"][sel]
        if a.size == 0:
            return {"max_abs": None, "median_abs": None, "max_rel": None, "median_rel": None, "entries": 0}
        return {"max_abs": float(a.max()), "median_abs": float(np.median(a)), "max_rel": float(r.max()),
                "median_rel": float(np.median(r)), "entries": int(a.size)}

    out = summary(np.ones_like(cat["abs"], dtype=bool))
    n_max = int(cat["n"].max()) if cat["n"].size else None
    out["n_max"] = n_max
    out["at_n_max"] = summary(cat["n"] == n_max) if n_max is not None else summary(cat["n"] < 0)
    out["rows"] = sum(p["rows"] for p in parts)
    out["rows_without_positive"] = sum(p["rows_without_positive"] for p in parts)
    out["eps"] = RELU_EPS
    return out


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
