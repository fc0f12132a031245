"""Figure 3 (and Figure 6's curves): the U-shape of risk against the number of steps T, with T*
chosen on one half of the repetitions and tested on the other.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..experiments import summarise
from .repetitions import _log, _per_rep, _reps, _series, frac_decreasing, paired


def _u_shape(cost: pd.Series, argmin_key: str) -> dict:
    """Where a cost indexed by T is smallest on average over every repetition (under
    ``argmin_key``), whether that is inside the grid, and how far the cost climbs on either side of
    it: a description of the curve; the claims judge ``u_shape_cells``."""
    t_min = cost.idxmin()
    low = float(cost.min())
    return {
        argmin_key: int(t_min),
        # fewer than three horizons cannot show an interior minimum, nor rule one out
        "interior_minimum": bool(cost.index[0] < t_min < cost.index[-1]) if len(cost) >= 3 else None,
        "rise_after_min": float(cost.iloc[-1]) / low,       # cost at the largest T over the minimum
        "drop_before_min": float(cost.iloc[0]) / low,       # cost at the smallest T over the minimum
    }


def halves(reps) -> tuple[list, list]:
    """(the repetitions that choose, the repetitions that are tested): the first half of the sorted
    repetition ids, and the rest (the larger half when their number is odd)."""
    reps = sorted(reps)
    return reps[:len(reps) // 2], reps[len(reps) // 2:]


def u_shape_cells(runs: pd.DataFrame, col: str, Ts, what: str) -> dict | None:
    """Whether a cost indexed by T falls and then rises, judged on repetitions that did not choose
    where the bottom is. The first half of the repetitions (``halves``) choose T*: the interior T
    (neither end) with the smallest mean over them. The other half are tested: per repetition, the
    log cost at the smallest T minus at T* ("falls to the minimum") and at the largest T minus at T*
    ("rises after it"), each a paired 95 % interval over the tested repetitions (every T of a
    repetition shares its data and draws). Both are positive for a U; a cost that only falls makes
    the second negative, one that only rises the first. Choosing T* on the tested repetitions would
    make both legs look positive under a flat curve (the minimum of noisy means sits low by
    selection); on the other half it is a fixed T to them. None below three horizons or two
    repetitions."""
    Ts = sorted(int(t) for t in Ts)
    reps = _reps(runs)
    if len(Ts) < 3 or len(reps) < 2:
        return None
    v = {t: _per_rep(runs, col, reps, what, T=t) for t in Ts}
    choose, test = halves(reps)
    pick = [reps.index(r) for r in choose]
    means = {t: np.mean([v[t][i] for i in pick if v[t][i] is not None] or [np.nan]) for t in Ts[1:-1]}
    if all(np.isnan(m) for m in means.values()):
        return None
    t_star = min((t for t in means if not np.isnan(means[t])), key=lambda t: means[t])
    keep = [reps.index(r) for r in test]

    def at(t):
        return _log([v[t][i] for i in keep])

    first, last = Ts[0], Ts[-1]
    return {"t_star": int(t_star), "chosen_on": [int(r) for r in choose], "tested_on": [int(r) for r in test],
            "values": v, "test_index": keep,
            "cells": {"falls to the minimum": paired(at(first), at(t_star)),
                      "rises after it": paired(at(last), at(t_star))}}


def _split_note(u: dict | None) -> str | None:
    if not u:
        return None
    c, t = u["chosen_on"], u["tested_on"]
    return (f"T* = {u['t_star']} chosen on repetitions {c[0]}–{c[-1]} ({len(c)}), "
            f"tested on repetitions {t[0]}–{t[-1]} ({len(t)})")


def fig3_early_stopping(runs: pd.DataFrame, Ts) -> dict:
    """``runs``: ``early_stopping(...)``, one row per repetition and T (every T of a repetition
    shares its data, start and draws). The cost of descent's fall at every step of the T grid, as
    paired intervals of log cost over all repetitions; the cost of privacy's U (``u_shape_cells``)."""
    Ts = sorted(int(t) for t in Ts)
    d = _series(summarise(runs, ["T"], "descent"), "T", Ts, "cost of descent")
    p = _series(summarise(runs, ["T"], "privacy"), "T", Ts, "cost of privacy")
    reps = _reps(runs)
    desc = {t: _log(_per_rep(runs, "descent", reps, "cost of descent", T=t)) for t in Ts}
    u = u_shape_cells(runs, "privacy", Ts, "cost of privacy")
    return {**_u_shape(p, "t_argmin_privacy"), "descent_frac_decreasing": frac_decreasing(d),
            "min_privacy_cost": float(p.min()),
            # intervals the claims judge: the descent cost falls at every step; the privacy cost
            # falls to T* and rises after it, on repetitions that did not choose T*
            "descent_step_cells": ({f"T {a}→{b}": paired(desc[a], desc[b]) for a, b in zip(Ts[:-1], Ts[1:])}
                                   if len(Ts) > 1 else None),
            "privacy_u_shape": u["cells"] if u else None, "t_star_privacy": u["t_star"] if u else None,
            "t_star_split": _split_note(u)}
