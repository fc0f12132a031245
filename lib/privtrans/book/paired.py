"""Judging a difference between two stochastic methods across seeds.

Two methods run with the same seeds give paired values a[i], b[i]; the claim "a beats b" holds only
when a t interval on the differences a[i] - b[i] lies above the paper's margin (zero by default).
A t interval (scipy.stats.t) rather than a bootstrap: with the 3-5 seeds a CPU build affords, a
bootstrap's interval is too narrow (it cannot see beyond the sampled spread); t is the textbook
choice for small paired samples. An exact tie never holds (lo == margin is not above it), and fewer
than two seeds give no interval: the claim is then "not judged".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

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

    def as_dict(self) -> dict:
        return asdict(self)


def seeds(seed: int, n: int) -> list[int]:
    """A notebook's paired seeds: ``seed`` (its papermill parameter) and the n − 1 after it."""
    if n < 1:
        raise ValueError(f"the number of seeds must be a positive integer, got {n!r}")
    return [seed + i for i in range(n)]


def _floats(xs, name) -> list[float | None]:
    if isinstance(xs, (str, bytes)) or not isinstance(xs, Sequence):
        raise TypeError(f"{name} must be a sequence of per-seed numbers, got {type(xs).__name__}")
    return [None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x) for x in xs]


def paired_difference(a, b, *, margin: float = 0.0, confidence: float = 0.95) -> Paired:
    """The t interval on a[i] - b[i] (pairs with a missing value are dropped) and whether it clears margin."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    a, b = _floats(a, "a"), _floats(b, "b")
    if len(a) != len(b):
        raise ValueError(f"a and b must hold one value per seed each, got {len(a)} and {len(b)} values")
    d = [x - y for x, y in zip(a, b) if x is not None and y is not None]
    n = len(d)
    if n == 0:
        return Paired(None, None, None, 0, confidence, margin, None, "no seed has both values")
    mean = sum(d) / n
    if n < 2:
        return Paired(mean, None, None, n, confidence, margin, None,
                      "one seed: no interval, not judged")
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    lo, hi = float(mean - half), float(mean + half)
    held = bool(lo > margin)
    pct = f"{confidence:.0%}"
    reason = (f"mean difference {mean:+.4g}, {pct} t interval [{lo:+.4g}, {hi:+.4g}] over {n} pairs "
              f"{'clears' if held else 'does not clear'} the margin {margin:+.4g}")
    return Paired(mean, lo, hi, n, confidence, margin, held, reason)
