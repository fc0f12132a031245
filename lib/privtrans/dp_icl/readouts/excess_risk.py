"""Figures 1 and 2: excess risk against N and epsilon in low and high dimension, its log-log slopes,
and how it changes between consecutive grid points.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from privtrans.book.readouts import mean

from .. import reference
from ..experiments import GD, noisyhead, summarise
from .against_authors import _against, _authors_ratios, _max_abs_log
from .repetitions import CONFIDENCE, _grid_values, _rows, _series, _table, frac_decreasing, paired


#: Figure 1's power laws are fitted only from this epsilon up: below it the iterate sits on the
#: Pi_R ball, whose radius grows with N, so the curve bends and no single slope describes it
SLOPE_EPS_MIN = 0.4
#: a least-squares slope through two points fits anything: ask for three
MIN_FIT_POINTS = 3


def _key(x: float) -> str:
    return f"{x:g}"


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


def independent_difference(a: list, b: list) -> dict:
    """mean(a) − mean(b) of two independent sets of repetitions (one entry per planned repetition,
    None or NaN for one that gave no value), with its 95 % interval from the two standard errors and
    the t quantile at the smaller count less one (conservative: Welch's degrees of freedom are never
    fewer). ``planned`` is the larger planned count and ``n`` the smaller count that ran, so a lost
    repetition shows; fewer than two on either side: no interval (lo = hi = None)."""
    xs = [np.array([v for v in s if v is not None and np.isfinite(v)], float) for s in (a, b)]
    planned = max(len(a), len(b))
    n = int(min(len(x) for x in xs))
    d = float(xs[0].mean() - xs[1].mean()) if n else None
    if n < 2:
        return {"mean": d, "lo": None, "hi": None, "n": n, "planned": planned, "confidence": CONFIDENCE}
    se = math.hypot(*(float(x.std(ddof=1)) / math.sqrt(len(x)) for x in xs))
    h = float(stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1)) * se
    return {"mean": d, "lo": d - h, "hi": d + h, "n": n, "planned": planned, "confidence": CONFIDENCE}


def _change(cell: dict) -> str:
    if cell["lo"] is None:
        return "unresolved"
    return "fall" if cell["lo"] > 0 else "rise" if cell["hi"] < 0 else "unresolved"


def consecutive_changes(x: dict, Ns, eps) -> dict:
    """Each step from one N to the next, per eps: the fall of the mean excess risk (at the smaller N
    minus at the larger, positive = a fall) and its 95 % interval (``independent_difference``: every
    N draws its own repetitions). ``x``: {(N, eps): per-repetition values}. A step is a fall or a
    rise only when its interval excludes zero, otherwise it is unresolved. ``consecutive_fall_cells``
    holds the intervals, by step, for the claims engine."""
    cells, steps = {}, []
    for e in eps:
        for a, b in zip(Ns[:-1], Ns[1:]):
            c = independent_difference(x[a, e], x[b, e])
            cells[f"ε={e:g} N {a}→{b}"] = c
            steps.append({"eps": float(e), "from_N": int(a), "to_N": int(b), "fall": c["mean"], "lo": c["lo"],
                          "hi": c["hi"], "change": _change(c)})
    count = lambda k: sum(s["change"] == k for s in steps)  # noqa: E731
    return {"consecutive_steps": steps, "consecutive_pairs": len(steps), "consecutive_falls": count("fall"),
            "consecutive_rises": count("rise"), "consecutive_unresolved": count("unresolved"),
            "consecutive_rise_at": [f"ε={s['eps']:g}: N {s['from_N']}→{s['to_N']}" for s in steps
                                    if s["change"] == "rise"],
            "consecutive_fall_cells": cells or None}


def fig1_low_dim(runs: pd.DataFrame, authors: pd.DataFrame, Ns, eps) -> dict:
    """``runs``: ``low_dim_grid(...)`` (one row per repetition, method, N and eps); ``authors``:
    ``reference.paper_values("fig1")``. Every N draws its own repetitions (independent), and every
    eps of a repetition shares its data and draws (paired)."""
    summary = summarise(runs[runs["method"].isin([noisyhead(), GD])], ["method", "N", "eps"], "excess")
    nh = _rows(summary, noisyhead())
    dp = _table(nh, "N", "eps", Ns, eps, "NoisyHead (basic)")
    gd = _series(_rows(summary, GD), "N", Ns, "non-private GD")
    Ns, eps = list(dp.index), list(dp.columns)
    _, x = _grid_values(runs, noisyhead(), Ns, eps, "NoisyHead (basic)")
    steep = [e for e in eps if e >= SLOPE_EPS_MIN]
    cmp = reference.matched(nh, authors, ["N", "eps"], "dp_excess")
    t = _trends(dp)
    return {
        # intervals the claims judge: the fall from the smallest to the largest N per eps
        # (independent repetitions), and the rise at every step to the next smaller eps per N (paired)
        "fall_first_to_last_n": ({f"ε={e:g}": independent_difference(x[Ns[0], e], x[Ns[-1], e]) for e in eps}
                                 if len(Ns) > 1 else None),
        "rise_as_eps_falls": ({f"N={N} ε {a:g}→{b:g}": paired(x[N, a], x[N, b])
                               for N in Ns for a, b in zip(eps[:-1], eps[1:])} if len(eps) > 1 else None),
        # our mean over the authors' value at every setting both have
        "authors_ratio_cells": _against(cmp, x),
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
        **consecutive_changes(x, Ns, eps),
    }


def fig2_high_dim(runs: pd.DataFrame, authors: pd.DataFrame, Ns, eps, delta: float) -> dict:
    """Judged at one ``delta`` (the paper's); ``runs``: ``high_dim_grid(...)``; ``authors``:
    ``reference.paper_values("fig2")``."""
    summary = summarise(runs, ["method", "delta", "N", "eps"], "excess")
    nh = _rows(summary, noisyhead())
    what = f"NoisyHead at δ = {delta:g}"
    dp = _table(nh[np.isclose(nh["delta"].astype(float), delta)], "N", "eps", Ns, eps, what)
    gd = _series(_rows(summary, GD), "N", Ns, "non-private GD")
    Ns, eps = list(dp.index), list(dp.columns)
    _, x = _grid_values(runs, noisyhead(), Ns, eps, what, delta=delta)
    t = _trends(dp)
    keys = ["N", "delta", "eps"]
    both = len(Ns) > 1 and len(eps) > 1
    return {
        "delta_judged": float(delta),
        # the fall from the smallest to the largest N at every eps (independent repetitions) and from
        # the smallest to the largest eps at every N (paired: one repetition's eps share its draws)
        "falls_with_n_and_eps": ({"with N": {f"ε={e:g}": independent_difference(x[Ns[0], e], x[Ns[-1], e])
                                             for e in eps},
                                  "with ε": {f"N={N}": paired(x[N, eps[0]], x[N, eps[-1]]) for N in Ns}}
                                 if both else None),
        "frac_consecutive_decreasing_in_n": t["frac_decreasing_in_n"],
        "fall_ratio": t["fall_ratio"],
        "frac_ordered_by_eps": t["frac_ordered_by_eps"],
        "dp_over_gd_at_max_eps": float((dp[eps[-1]] / gd).max()),   # ~1: the largest eps collapses onto GD
        "dp_over_gd_at_min_eps": float((dp[eps[0]] / gd).min()),    # > 1: privacy shows only at small eps
        "ratio_to_authors": _authors_ratios(reference.matched(nh, authors, keys, "dp_excess"), keys),
    }
