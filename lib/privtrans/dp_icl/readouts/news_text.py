"""Figure 6: the news-text setting, gradient descent's stability as T grows, and its U-shape.
"""

from __future__ import annotations

import pandas as pd

from ..experiments import summarise
from .early_stopping import _split_note, _u_shape, u_shape_cells
from .repetitions import _log, _per_rep, _reps, _series, frac_decreasing, paired


#: "continues to stabilize": past the threshold T*, GD's excess risk at the last T is at most this
#: many times its excess at T* (the interval of log GD(T*) − log GD(last) above −log of it)
GD_STABLE_RISE = 1.1


def _text_setting(runs: pd.DataFrame, Ts, what: str) -> dict:
    """One Figure 6 setting (``text_curves``' frame): the curves' description on every repetition,
    NoisyHead's U on the split repetitions (``u_shape_cells``) and, on the same tested repetitions,
    GD's log excess risk at T* minus at the last T (paired)."""
    Ts = sorted(int(t) for t in Ts)
    g = _series(summarise(runs, ["T"], "gd"), "T", Ts, f"non-private GD ({what})")
    d = _series(summarise(runs, ["T"], "noisyhead"), "T", Ts, f"NoisyHead ({what})")
    u = u_shape_cells(runs, "noisyhead", Ts, f"NoisyHead ({what})")
    stable = None
    if u:
        reps = _reps(runs)
        gd = {t: _log([_per_rep(runs, "gd", reps, f"non-private GD ({what})", T=t)[i] for i in u["test_index"]])
              for t in (u["t_star"], Ts[-1])}
        stable = paired(gd[u["t_star"]], gd[Ts[-1]])
    return {**_u_shape(d, "t_argmin_noisyhead"), "gd_frac_decreasing": frac_decreasing(g),
            "gd_last_over_first": float(g.iloc[-1] / g.iloc[0]),
            "noisyhead_u_shape": u["cells"] if u else None, "t_star_noisyhead": u["t_star"] if u else None,
            "t_star_split": _split_note(u), "gd_stable": stable}


def fig6_news_text(runs: pd.DataFrame, fixed: pd.DataFrame, Ts, n_articles: int) -> dict:
    """``runs``: ``text_curves(...)`` at the setting chosen because it shows the curves' shape;
    ``fixed``: the same at the setting fixed before looking (Figure 3's constants). The chosen
    setting's values under their own names, the fixed setting's with ``_fixed``; ``gd_stable``
    holds GD's interval at both."""
    if n_articles < 1:
        raise ValueError(f"no articles were used (n_articles = {n_articles})")
    chosen = _text_setting(runs, Ts, "chosen setting")
    at_fixed = _text_setting(fixed, Ts, "Figure 3's setting")
    stable = {"chosen setting": chosen.pop("gd_stable"), "Figure 3's setting": at_fixed.pop("gd_stable")}
    return {**chosen, **{f"{k}_fixed": v for k, v in at_fixed.items()}, "articles": int(n_articles),
            "gd_stable": None if None in stable.values() else stable, "gd_stable_rise": GD_STABLE_RISE}
