"""Table 1 and the accountants: DP ridge regression's excess risk against the paper's table, and the
epsilon each accountant spends over the closed form.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import accounting, reference
from ..experiments import DP_RIDGE, accountant_gain, noisyhead, summarise
from .against_authors import _against, _authors_ratios, _max_abs_log
from .repetitions import _grid_values, _log, _rows, _table, _wide_means, paired


def table1_dp_ridge(runs: pd.DataFrame, paper: pd.DataFrame, Ns, eps, delta: float | None = None) -> dict:
    """``runs``: ``low_dim_grid(..., dp_ridge=True)`` (NoisyHead and DP-ridge on the same data in
    every repetition); ``paper``: ``reference.paper_values("table1")``. The gap per (N, eps) as the
    paired interval of log10 NoisyHead − log10 DP-ridge over repetitions; each method's mean over
    the paper's value as an interval (``mean_over``) at the cells both have; with ``delta``, both
    DP-ridge columns over the excess risk that DP-ridge's noise alone adds (the closed form
    ``baselines.dp_ridge_noise_excess`` at the low-dimensional constants), which no DP-ridge run
    can go below on average."""
    summary = summarise(runs[runs["method"].isin([noisyhead(), DP_RIDGE])], ["method", "N", "eps"], "excess")
    nh_rows, dr_rows = _rows(summary, noisyhead()), _rows(summary, DP_RIDGE)
    nh = _table(nh_rows, "N", "eps", Ns, eps, "NoisyHead (basic)")
    dr = _table(dr_rows, "N", "eps", Ns, eps, "DP-ridge")
    Ns, eps = list(dr.index), list(dr.columns)
    _, x_nh = _grid_values(runs, noisyhead(), Ns, eps, "NoisyHead (basic)")
    _, x_dr = _grid_values(runs, DP_RIDGE, Ns, eps, "DP-ridge")
    cmp_nh = reference.matched(nh_rows, paper, ["N", "eps"], "noisyhead_excess")
    cmp_dr = reference.matched(dr_rows, paper, ["N", "eps"], "dp_ridge_excess")
    return {
        "gap_cells": {f"N={N} ε={e:g}": paired(_log(x_nh[N, e], math.log10), _log(x_dr[N, e], math.log10))
                      for N in Ns for e in eps},
        "noisyhead_vs_paper_cells": _against(cmp_nh, x_nh),
        "dpridge_vs_paper_cells": _against(cmp_dr, x_dr),
        "min_log10_gap": float(np.log10((nh / dr).to_numpy()).min()),    # NoisyHead over DP-ridge, means
        "noisyhead_ratio_to_paper": _authors_ratios(cmp_nh, ["N", "eps"], digits=4),
        "dpridge_ratio_to_paper": _authors_ratios(cmp_dr, ["N", "eps"], digits=4),
        "max_abs_log10_noisyhead_vs_paper": _max_abs_log(cmp_nh, np.log10),
        "max_abs_log10_dpridge_vs_paper": _max_abs_log(cmp_dr, np.log10),
        # DP-ridge's noise variance alone predicts (eps_hi / eps_lo)^2
        "dpridge_eps_scaling": ({str(N): round(float(dr.loc[N, eps[0]] / dr.loc[N, eps[-1]]), 3) for N in dr.index}
                                if len(eps) > 1 else None),
        **(_over_closed_form(dr, cmp_dr, delta) if delta is not None else {}),
    }


def _over_closed_form(dr: pd.DataFrame, cmp_dr: pd.DataFrame, delta: float) -> dict:
    """DP-ridge's excess over its noise term's closed form: ours at every cell, the paper's where it has one."""
    from ..baselines import dp_ridge_noise_excess
    from ..constants import low_dim

    def closed(N, e):
        return dp_ridge_noise_excess(low_dim(int(N)), float(e), delta)

    paper = {f"N={int(r.N)} ε={r.eps:g}": round(float(r["authors"] / closed(r.N, r.eps)), 4)
             for _, r in cmp_dr.iterrows()}
    return {"dpridge_ours_over_closed_form": {f"N={N} ε={e:g}": round(float(dr.loc[N, e] / closed(N, e)), 4)
                                              for N in dr.index for e in dr.columns},
            "dpridge_paper_over_closed_form": paper or None}


def accountants(eps_table: pd.DataFrame, summary: pd.DataFrame, Ns, eps, tight: str) -> dict:
    """``eps_table``: ``epsilon_table(Ns, eps, delta)`` (every accountant); ``summary``:
    ``summarise(low_dim_grid(..., accountants=...), ["method", "N", "eps"], "excess")``;
    ``tight``: the accountant whose calibration the excess-risk gain is measured against."""
    others = [a for a in accounting.ACCOUNTANTS if a != "basic"]
    cols = ["z_paper", "eps_basic", *(f"eps_{a}" for a in others), "z_prv"]
    tab = {c: _table(eps_table, "N", "eps_target", Ns, eps, "the epsilon table", value=c) for c in cols}
    target = np.asarray(sorted(eps), float)
    tightest = np.max([tab[f"eps_{a}"].to_numpy() for a in others], axis=0)
    gain = accountant_gain(_wide_means(summary, [noisyhead(), noisyhead(tight)], Ns, eps), tight)
    return {
        "basic_is_upper_bound": bool((tab["eps_basic"].to_numpy() >= tightest).all()),
        "max_eps_rdp_over_target": float((tab["eps_rdp"] / target).to_numpy().max()),
        "max_eps_prv_over_target": float((tab["eps_prv"] / target).to_numpy().max()),
        "looseness_basic_over_prv": float(np.median((tab["eps_basic"] / tab["eps_prv"]).to_numpy())),
        "prv_over_exact_max": float((tab["eps_prv"] / tab["eps_exact"]).to_numpy().max()),
        "z_paper_over_z_prv": float(np.median((tab["z_paper"] / tab["z_prv"]).to_numpy())),
        "median_excess_gain": float(np.median(gain.to_numpy())),
        "min_excess_gain": float(gain.to_numpy().min()),
    }
