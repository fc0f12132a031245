"""The grid tables and per-repetition intervals every dp_icl readout shares.

A cell without a finite, positive mean raises a ValueError naming it; every cell keeps the
repetitions it planned beside those that gave a value, and settings that share a repetition's draws
are compared by paired intervals.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from privtrans.book.paired import paired_difference


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


CONFIDENCE = 0.95


def _reps(runs: pd.DataFrame) -> list:
    """The repetitions a grid ran (every id in its ``rep`` column): each cell is planned on all of
    them, so a repetition that gave no value at one cell stays in that cell's count as lost."""
    if "rep" not in runs.columns:
        raise ValueError(f"the runs have no 'rep' column (has {list(runs.columns)})")
    return sorted(runs["rep"].unique())


def _per_rep(runs: pd.DataFrame, col: str, reps, what: str, **where) -> list:
    """``col`` at one setting (``where``: column = value), one entry per repetition of ``reps`` in
    order, None where that repetition gave no value (no row, or NaN). A non-positive value is a
    broken run (every quantity here is an excess risk or a risk) and raises, naming the setting."""
    sel = runs
    for k, v in where.items():
        if k not in sel.columns:
            raise ValueError(f"the {what} runs lack the column {k!r}")
        sel = sel[np.isclose(sel[k].astype(float), float(v))]
    at = ", ".join(f"{k} = {v:g}" for k, v in where.items())
    if col not in runs.columns:
        raise ValueError(f"the {what} runs lack the column {col!r}")
    if sel.empty:
        raise ValueError(f"no {what} runs at {at}")
    if sel["rep"].duplicated().any():
        raise ValueError(f"several {what} runs per repetition at {at}")
    got = sel.set_index("rep")[col].astype(float)
    bad = got[(got <= 0) & got.notna()]
    if len(bad):
        raise ValueError(f"{what} at {at}: a non-positive {col} ({bad.iloc[0]:g}) in repetition {bad.index[0]}")
    return [float(got[r]) if r in got.index and np.isfinite(got[r]) else None for r in reps]


def _log(values: list, log=math.log) -> list:
    return [None if v is None else log(v) for v in values]


def paired(a: list, b: list) -> dict:
    """The paired 95 % t interval of a − b over the repetitions (``paired_difference``; a None in
    either is a lost repetition, kept in ``planned``), as the dict the claims engine judges."""
    return paired_difference(a, b, confidence=CONFIDENCE).as_dict()


def mean_over(values: list, scale: float) -> dict:
    """The 95 % t interval of the mean of ``values`` over the repetitions, divided by ``scale`` (a
    None is a lost repetition, kept in ``planned``): our mean as a multiple of a fixed reference."""
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"the reference value must be finite and positive, got {scale!r}")
    return paired([None if v is None else v / scale for v in values], [0.0] * len(values))


def _grid_values(runs: pd.DataFrame, method: str, Ns, eps, what: str, **where) -> tuple[list, dict]:
    """(the repetitions, {(N, eps): per-repetition excess risk}) of one method over the grid."""
    sel = _rows(runs, method)
    reps = _reps(runs)
    return reps, {(N, e): _per_rep(sel, "excess", reps, what, N=N, eps=e, **where) for N in Ns for e in eps}


def _paired(a: pd.Series, b: pd.Series, reps) -> dict:
    """The paired interval of a − b over the repetitions ``reps`` the grid ran (``paired``): one
    missing from either side, or NaN there, is a lost repetition, kept in the count."""
    def at(s, r):
        return float(s[r]) if r in s.index and np.isfinite(s[r]) else None

    return paired([at(a, r) for r in reps], [at(b, r) for r in reps])
