"""The chapter's attention and activation switch for its torch code: the names, constants and
formulas of ``normalisers`` (the six normalisers, written once for torch, CrypTen and SPU) and of
``privtrans.shared.activations`` (GeLU and its stand-ins), with what only plaintext torch computes:
how far 2ReLU's stabiliser moves the weights (``relu_eps_entries``, ``relu_eps_change``).
"""

from __future__ import annotations

import torch

from privtrans.shared.activations import RELU_ATTENTION_EPS
from privtrans.shared.activations import activation as shared_activation

from .encoder_ops import ACTIVATIONS, check_activation
from .normalisers import (ATTENTIONS, EXP_FLOOR, FREEDIV, PAPER_FITS, QUAD_C, RECIP_MAX,  # noqa: F401
                          UNSCALED, check_attention, denominator, key_count, normalise, shifted_scores)
from .normalisers import LABELS as _ATTENTION_LABELS

LABELS = {**_ATTENTION_LABELS, "gelu": "GeLU", "relu": "ReLU", "quad": "Quad"}


def relu_eps_entries(scores: torch.Tensor, mask01: torch.Tensor) -> dict:
    """Per entry, how far 2ReLU's stabiliser moves the weights (plaintext).

    ``normalise("2relu")`` is relu(x) / (sum relu(x) + eps n) (``RELU_ATTENTION_EPS`` added to the
    row sum scaled by 1/n); the exact 2ReLU is relu(x) / sum relu(x). Over the unmasked entries whose exact
    weight is positive, returns {"abs": |w_eps - w_exact|, "rel": that over w_exact, "n": the row's
    key count} (1-d tensors) and the counts of rows with and without a positive ReLU sum (a row
    without has no exact weights: the stabilised one gives zeros)."""
    mask01 = torch.broadcast_to(mask01.to(scores.dtype), scores.shape)
    r = scores.relu() * mask01
    total = r.sum(-1, keepdim=True)
    exact = torch.where(total > 0, r / total.clamp_min(torch.finfo(scores.dtype).tiny), torch.zeros_like(r))
    stab = normalise("2relu", scores, mask01)
    keep = (exact > 0) & (mask01 > 0)
    n = key_count(scores, mask01).expand_as(scores)
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
    out["eps"] = RELU_ATTENTION_EPS
    return out


def activation(kind: str, x):
    """GeLU (tanh form), ReLU, or Quad = 0.125 x^2 + 0.25 x + 0.5 (MPCFormer's training code, which
    the paper reuses): ``privtrans.shared.activations``, the one formula MERGE and SPU use too."""
    check_activation(kind)
    return shared_activation(kind, x)
