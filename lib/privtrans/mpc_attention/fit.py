"""Fitting the public denominator f(n) = a·nᵇ (Sec. 4.1, Figures 5-7).

The paper groups the attention denominators of a trained model by the number of keys n, averages
them (over all layers, heads and rows) and fits a power law, without saying how. We fit by least
squares on the raw means (scipy's ``curve_fit``), started from the log-log line, which weights the
large-n means as the paper's curves do; a per-layer or per-head fit (the paper's future work) is
the same call on a subset.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import curve_fit

from .normalisers import PowerLaw


def power_law(ns, means) -> PowerLaw:
    """The a, b of a·nᵇ closest (least squares) to the mean denominator at each n."""
    ns, means = np.asarray(ns, dtype=float), np.asarray(means, dtype=float)
    if len(ns) != len(means) or len(ns) < 2:
        raise ValueError(f"need at least two (n, mean) pairs of equal length, got {len(ns)} and {len(means)}")
    if (ns <= 0).any() or (means <= 0).any():
        raise ValueError("n and the mean denominators must be positive for a power law")
    b0, loga0 = np.polyfit(np.log(ns), np.log(means), 1)
    (a, b), _ = curve_fit(lambda n, a, b: a * n ** b, ns, means, p0=(np.exp(loga0), b0), maxfev=10_000)
    return PowerLaw(float(a), float(b))
