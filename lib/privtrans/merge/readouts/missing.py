"""What a MERGE readout does when a result is absent: a run or row the experiment should have
produced raises ``MissingResult``; a value that cannot be computed is None.
"""

from __future__ import annotations

from privtrans.book.readouts import ratio


class MissingResult(LookupError):
    """A run or row the experiment should have produced is absent."""


def _need(have, want, what: str):
    missing = [w for w in want if w not in set(have)]
    if missing:
        raise MissingResult(f"{what}: nothing for {missing} (have {sorted(map(str, set(have)))})")


def _cut(value, base) -> float | None:
    """1 - value / base: the share of ``base`` that is gone; None when base is 0."""
    r = ratio(value, base)
    return None if r is None else 1 - r
