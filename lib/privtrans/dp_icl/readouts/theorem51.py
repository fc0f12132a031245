"""Theorem 5.1 in Figure 4: the conditions of the theorem and the region of (alpha, hyper-parameters)
where it holds, ours against the paper's.
"""

from __future__ import annotations

import math

import pandas as pd

from .repetitions import _paired, _reps


#: the constants of Theorem 5.1's condition (5.2), alpha^2 mu^4 <= c_u N L lam and
#: alpha^2 mu^2 >= c_l C^2 L^(-1/2) (1 v lam N R^2 L^(-1/2)), which the theorem does not give; its
#: proof (A.6) uses them with unit constants (A.22: alpha^2 mu^4 / L <~ N lam; the last step:
#: (5.2) "implies alpha^2 mu^2 / (N lam) > R^2 C^2 / L"), so we take both as 1
THEOREM_C_UPPER = 1.0
THEOREM_C_LOWER = 1.0


#: the kappa of Theorem 4.1's constants: the authors' code (and privtrans.dp_icl.constants) sets
#: C = sqrt(2 ln(N L / kappa)) and the radii with kappa = 1
KAPPA = 1.0


def theorem51_conditions(hp, alpha: float, mu: float, kappa: float = KAPPA) -> dict:
    """Theorem 5.1's four conditions at one (hp, alpha, mu) as ratios, each met when above 1:
    lam / (C^2 / L); c_u N L lam / (alpha^2 mu^4) (the upper bound of (5.2));
    alpha^2 mu^2 / (c_l C^2 L^(-1/2) max(1, lam N R^2 L^(-1/2))) (its lower bound);
    kappa / (N e^(-D^2))."""
    lower = THEOREM_C_LOWER * hp.C**2 / math.sqrt(hp.L) * max(1.0, hp.lam * hp.N * hp.R**2 / math.sqrt(hp.L))
    out = {"lam_over_C2_per_L": hp.lam * hp.L / hp.C**2,
           "alpha2_mu4_over_NLlam": alpha**2 * mu**4 / (hp.N * hp.L * hp.lam),
           "upper_bound_slack": THEOREM_C_UPPER * hp.N * hp.L * hp.lam / (alpha**2 * mu**4),
           "lower_bound_slack": alpha**2 * mu**2 / lower,
           # kappa e^(D^2) / N, in logs (e^(D^2) overflows a float from D = 27)
           "kappa_over_N_exp_minus_D2": math.exp(min(700.0, math.log(kappa) + hp.D**2 - math.log(hp.N)))}
    out["inside"] = bool(out["lam_over_C2_per_L"] > 1 and out["upper_bound_slack"] >= 1
                         and out["lower_bound_slack"] >= 1 and out["kappa_over_N_exp_minus_D2"] > 1)
    return out


def fig4_theorem_region(df: pd.DataFrame, alphas, hp, paper_hp, paper_alpha: float, mu: float,
                        kappa: float = KAPPA) -> dict:
    """``df``: ``theorem_region_grid(...)`` (one row per repetition and alpha), run with ``hp``.
    Theorem 5.1's conditions (``theorem51_conditions``) at every alpha and at the paper's setting
    (``paper_hp``, ``paper_alpha``); per alpha, the paired difference ridge − NoisyHead (common
    random numbers) over repetitions; the ridge's growth, paired per repetition, from the smallest
    to the largest alpha; and the same restricted to the alphas where all four conditions hold
    (``_inside``: what the claims judge)."""
    absent = [c for c in ("rep", "alpha", "ridge", "dp_crn") if c not in df.columns]
    if absent:
        raise ValueError(f"the theorem-region runs lack the column(s) {absent}")
    alphas = sorted(alphas)
    w = {a: df[df.alpha == a].set_index("rep").sort_index() for a in alphas}
    for a in alphas:
        if w[a].empty:
            raise ValueError(f"no theorem-region run at alpha = {a}")
    cond = {a: theorem51_conditions(hp, a, mu, kappa) for a in alphas}
    paper = theorem51_conditions(paper_hp, paper_alpha, mu, kappa)
    inside = [a for a in alphas if cond[a]["inside"]]
    reps = _reps(df)
    per = {f"{a:g}": _paired(w[a].ridge, w[a].dp_crn, reps) for a in alphas}

    def growth(lo, hi):
        return _paired(w[hi].ridge, w[lo].ridge, reps)

    def ratio_(lo, hi):
        return float(w[hi].ridge.mean() / w[lo].ridge.mean()) if w[lo].ridge.mean() > 0 else None

    two = len(inside) >= 2
    return {
        "theorem_alphas": [float(a) for a in alphas],
        "theorem_conditions": {f"{a:g}": cond[a] for a in alphas},
        "theorem_inside_alphas": [float(a) for a in inside],
        "theorem_inside_count": len(inside),
        "theorem_ridge_minus_noisyhead": per,
        "theorem_ridge_minus_noisyhead_inside": {f"{a:g}": per[f"{a:g}"] for a in inside} or None,
        "theorem_ridge_growth": growth(alphas[0], alphas[-1]),
        "theorem_ridge_ratio": ratio_(alphas[0], alphas[-1]),
        "theorem_ridge_growth_inside": growth(inside[0], inside[-1]) if two else None,
        "theorem_ridge_ratio_inside": ratio_(inside[0], inside[-1]) if two else None,
        "theorem_lam_ratio": float(cond[alphas[-1]]["lam_over_C2_per_L"]),
        "theorem_alpha_ratio_max": float(max(c["alpha2_mu4_over_NLlam"] for c in cond.values())),
        "theorem_lower_slack_min": float(min(c["lower_bound_slack"] for c in cond.values())),
        "theorem_kappa_ratio": float(cond[alphas[-1]]["kappa_over_N_exp_minus_D2"]),
        "paper_conditions": paper,
        "paper_lam_ratio": float(paper["lam_over_C2_per_L"]),
        "paper_alpha_ratio": float(paper["alpha2_mu4_over_NLlam"]),
        "paper_lower_slack": float(paper["lower_bound_slack"]),
        "paper_kappa_ratio": float(paper["kappa_over_N_exp_minus_D2"]),
    }
