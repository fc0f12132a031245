"""Our values beside the authors' own (their released CSV or the paper's table), matched on the
settings both ran: ratios per setting and the largest log-ratio; None where no setting overlaps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .repetitions import mean_over


def _authors_ratios(cmp: pd.DataFrame, keys: Sequence[str], digits: int | None = None) -> dict | None:
    """{"N=.. eps=..": ours / authors} of a ``reference.matched`` frame; None when nothing overlaps."""
    if cmp.empty:
        return None
    out = {}
    for _, r in cmp.iterrows():
        out[_label(r, keys)] = round(float(r["ratio"]), digits) if digits is not None else float(r["ratio"])
    return out


def _label(r, keys) -> str:
    names = {"eps": "ε", "delta": "δ"}
    return " ".join(f"{names.get(k, k)}={r[k]:g}" for k in keys)


def _against(cmp: pd.DataFrame, x: dict, keys=("N", "eps")) -> dict | None:
    """Per setting of a ``reference.matched`` frame: the interval of our mean over the reference
    value (``mean_over``), {"N=.. ε=..": interval}; None when nothing overlaps."""
    if cmp.empty:
        return None
    return {_label(r, keys): mean_over(x[tuple(r[k] for k in keys)], float(r["authors"])) for _, r in cmp.iterrows()}


def _max_abs_log(cmp: pd.DataFrame, log=np.log) -> float | None:
    return float(np.max(np.abs(log(cmp["ratio"].to_numpy())))) if len(cmp) else None
