"""A run table read per method, ε and seed: the paired comparisons every DPFormer readout shares.

A seed never vanishes: a paired interval is taken over the seeds planned for it, with None where
one side lacks a value, so that its ``planned`` count says how many were lost.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from privtrans.book.paired import paired_difference
from privtrans.book.readouts import num


VANILLA, DPFORMER = "transformer", "dpformer"
NON_PRIVATE = "non-private"


def _increasing(values) -> bool | None:
    """Strictly increasing; None with fewer than two values or any missing one (nothing to compare)."""
    if len(values) < 2 or any(v is None for v in values):
        return None
    return bool(np.all(np.diff(values) > 0))


def _require(df: pd.DataFrame, columns, what: str) -> None:
    absent = [c for c in columns if c not in df.columns]
    if absent:
        raise ValueError(f"{what} lacks the column(s) {absent}")


def _ref(refs: pd.DataFrame, method: str, key: str = "ndcg@10") -> float:
    row = refs[refs.method == method]
    if row.empty:
        raise ValueError(f"no reference row {method!r} (have {list(refs.method)})")
    return float(row[key].iloc[0])


def _value(x) -> float | None:
    """A per-seed value as the paired interval takes it: None for a missing one (None, NaN)."""
    return num(x)


def _best_cell(cells: list[dict], none_reason: str) -> dict:
    """The cell whose interval lies highest (its lower end; the mean where it has none): "some arm
    is clearly above" holds when that one's does."""
    if not cells:
        return {"method": None, "epsilon": None, "held": None, "reason": none_reason}
    return max(cells, key=lambda c: (c["lo"] if c["lo"] is not None else float("-inf"),
                                     c["mean"] if c["mean"] is not None else float("-inf")))


def mean_ndcg(runs: pd.DataFrame, method: str, epsilon, metric: str = "ndcg@10") -> float | None:
    """Mean NDCG@10 (or ``metric``) over the seeds of (method, ε); None when there is no such run."""
    sub = runs[(runs.method == method) & (runs.epsilon == epsilon)]
    return float(sub[metric].mean()) if len(sub) else None


def _per_seed(runs: pd.DataFrame, method: str, epsilon, metric: str = "ndcg@10", seeds=None) -> dict:
    """{seed: value} of (method, ε) for every planned seed (``seeds``; default every seed of ``runs``),
    None where that run is missing or gave NaN."""
    sub = runs[(runs.method == method) & (runs.epsilon == epsilon)]
    got = {int(s): _value(v) for s, v in zip(sub.seed, sub[metric])}
    return {s: got.get(s) for s in (_seeds(runs) if seeds is None else seeds)}


def paired_keyed(a: dict, b: dict, margin: float = 0.0, resolution: float = 0.0, keys=None, **labels) -> dict:
    """Paired interval (``privtrans.book.paired``) of ``a[k] - b[k]`` over the planned keys (seeds, or
    (ε, seed) runs, or grid cells): ``keys`` where given, else every key either side has. A key that
    one side lacks, or whose value is None or NaN, stays in as None, so the interval's ``planned``
    counts it as lost (never a silent drop). Records the keys and values it used; it holds when its
    lower end is above ``margin``. ``resolution``: the step of quantised values."""
    keys = list(dict.fromkeys(sorted(set(a) | set(b), key=str) if keys is None else keys))
    va, vb = [_value(a.get(k)) for k in keys], [_value(b.get(k)) for k in keys]
    return {**labels, "keys": [list(k) if isinstance(k, tuple) else k for k in keys], "a": va, "b": vb,
            **paired_difference(va, vb, margin=margin, resolution=resolution).as_dict()}


def all_held(pairs) -> bool | None:
    """Every comparison clears zero: False as soon as one does not, None if one has no interval."""
    if not pairs:
        return None
    held = [p["held"] for p in pairs]
    return False if False in held else None if None in held else True


def above_reference(runs: pd.DataFrame, epsilons, methods, reference: float) -> dict:
    """Whether some (method, ε) of ``methods`` is clearly above a fixed reference (MostPopular): per
    cell a t interval over the seeds of ``runs`` on NDCG@10 − reference, and the cell whose interval
    lies highest (its lower end; the mean where there is no interval)."""
    cells = []
    for m in methods:
        for e in epsilons:
            if not ((runs.method == m) & (runs.epsilon == e)).any():
                continue
            v = list(_per_seed(runs, m, e).values())
            cells.append({"method": m, "epsilon": e,
                          **paired_difference(v, [reference] * len(v)).as_dict()})
    return _best_cell(cells, f"no run of {list(methods)}")


def _seeds(runs: pd.DataFrame) -> list[int]:
    return sorted(int(s) for s in runs.seed.unique())


def _cell_seeds(grid: pd.DataFrame, method: str, key: str = "ndcg@10") -> dict:
    """{(B, lr): {seed: value}} of one method over a grid (None for a NaN value: a lost run)."""
    sub = grid[grid.method == method]
    out: dict = {}
    for B, lr, s, v in zip(sub.batch_size, sub.lr, sub.seed, sub[key]):
        out.setdefault((int(B), float(lr)), {})[int(s)] = _value(v)
    return out


def _per_seed_col(df: pd.DataFrame, method: str, epsilon, column: str, seeds=None) -> dict:
    """{seed: value} of one (method, ε) of a per-run table for every planned seed (``seeds``; default
    every seed of ``df``), None where the run is missing or its value NaN; ε None selects the
    non-private rows."""
    eps = df.epsilon.astype(float)
    sel = (df.method == method) & (eps.isna() if epsilon is None else (eps == float(epsilon)))
    got = {int(s): _value(v) for s, v in zip(df.seed[sel], df[column][sel])}
    return {s: got.get(s) for s in (_seeds(df) if seeds is None else seeds)}


def _learns(values: dict, reference: float, what: str) -> dict:
    """A gate's reading: the paired interval of ``values`` (per seed) − ``reference``, with its label."""
    if not values:
        return {"held": None, "reason": f"no {what}", "what": what}
    return {**paired_keyed(values, {s: reference for s in values}), "what": what}
