"""What each dp_icl notebook records: its experiment's output in, the dict of recorded values out.

One function per notebook that records, named after its experiment; the notebook ends with
``nb.record(**readouts.<experiment>(...))``. Every value that a claim in ``data/dp_icl/claims.yaml``
reads comes from here, and so does every comparison and threshold behind it.

Each readout is given the grid its notebook ran (the N, epsilon, T, ... of its profile). A cell of
that grid without a finite, positive mean is a broken experiment, not a smaller one: a ValueError
names the cell, so the notebook stops and its claims are not judged. A value the grid cannot define
(a trend over a single N, a comparison with the authors where no setting overlaps) is None, never 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from privtrans.book.paired import paired_difference
from privtrans.book.readouts import mean

from . import accounting, reference
from .experiments import (DP_RIDGE, DPSGD_ADD_REMOVE, DPSGD_REPLACE_ONE, GD, ROBUSTNESS, accountant_gain,
                          dpsgd_ratios, noisyhead)

#: Figure 1's power laws are fitted only from this epsilon up: below it the iterate sits on the
#: Pi_R ball, whose radius grows with N, so the curve bends and no single slope describes it
SLOPE_EPS_MIN = 0.4
#: a least-squares slope through two points fits anything: ask for three
MIN_FIT_POINTS = 3


# ------------------------------------------------------------------------------------ helpers
def _key(x: float) -> str:
    return f"{x:g}"


def _table(frame: pd.DataFrame, index: str, columns: str | None, index_values, column_values=None,
           what: str = "the summary", value: str = "mean") -> pd.DataFrame:
    """``frame[value]`` as an index x columns table holding exactly the expected cells, sorted
    (``columns=None``: a one-column table). A missing, non-finite or non-positive cell raises, since
    every readout divides by these values or takes their logs; cells beyond the grid are ignored."""
    keys = [index] + ([columns] if columns else [])
    absent = [k for k in keys + [value] if k not in frame.columns]
    if absent:
        raise ValueError(f"{what} lacks the column(s) {absent} (has {list(frame.columns)})")
    if not len(index_values) or (columns and not len(column_values)):
        raise ValueError(f"{what}: the expected grid is empty")
    if frame.duplicated(keys).any():
        raise ValueError(f"{what}: several rows per {keys} (a method or quantity left unselected?)")
    if columns:
        tab = frame.pivot(index=index, columns=columns, values=value).reindex(columns=sorted(column_values))
    else:
        tab = frame.set_index(index)[[value]]
    tab = tab.reindex(index=sorted(index_values))
    bad = [(i, c) for i in tab.index for c in tab.columns if not (np.isfinite(tab.loc[i, c]) and tab.loc[i, c] > 0)]
    if bad:
        cells = ", ".join(f"{index}={i:g}" + (f" {columns}={c:g}" if columns else "") for i, c in bad)
        raise ValueError(f"{what}: no finite positive {value} at {cells}")
    return tab


def _series(frame: pd.DataFrame, index: str, index_values, what: str, value: str = "mean") -> pd.Series:
    """One value per expected ``index`` value, sorted (see ``_table``)."""
    return _table(frame, index, None, index_values, what=what, value=value)[value]


def _rows(summary: pd.DataFrame, method: str) -> pd.DataFrame:
    if "method" not in summary.columns:
        raise ValueError(f"the summary has no 'method' column (has {list(summary.columns)})")
    return summary[summary["method"] == method]


def _wide_means(summary: pd.DataFrame, methods, Ns, eps) -> pd.DataFrame:
    """Each method's mean at every expected (N, eps), one column per method (index: N, eps)."""
    return pd.DataFrame({m: _table(_rows(summary, m), "N", "eps", Ns, eps, m).stack() for m in methods})


def frac_decreasing(values) -> float | None:
    """Fraction of consecutive pairs that decrease (1.0 = monotone decreasing); None below two values."""
    v = np.asarray(values, float)
    return float(np.mean(np.diff(v) < 0)) if len(v) > 1 else None


def loglog_slope(x, y) -> float | None:
    """Least-squares slope of log y on log x; None below ``MIN_FIT_POINTS`` points."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < MIN_FIT_POINTS:
        return None
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def _trends(dp: pd.DataFrame) -> dict:
    """How an N x eps table of excess risks moves: last-over-first N per eps, and orderings."""
    Ns, eps = list(dp.index), list(dp.columns)
    fall = {_key(e): float(dp.loc[Ns[-1], e] / dp.loc[Ns[0], e]) for e in eps} if len(Ns) > 1 else None
    return {
        "fall_ratio": fall,                                      # excess(N_max) / excess(N_min) per eps
        "all_fall": all(r < 1 for r in fall.values()) if fall else None,
        "frac_decreasing_in_n": mean(frac_decreasing(dp[e]) for e in eps),
        # adjacent eps pairs (per N) where the excess falls as eps grows
        "frac_ordered_by_eps": mean(frac_decreasing(dp.loc[N, eps]) for N in Ns),
    }


CONFIDENCE = 0.95


def _se_table(frame: pd.DataFrame, index: str, columns: str, index_values, column_values) -> tuple:
    """Standard errors and repetition counts as index x columns tables (NaN where a cell has one run)."""
    return tuple(frame.pivot(index=index, columns=columns, values=v).reindex(
        index=sorted(index_values), columns=sorted(column_values)) for v in ("se", "n"))


def difference(a_mean: float, a_se: float, a_n, b_mean: float, b_se: float, b_n) -> dict:
    """a − b of two means of independent repetitions, with its 95 % interval from the two standard
    errors (t quantile at the smaller count less one: conservative), as a paired interval dict
    (mean, lo, hi, n, confidence) that the claims engine judges. Where the runs behind a and b
    share data (common random numbers) the interval is wider than a paired one would be, never
    narrower. Fewer than two repetitions on either side: no interval (lo = hi = None)."""
    d = float(a_mean - b_mean)
    n = int(min(a_n, b_n)) if np.isfinite(a_n) and np.isfinite(b_n) else 0
    se = float(np.hypot(a_se, b_se))
    if n < 2 or not np.isfinite(se):
        return {"mean": d, "lo": None, "hi": None, "n": n, "confidence": CONFIDENCE}
    h = float(stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1)) * se
    return {"mean": d, "lo": d - h, "hi": d + h, "n": n, "confidence": CONFIDENCE}


def _change(cell: dict) -> str:
    if cell["lo"] is None:
        return "unresolved"
    return "fall" if cell["lo"] > 0 else "rise" if cell["hi"] < 0 else "unresolved"


def consecutive_changes(summary: pd.DataFrame, Ns, eps) -> dict:
    """Each step from one N to the next, per eps: the fall of the mean excess risk (excess at the
    smaller N minus at the larger, positive = a fall) and its 95 % interval (``difference``; the
    repetitions at different N are independent draws). A step is a fall or a rise only when its
    interval excludes zero, otherwise it is unresolved. ``consecutive_fall_cells`` holds the
    intervals, by step, for the claims engine."""
    mean = _table(summary, "N", "eps", Ns, eps, "NoisyHead", value="mean")
    se, n = _se_table(summary, "N", "eps", Ns, eps)
    cells, steps = {}, []
    for e in mean.columns:
        for a, b in zip(mean.index[:-1], mean.index[1:]):
            c = difference(mean.loc[a, e], se.loc[a, e], n.loc[a, e], mean.loc[b, e], se.loc[b, e], n.loc[b, e])
            cells[f"ε={e:g} N {a}→{b}"] = c
            steps.append({"eps": float(e), "from_N": int(a), "to_N": int(b), "fall": c["mean"], "lo": c["lo"],
                          "hi": c["hi"], "change": _change(c)})
    count = lambda k: sum(s["change"] == k for s in steps)  # noqa: E731
    return {"consecutive_steps": steps, "consecutive_pairs": len(steps), "consecutive_falls": count("fall"),
            "consecutive_rises": count("rise"), "consecutive_unresolved": count("unresolved"),
            "consecutive_rise_at": [f"ε={s['eps']:g}: N {s['from_N']}→{s['to_N']}" for s in steps
                                    if s["change"] == "rise"],
            "consecutive_fall_cells": cells or None}


def end_to_end(summary: pd.DataFrame, Ns, eps, what: str) -> dict:
    """The fall of the mean excess risk from the smallest to the largest N at every eps
    (``{"ε=..": cell}``) and from the smallest to the largest eps at every N (``{"N=..": cell}``),
    each a ``difference`` (positive = a fall)."""
    mean = _table(summary, "N", "eps", Ns, eps, what, value="mean")
    se, n = _se_table(summary, "N", "eps", Ns, eps)
    Ns, eps = list(mean.index), list(mean.columns)

    def cell(a, b):   # (N, eps) of the larger risk expected, then of the smaller
        return difference(mean.loc[a], se.loc[a], n.loc[a], mean.loc[b], se.loc[b], n.loc[b])

    return {"in_n": ({f"ε={e:g}": cell((Ns[0], e), (Ns[-1], e)) for e in eps} if len(Ns) > 1 else None),
            "in_eps": ({f"N={N}": cell((N, eps[0]), (N, eps[-1])) for N in Ns} if len(eps) > 1 else None),
            "eps_steps": ({f"N={N} ε {a:g}→{b:g}": cell((N, a), (N, b))
                           for N in Ns for a, b in zip(eps[:-1], eps[1:])}
                          if len(eps) > 1 else None)}


def _authors_ratios(cmp: pd.DataFrame, keys: Sequence[str], digits: int | None = None) -> dict | None:
    """{"N=.. eps=..": ours / authors} of a ``reference.matched`` frame; None when nothing overlaps."""
    if cmp.empty:
        return None
    names = {"eps": "ε", "delta": "δ"}
    out = {}
    for _, r in cmp.iterrows():
        label = " ".join(f"{names.get(k, k)}={r[k]:g}" for k in keys)
        out[label] = round(float(r["ratio"]), digits) if digits is not None else float(r["ratio"])
    return out


def _max_abs_log(cmp: pd.DataFrame, log=np.log) -> float | None:
    return float(np.max(np.abs(log(cmp["ratio"].to_numpy())))) if len(cmp) else None


def _u_shape(cost: pd.Series, argmin_key: str) -> dict:
    """Where a cost indexed by T is smallest (under ``argmin_key``), whether that is inside the grid,
    and how far the cost climbs on either side of it."""
    t_min = cost.idxmin()
    low = float(cost.min())
    return {
        argmin_key: int(t_min),
        # fewer than three horizons cannot show an interior minimum, nor rule one out
        "interior_minimum": bool(cost.index[0] < t_min < cost.index[-1]) if len(cost) >= 3 else None,
        "rise_after_min": float(cost.iloc[-1]) / low,       # cost at the largest T over the minimum
        "drop_before_min": float(cost.iloc[0]) / low,       # cost at the smallest T over the minimum
    }


def u_shape_cells(frame: pd.DataFrame, Ts, what: str) -> dict | None:
    """Whether a cost indexed by T falls and then rises, as two intervals (``difference``): the cost
    at the smallest T minus at T*, and at the largest T minus at T*, where T* is the interior T
    (neither end) with the smallest mean. Both are positive for a U; a cost that only falls makes
    the second negative, one that only rises the first. None below three horizons."""
    mean = _series(frame, "T", Ts, what)
    if len(mean) < 3:
        return None
    ind = frame.set_index("T")
    t_star = mean.iloc[1:-1].idxmin()
    first, last = mean.index[0], mean.index[-1]

    def cell(t):
        return difference(mean[t], ind.loc[t, "se"], ind.loc[t, "n"], mean[t_star], ind.loc[t_star, "se"],
                          ind.loc[t_star, "n"])

    return {"t_star": int(t_star), "cells": {f"falls from T={first} to T*={t_star}": cell(first),
                                             f"rises from T*={t_star} to T={last}": cell(last)}}


# ------------------------------------------------------------------------------------ Figure 1
def fig1_low_dim(summary: pd.DataFrame, authors: pd.DataFrame, Ns, eps) -> dict:
    """``summary``: ``summarise(low_dim_grid(...), ["method", "N", "eps"], "excess")``;
    ``authors``: ``reference.paper_values("fig1")``."""
    nh = _rows(summary, noisyhead())
    dp = _table(nh, "N", "eps", Ns, eps, "NoisyHead (basic)")
    gd = _series(_rows(summary, GD), "N", Ns, "non-private GD")
    Ns, eps = list(dp.index), list(dp.columns)
    steep = [e for e in eps if e >= SLOPE_EPS_MIN]
    cmp = reference.matched(nh, authors, ["N", "eps"], "dp_excess")
    t = _trends(dp)
    ends = end_to_end(nh, Ns, eps, "NoisyHead (basic)")
    return {
        # intervals the claims judge: the fall from the smallest to the largest N per eps, and the
        # rise at every step to the next smaller eps per N (positive = the paper's direction)
        "fall_first_to_last_n": ends["in_n"],
        "rise_as_eps_falls": ends["eps_steps"],
        "fall_ratio": t["fall_ratio"],
        "all_fall_with_n": t["all_fall"],
        "frac_consecutive_decreasing": t["frac_decreasing_in_n"],
        "frac_ordered_by_eps": t["frac_ordered_by_eps"],
        "slope_in_n": ({_key(e): loglog_slope(Ns, dp[e]) for e in steep}
                       if steep and len(Ns) >= MIN_FIT_POINTS else None),
        "slope_in_eps": ({str(N): loglog_slope(steep, dp.loc[N, steep]) for N in Ns}
                         if len(steep) >= MIN_FIT_POINTS else None),
        "median_ratio_to_authors": float(np.median(cmp["ratio"])) if len(cmp) else None,
        "max_abs_log_ratio_to_authors": _max_abs_log(cmp),
        "gd_floor": float(gd.mean()),
        "excess_at_min_eps": {str(N): float(dp.loc[N, eps[0]]) for N in Ns},
        **consecutive_changes(nh, Ns, eps),
    }


# ------------------------------------------------------------------------------------ Figure 2
def fig2_high_dim(summary: pd.DataFrame, authors: pd.DataFrame, Ns, eps, delta: float) -> dict:
    """Judged at one ``delta`` (the paper's); ``summary``: ``summarise(high_dim_grid(...),
    ["method", "delta", "N", "eps"], "excess")``; ``authors``: ``reference.paper_values("fig2")``."""
    nh = _rows(summary, noisyhead())
    dp = _table(nh[nh["delta"] == delta], "N", "eps", Ns, eps, f"NoisyHead at δ = {delta:g}")
    gd = _series(_rows(summary, GD), "N", Ns, "non-private GD")
    eps = list(dp.columns)
    t = _trends(dp)
    keys = ["N", "delta", "eps"]
    ends = end_to_end(nh[nh["delta"] == delta], Ns, eps, f"NoisyHead at δ = {delta:g}")
    return {
        "delta_judged": float(delta),
        # the fall from the smallest to the largest N at every eps, and from the smallest to the
        # largest eps at every N (intervals; positive = a fall)
        "falls_with_n_and_eps": ({"with N": ends["in_n"], "with ε": ends["in_eps"]}
                                 if ends["in_n"] and ends["in_eps"] else None),
        "frac_consecutive_decreasing_in_n": t["frac_decreasing_in_n"],
        "fall_ratio": t["fall_ratio"],
        "frac_ordered_by_eps": t["frac_ordered_by_eps"],
        "dp_over_gd_at_max_eps": float((dp[eps[-1]] / gd).max()),   # ~1: the largest eps collapses onto GD
        "dp_over_gd_at_min_eps": float((dp[eps[0]] / gd).min()),    # > 1: privacy shows only at small eps
        "ratio_to_authors": _authors_ratios(reference.matched(nh, authors, keys, "dp_excess"), keys),
    }


# ------------------------------------------------------------------------------------ Figure 3
def fig3_early_stopping(descent: pd.DataFrame, privacy: pd.DataFrame, Ts) -> dict:
    """``descent``/``privacy``: ``summarise(early_stopping(...), ["T"], "descent"/"privacy")``."""
    d = _series(descent, "T", Ts, "cost of descent")
    p = _series(privacy, "T", Ts, "cost of privacy")
    u = u_shape_cells(privacy, Ts, "cost of privacy")
    return {**_u_shape(p, "t_argmin_privacy"), "descent_frac_decreasing": frac_decreasing(d),
            "min_privacy_cost": float(p.min()),
            # intervals the claim judges: the privacy cost falls to an interior T* and rises after it
            "privacy_u_shape": u["cells"] if u else None, "t_star_privacy": u["t_star"] if u else None}


# ------------------------------------------------------------------------------------ Figure 4
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


def _paired(a: pd.Series, b: pd.Series) -> dict:
    """The paired interval of a − b over the repetitions both have (``paired_difference``)."""
    reps = sorted(set(a.index) & set(b.index))
    return paired_difference(list(a[reps]), list(b[reps])).as_dict()


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
    return {
        "ridge_minus_dp": {f"c={c:g} p={p:g}": _paired(at[c, p]["ridge"], at[c, p]["dp"]) for c, p in at},
        "ridge_growth_paired": ({f"c={c:g}": _paired(at[c, ps[-1]]["ridge"], at[c, ps[0]]["ridge"]) for c in sorted(cs)}
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
    per = {f"{a:g}": _paired(w[a].ridge, w[a].dp_crn) for a in alphas}

    def growth(lo, hi):
        return _paired(w[hi].ridge, w[lo].ridge)

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


# ------------------------------------------------------------------------------------ Figure 5
def fig5_dp_sgd(summary: pd.DataFrame, spent: pd.DataFrame, Ns, eps, accountant: str) -> dict:
    """``summary``: ``summarise(low_dim_grid(..., dpsgd=dpsgd_variants(...)), ["method", "N", "eps"],
    "excess")``; ``spent``: ``dpsgd_spent(...)``; ``accountant``: the tight one NoisyHead also uses."""
    methods = [noisyhead(), noisyhead(accountant), DPSGD_ADD_REMOVE, DPSGD_REPLACE_ONE]
    means = _wide_means(summary, methods, Ns, eps)
    ratios = dpsgd_ratios(means, accountant)
    over = [_table(_rows(spent, v), "N", "eps", Ns, eps, f"ε spent by {v}", value="eps_spent")
            / np.asarray(sorted(eps), float) for v in (DPSGD_ADD_REMOVE, DPSGD_REPLACE_ONE)]
    Ns = sorted(Ns)
    return {
        "median_ratio_noisyhead_over_dpsgd_replace_one": float(ratios["NoisyHead / DP-SGD (replace-one)"].median()),
        "min_ratio_noisyhead_over_dpsgd_replace_one": float(ratios["NoisyHead / DP-SGD (replace-one)"].min()),
        "median_ratio_noisyhead_over_dpsgd_add_remove": float(ratios["NoisyHead / DP-SGD (add/remove)"].median()),
        "median_ratio_tight_noisyhead_over_dpsgd": float(ratios["tight NoisyHead / DP-SGD (replace-one)"].median()),
        "dpsgd_eps_spent_max_over_target": float(max(o.to_numpy().max() for o in over)),
        "all_methods_fall_with_n": (bool((means.xs(Ns[-1], level="N") < means.xs(Ns[0], level="N")).to_numpy().all())
                                    if len(Ns) > 1 else None),
    }


ON_PAR = 1.5  # "on par": the paired 95 % interval of the excess-risk ratio lies inside [1/1.5, 1.5]


def _equivalence(runs: pd.DataFrame, method: str, corner: str, Ns, eps, lim: float) -> dict:
    """``method`` against one DP-SGD ``corner`` per (N, eps), on the repetitions' paired log excess
    risks: the paired interval of log(DP-SGD) − log(method) (``paired_difference``) and its two
    one-sided cells of an equivalence test with margin -lim: "at most e^lim times DP-SGD" is that
    interval, "at least e^-lim times DP-SGD" is its negation; on par in a cell when both clear -lim,
    not on par when either lies at or below it, unresolved otherwise."""
    cells, verdicts, ratios = {}, [], []
    for N in Ns:
        for e in eps:
            sel = runs[(runs.N == N) & (runs.eps == e)]
            a = sel[sel.method == method].set_index("rep")["excess"]
            b = sel[sel.method == corner].set_index("rep")["excess"]
            if a.empty or b.empty:
                raise ValueError(f"Figure 5 has no {method if a.empty else corner!r} runs at N = {N}, ε = {e}")
            reps = sorted(set(a.index) & set(b.index))
            p = paired_difference(list(np.log(b[reps])), list(np.log(a[reps]))).as_dict()
            flip = {"mean": -p["mean"], "lo": None if p["hi"] is None else -p["hi"],
                    "hi": None if p["lo"] is None else -p["lo"], "n": p["n"], "confidence": p["confidence"]}
            keep = {k: p[k] for k in ("mean", "lo", "hi", "n", "confidence")}
            x = f"{np.exp(lim):g}"
            cells[f"N={N} ε={e:g}"] = {f"at most {x}× DP-SGD": keep, f"at least 1/{x} of DP-SGD": flip}
            # inside the margin: on par; wholly outside it: not; straddling it: unresolved (None)
            verdicts.append(None if p["lo"] is None else True if -lim < p["lo"] and p["hi"] < lim
                            else False if p["hi"] <= -lim or p["lo"] >= lim else None)
            ratios.append(float(np.exp(-p["mean"])))
    return {"cells": cells, "verdicts": verdicts, "ratios": ratios}


def fig5_bracket(runs: pd.DataFrame, accountant: str, Ns, eps, margin: float = ON_PAR) -> dict:
    """NoisyHead, tightly accounted (``accountant``) and as the paper calibrates it (basic
    composition), against each corner of the DP-SGD bracket (``BRACKET``: T as steps or epochs,
    max_grad_norm sigma/2 or C), per (N, eps), on the repetitions' paired log excess risks (each
    repetition runs every method on the same data and start; ``_equivalence``). A cell is on par
    when the interval of the log ratio lies inside ±log(margin) (an equivalence test), not on par
    when it lies wholly outside, unresolved when it straddles the margin. A corner is on par when
    every cell is, not on par when one cell is not.

    The claims judge ``tight_equivalence_cells`` / ``parity_equivalence_cells`` ({corner: {cell:
    {side: interval}}}) with margin -log(margin), where the corners agree: the paper does not say
    which corner is its setting, so where some corners are not on par and others are (or are
    unresolved), the unstated setting decides (``*_not_on_par_corners`` against ``bracket_corner_count``)."""
    from .experiments import BRACKET

    absent = [c for c in ("method", "N", "eps", "rep", "excess") if c not in runs.columns]
    if absent:
        raise ValueError(f"the Figure 5 runs lack the column(s) {absent}")
    tight, lim = noisyhead(accountant), float(np.log(margin))
    short = {k: ("T epochs" if BRACKET[k]["epochs"] else "T steps") + (", clip C" if BRACKET[k]["clip"] == "C"
                                                                       else ", clip σ/2") for k in BRACKET}
    out = {"bracket_margin": margin, "bracket_corner_count": len(BRACKET)}
    for key, method in (("tight", tight), ("parity", noisyhead())):
        corners, cells = {}, {}
        for corner in BRACKET:
            q = _equivalence(runs, method, corner, Ns, eps, lim)
            v, ratios = q["verdicts"], q["ratios"]
            cells[short[corner]] = q["cells"]
            corners[corner] = {"on_par_cells": sum(c is True for c in v), "cells": len(v),
                               "not_on_par_cells": sum(c is False for c in v),
                               "on_par_all": False if False in v else None if None in v else True,
                               "median_ratio": float(np.median(ratios)), "min_ratio": float(min(ratios)),
                               "max_ratio": float(max(ratios))}
        summary = {short[k]: f"{c['on_par_cells']}/{c['cells']} cells on par, {c['not_on_par_cells']} clearly not, "
                             f"NoisyHead/DP-SGD {c['min_ratio']:.3g}–{c['max_ratio']:.3g}"
                   for k, c in corners.items()}
        out[f"{key}_equivalence_cells"] = cells
        out[f"{key}_not_on_par_corners"] = sum(c["on_par_all"] is False for c in corners.values())
        if key == "tight":
            verdicts = [c["on_par_all"] for c in corners.values()]
            out.update({"bracket": corners, "bracket_summary": summary,
                        "tight_on_par_bracket": (True if all(v is True for v in verdicts)
                                                 else False if all(v is False for v in verdicts) else None),
                        "bracket_on_par_corners": [k for k, c in corners.items() if c["on_par_all"] is True],
                        "bracket_decided": all(v is True for v in verdicts) or all(v is False for v in verdicts)})
        else:
            out.update({"parity_bracket": corners, "parity_summary": summary})
    return out


# ------------------------------------------------------------------------------------ Figure 6
def fig6_news_text(gd: pd.DataFrame, dp: pd.DataFrame, Ts, n_articles: int) -> dict:
    """``gd``/``dp``: ``summarise(text_curves(...), ["T"], "gd"/"noisyhead")``."""
    if n_articles < 1:
        raise ValueError(f"no articles were used (n_articles = {n_articles})")
    g = _series(gd, "T", Ts, "non-private GD")
    u = u_shape_cells(dp, Ts, "NoisyHead")
    return {**_u_shape(_series(dp, "T", Ts, "NoisyHead"), "t_argmin_noisyhead"),
            "gd_frac_decreasing": frac_decreasing(g), "gd_last_over_first": float(g.iloc[-1] / g.iloc[0]),
            "articles": int(n_articles),
            # intervals the claim judges: NoisyHead's excess falls to an interior T* and rises after it
            "noisyhead_u_shape": u["cells"] if u else None, "t_star_noisyhead": u["t_star"] if u else None}


# ------------------------------------------------------------------------------------ Table 1
def table1_dp_ridge(summary: pd.DataFrame, paper: pd.DataFrame, Ns, eps, delta: float | None = None) -> dict:
    """``summary``: ``summarise(low_dim_grid(..., dp_ridge=True), ["method", "N", "eps"], "excess")``;
    ``paper``: ``reference.paper_values("table1")``. Ratios to the paper at the cells both have; with
    ``delta``, both DP-ridge columns over the excess risk that DP-ridge's noise alone adds (the closed
    form ``baselines.dp_ridge_noise_excess`` at the low-dimensional constants), which no DP-ridge run
    can go below on average."""
    nh_rows, dr_rows = _rows(summary, noisyhead()), _rows(summary, DP_RIDGE)
    nh = _table(nh_rows, "N", "eps", Ns, eps, "NoisyHead (basic)")
    dr = _table(dr_rows, "N", "eps", Ns, eps, "DP-ridge")
    eps = list(dr.columns)
    cmp_nh = reference.matched(nh_rows, paper, ["N", "eps"], "noisyhead_excess")
    cmp_dr = reference.matched(dr_rows, paper, ["N", "eps"], "dp_ridge_excess")
    return {
        "min_log10_gap": float(np.log10((nh / dr).to_numpy()).min()),    # NoisyHead over DP-ridge, ours
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
    from .baselines import dp_ridge_noise_excess
    from .constants import low_dim

    def closed(N, e):
        return dp_ridge_noise_excess(low_dim(int(N)), float(e), delta)

    paper = {f"N={int(r.N)} ε={r.eps:g}": round(float(r["authors"] / closed(r.N, r.eps)), 4)
             for _, r in cmp_dr.iterrows()}
    return {"dpridge_ours_over_closed_form": {f"N={N} ε={e:g}": round(float(dr.loc[N, e] / closed(N, e)), 4)
                                              for N in dr.index for e in dr.columns},
            "dpridge_paper_over_closed_form": paper or None}


# ------------------------------------------------------------------------------------ accountants
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
