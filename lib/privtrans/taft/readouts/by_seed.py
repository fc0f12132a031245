"""Per-seed values of a TAFT run table, the inputs of every paired comparison of the chapter; a
missing run is None, never 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from privtrans.book.readouts import num


NEAR, FAR = "digits", "letters"


def _seeds(df: pd.DataFrame) -> list:
    return sorted(df.seed.unique().tolist())


def per_seed(df: pd.DataFrame, seeds, value: str = "accuracy", **where) -> list:
    """The ``value`` of the rows matching ``where``, one per seed (None where a seed has none)."""
    sel = df
    for k, v in where.items():
        sel = sel[sel[k] == v]
    by = sel.groupby("seed")[value].mean()
    return [num(by.get(s)) for s in seeds]


def _minus(a, b):
    return [None if x is None or y is None else x - y for x, y in zip(a, b)]


def _avg(*lists):
    return [None if any(v is None for v in vs) else float(np.mean(vs)) for vs in zip(*lists)]
