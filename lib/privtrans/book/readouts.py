"""The arithmetic every chapter's ``readouts`` shares: a value a claim reads is never invented.

A missing or NaN input gives None, never 0, and anything computed from a None is None, so the
claims engine reports the claim as not judged with the reason instead of judging it on a made-up
number. Chapters keep their own readouts; these helpers are the convention they all follow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd


def num(v) -> float | None:
    """A float, or None for a missing value (None, NaN, pandas' NA)."""
    return None if v is None or pd.isna(v) else float(v)


def ratio(a, b) -> float | None:
    """a / b; None when either is missing or the base is not positive (every base here is a size,
    a time or a score, for which a ratio to zero or less is undefined)."""
    a, b = num(a), num(b)
    return None if a is None or b is None or b <= 0 else a / b


def strict(reduce: Callable, values: Iterable):
    """``reduce(values)`` (max, min, all, a mean), or None when there are none or any is None:
    a missing value could be the max, or the one that breaks the ``all``."""
    values = list(values)
    return None if not values or any(v is None for v in values) else reduce(values)


def mean(values) -> float | None:
    """The mean, or None when there are none or any is None (undefined, not 0)."""
    return strict(lambda v: float(np.mean(v)), values)
