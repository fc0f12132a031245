"""Judging a difference between two stochastic methods across seeds.

Two methods run with the same seeds give paired values a[i], b[i]; the claim "a beats b" holds only
when a t interval on the differences a[i] - b[i] lies above the paper's margin (zero by default).
A t interval (scipy.stats.t) rather than a bootstrap: with the 3-5 seeds a CPU build affords, a
bootstrap's interval is too narrow (it cannot see beyond the sampled spread); t is the textbook
choice for small paired samples. An exact tie never holds (lo == margin is not above it), and fewer
than two seeds give no interval: the claim is then "not judged".

Quantised readings (an epoch observed only at evaluations every q epochs, a hit rate that is a count
of users over N) cannot show a difference below their step q: identical readings at every seed give
a sample sd of 0 and a t interval [0, 0], which is not certainty. Given ``resolution=q``, each reading
carries the uncertainty of a uniform error of width q, q/√12, so that a difference of two carries
q²/6, combined in quadrature with the sample variance (see :func:`paired_difference`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Paired:
    mean: float | None  # mean of a - b
    lo: float | None  # lower end of the two-sided interval
    hi: float | None
    n: int  # seeds (pairs) with both values
    confidence: float
    margin: float
    held: bool | None  # lo > margin; None when there is no interval
    reason: str
    resolution: float = 0.0  # step q of the quantised readings (0: continuous); widens the interval
    planned: int = 0  # seeds planned (N); n < planned when a run failed: the verdict counts it (verdicts.lost)
    diffs: tuple = ()  # a[i] - b[i] per planned seed, None where one was lost: what the trials resample

    def as_dict(self) -> dict:
        return asdict(self)


def seeds(seed: int, n: int) -> list[int]:
    """A notebook's paired seeds: ``seed`` (its papermill parameter) and the n − 1 after it (the
    first two in a dry run: :func:`privtrans.book.dry.seeds`)."""
    from . import dry

    if n < 1:
        raise ValueError(f"the number of seeds must be a positive integer, got {n!r}")
    return dry.seeds([seed + i for i in range(n)])


def _floats(xs, name) -> list[float | None]:
    if isinstance(xs, (str, bytes)) or not isinstance(xs, Sequence):
        raise TypeError(f"{name} must be a sequence of per-seed numbers, got {type(xs).__name__}")
    return [None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x) for x in xs]


def _resolution(q) -> float:
    if isinstance(q, bool) or not isinstance(q, numbers.Real) or not math.isfinite(q) or q < 0:
        raise ValueError(f"resolution must be a finite number >= 0 (0 for continuous readings, else the step "
                         f"of the quantised readings, e.g. the evaluation interval or 1/N), got {q!r}")
    return float(q)


def paired_difference(a, b, *, margin: float = 0.0, confidence: float = 0.95, resolution: float = 0.0) -> Paired:
    """The t interval on a[i] - b[i] over the pairs with both values, and whether it clears margin.

    A pair with a missing value (a failed or diverged run: None or NaN) is not silently dropped: the
    result keeps ``planned`` (the N seeds run) beside ``n``, its reason says "n of N", and the claims
    engine decides what a lost seed means for the verdict (:func:`privtrans.book.verdicts.lost`).

    ``resolution`` q > 0: the readings are quantised in steps of q, and the half-width uses
    sd_eff = sqrt(sd² + q²/6) instead of the sample sd: GUM (JCGM 100:2008, F.2.2.1) gives a reading of
    resolution q the standard uncertainty q/√12 (uniform error of width q), so a difference of two
    readings carries q²/6 on top of the spread across seeds. q = 0 leaves the interval as it was.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    q = _resolution(resolution)
    a, b = _floats(a, "a"), _floats(b, "b")
    if len(a) != len(b):
        raise ValueError(f"a and b must hold one value per seed each, got {len(a)} and {len(b)} values")
    per_seed = tuple(None if x is None or y is None else x - y for x, y in zip(a, b))
    d = [x for x in per_seed if x is not None]
    n, planned = len(d), len(a)
    of = f" of {planned}" if n < planned else ""
    if n == 0:
        return Paired(None, None, None, 0, confidence, margin, None, f"no seed of {planned} has both values", q, planned, per_seed)
    mean = sum(d) / n
    if n < 2:
        return Paired(mean, None, None, n, confidence, margin, None,
                      f"one seed{of}: no interval, not judged", q, planned, per_seed)
    _, lo, hi = (float(x) for x in t_interval(np.asarray(d, float), confidence, q))
    held = bool(lo > margin)
    pct = f"{confidence:.0%}"
    quantised = f" (readings quantised in steps of {q:.4g}: q/√12 each, in the interval)" if q > 0 else ""
    reason = (f"mean difference {mean:+.4g}, {pct} t interval [{lo:+.4g}, {hi:+.4g}] over {n}{of} pairs{quantised} "
              f"{'clears' if held else 'does not clear'} the margin {margin:+.4g}")
    return Paired(mean, lo, hi, n, confidence, margin, held, reason, q, planned, per_seed)


def t_interval(d, confidence: float = 0.95, resolution: float = 0.0):
    """(mean, lo, hi) of the t interval on the last axis of ``d`` (paired differences, one row per
    draw): the one implementation of the book's interval, which :func:`paired_difference` applies to
    one row and the trials (:mod:`privtrans.book.trials`) to thousands of generated rows at once."""
    d = np.asarray(d, float)
    n = d.shape[-1]
    mean = d.sum(axis=-1) / n
    sd = np.sqrt(((d - mean[..., None]) ** 2).sum(axis=-1) / (n - 1))
    if resolution > 0:
        sd = np.sqrt(sd ** 2 + resolution ** 2 / 6)
    half = _t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


@lru_cache(maxsize=256)
def _t_quantile(p: float, df: int) -> float:
    return float(stats.t.ppf(p, df))


def effective_sd(sd: float, resolution: float) -> float:
    """sqrt(sd² + q²/6): the sample sd of paired differences with both readings' resolution
    uncertainty (q/√12 each, GUM F.2.2.1) added in quadrature."""
    return math.sqrt(sd ** 2 + _resolution(resolution) ** 2 / 6)


def frame(cells, label: str = "cell"):
    """The intervals of a claim's cells ({name: Paired.as_dict()}) as a table, one row per cell with
    its mean, lo, hi and n: what a notebook shows beside the claim that reads them."""
    import pandas as pd

    return pd.DataFrame([{label: k, **{c: v.get(c) for c in ("mean", "lo", "hi", "n")}} for k, v in cells.items()],
                        columns=[label, "mean", "lo", "hi", "n"])
