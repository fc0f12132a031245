"""Figure 4: robustness to the clipping level c and the fraction p, paired per repetition.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..experiments import ROBUSTNESS
from .repetitions import _paired, _reps, _table


def _by_rep(runs: pd.DataFrame, **where) -> pd.DataFrame:
    """The runs at one setting (``where``: column = value), one row per repetition, by rep."""
    sel = runs
    for k, v in where.items():
        sel = sel[np.isclose(sel[k].astype(float), float(v))]
    if sel.empty:
        raise ValueError("no Figure 4 runs at " + ", ".join(f"{k} = {v:g}" for k, v in where.items()))
    if sel["rep"].duplicated().any():
        raise ValueError("several Figure 4 runs per repetition at "
                         + ", ".join(f"{k} = {v:g}" for k, v in where.items()))
    return sel.set_index("rep").sort_index()


def fig4_robustness(summary: pd.DataFrame, cs, ps, runs: pd.DataFrame) -> dict:
    """``summary``: ``robustness_summary(robustness_grid(...))``, one row per (quantity, c, p);
    ``runs``: the ``robustness_grid`` frame itself (one row per repetition, c and p). Each repetition
    computes the ridge and NoisyHead on the same data and the same bad prompt, so they are paired
    per repetition: ``ridge_minus_dp`` (per (c, p)) and ``ridge_growth_paired`` (the ridge's risk at
    the largest p minus at the smallest, per c) are paired 95 % intervals over repetitions."""
    if "quantity" not in summary.columns:
        raise ValueError(f"the summary has no 'quantity' column (has {list(summary.columns)})")
    absent = [c for c in ("rep", "c", "p", "ridge", "dp") if c not in runs.columns]
    if absent:
        raise ValueError(f"the Figure 4 runs lack the column(s) {absent}")
    m = {q: _table(summary[summary["quantity"] == q], "c", "p", cs, ps, label) for q, label in ROBUSTNESS.items()}
    ps = list(m["ridge"].columns)

    def growth(q):   # risk at the largest p over risk at the smallest, per c
        return [float(m[q].loc[c, ps[-1]] / m[q].loc[c, ps[0]]) for c in m[q].index] if len(ps) > 1 else None

    g_ridge, g_direct = growth("ridge"), growth("ridge_direct")
    at = {(c, p): _by_rep(runs, c=c, p=p) for c in sorted(cs) for p in ps}
    reps = _reps(runs)
    return {
        "ridge_minus_dp": {f"c={c:g} p={p:g}": _paired(at[c, p]["ridge"], at[c, p]["dp"], reps) for c, p in at},
        "ridge_growth_paired": ({f"c={c:g}": _paired(at[c, ps[-1]]["ridge"], at[c, ps[0]]["ridge"], reps)
                                 for c in sorted(cs)}
                                if len(ps) > 1 else None),
        "dp_below_ridge_everywhere": bool((m["dp"] < m["ridge"]).to_numpy().all()),
        "dp_below_direct_ridge_everywhere": bool((m["dp"] < m["ridge_direct"]).to_numpy().all()),
        "max_dp_over_ridge": float((m["dp"] / m["ridge"]).to_numpy().max()),
        "ridge_growth_min": min(g_ridge) if g_ridge else None,
        "ridge_growth_max": max(g_ridge) if g_ridge else None,
        "ridge_direct_growth_min": min(g_direct) if g_direct else None,
        "ridge_direct_growth_max": max(g_direct) if g_direct else None,
        "dp_flat": float(m["dp"].to_numpy().max() / m["dp"].to_numpy().min()),
        "dp_crn_max": float(m["dp_crn"].to_numpy().max()),
        "ridge_mean": float(m["ridge"].to_numpy().mean()),
        "ridge_direct_mean": float(m["ridge_direct"].to_numpy().mean()),
        "dp_mean": float(m["dp"].to_numpy().mean()),
    }
