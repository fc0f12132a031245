"""Figure 5: NoisyHead against DP-SGD at equal privacy, and the bracket of accountants ('on par').
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..experiments import DPSGD_ADD_REMOVE, DPSGD_REPLACE_ONE, dpsgd_ratios, noisyhead
from .repetitions import _log, _per_rep, _reps, _rows, _table, _wide_means, paired


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
    risks: the paired interval of log(DP-SGD) − log(method) (``paired``, every repetition of the grid
    planned, a missing or NaN run kept as lost) and its two one-sided cells of an equivalence test
    with margin -lim: "at most e^lim times DP-SGD" is that interval, "at least e^-lim times DP-SGD"
    is its negation; on par in a cell when both clear -lim, not on par when either lies at or below
    it, unresolved otherwise."""
    cells, verdicts, ratios = {}, [], []
    reps = _reps(runs)
    for N in Ns:
        for e in eps:
            sel = runs[(runs.N == N) & np.isclose(runs.eps.astype(float), e)]
            if sel[sel.method == method].empty or sel[sel.method == corner].empty:
                missing = method if sel[sel.method == method].empty else corner
                raise ValueError(f"Figure 5 has no {missing!r} runs at N = {N}, ε = {e}")
            a = _log(_per_rep(sel[sel.method == method], "excess", reps, method))
            b = _log(_per_rep(sel[sel.method == corner], "excess", reps, corner))
            p = paired(b, a)
            flip = {"mean": None if p["mean"] is None else -p["mean"], "lo": None if p["hi"] is None else -p["hi"],
                    "hi": None if p["lo"] is None else -p["lo"], "n": p["n"], "planned": p["planned"],
                    "confidence": p["confidence"]}
            keep = {k: p[k] for k in ("mean", "lo", "hi", "n", "planned", "confidence")}
            x = f"{np.exp(lim):g}"
            cells[f"N={N} ε={e:g}"] = {f"at most {x}× DP-SGD": keep, f"at least 1/{x} of DP-SGD": flip}
            # inside the margin: on par; wholly outside it: not; straddling it: unresolved (None)
            verdicts.append(None if p["lo"] is None else True if -lim < p["lo"] and p["hi"] < lim
                            else False if p["hi"] <= -lim or p["lo"] >= lim else None)
            ratios.append(float(np.exp(-p["mean"])) if p["mean"] is not None else float("nan"))
    return {"cells": cells, "verdicts": verdicts, "ratios": ratios}


def corner_name(corner: str) -> str:
    """A DP-SGD corner of ``BRACKET`` in a few words: what T counts and the clip norm."""
    from ..experiments import BRACKET

    how = BRACKET[corner]
    return ("T epochs" if how["epochs"] else "T steps") + (", clip C" if how["clip"] == "C" else ", clip σ/2")


def fig5_bracket(runs: pd.DataFrame, accountant: str, Ns, eps, margin: float = ON_PAR) -> dict:
    """NoisyHead, tightly accounted (``accountant``) and as the paper calibrates it (basic
    composition), against each corner of the DP-SGD bracket (``BRACKET``: T as steps or epochs,
    max_grad_norm sigma/2 or C), per (N, eps), on the repetitions' paired log excess risks (each
    repetition runs every method on the same data and start; ``_equivalence``). A cell is on par
    when the interval of the log ratio lies inside ±log(margin) (an equivalence test), not on par
    when it lies wholly outside, unresolved when it straddles the margin. A corner is on par when
    every cell is, not on par when one cell is not.

    The claims judge the paper's NoisyHead against ``STANDARD_CORNER`` (``parity_standard_cells``:
    the DP-SGD setting fixed before any run, T steps and max_grad_norm sigma/2) and the tightly
    accounted one against every corner (``tight_equivalence_cells``, {corner: {cell: {side:
    interval}}}), each with margin -log(margin); the other corners of the paper's NoisyHead are
    shown beside its verdict (``parity_other_corners``)."""
    from ..experiments import BRACKET, STANDARD_CORNER

    absent = [c for c in ("method", "N", "eps", "rep", "excess") if c not in runs.columns]
    if absent:
        raise ValueError(f"the Figure 5 runs lack the column(s) {absent}")
    tight, lim = noisyhead(accountant), float(np.log(margin))
    short = {k: corner_name(k) for k in BRACKET}
    out = {"bracket_margin": margin, "bracket_corner_count": len(BRACKET), "standard_corner": short[STANDARD_CORNER]}
    for key, method in (("tight", tight), ("parity", noisyhead())):
        corners, cells = {}, {}
        for corner in BRACKET:
            q = _equivalence(runs, method, corner, Ns, eps, lim)
            v, ratios = q["verdicts"], q["ratios"]
            cells[short[corner]] = q["cells"]
            corners[corner] = {"on_par_cells": sum(c is True for c in v), "cells": len(v),
                               "not_on_par_cells": sum(c is False for c in v),
                               "on_par_all": False if False in v else None if None in v else True,
                               "median_ratio": float(np.nanmedian(ratios)), "min_ratio": float(np.nanmin(ratios)),
                               "max_ratio": float(np.nanmax(ratios))}
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
            out.update({"parity_bracket": corners, "parity_summary": summary,
                        "parity_standard_cells": cells[short[STANDARD_CORNER]],
                        "parity_other_corners": {k: s for k, s in summary.items() if k != short[STANDARD_CORNER]}})
    return out
