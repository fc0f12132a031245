"""The paper's own numbers, read from a chapter's cited data files, for the paper's self-test.

A claim's ``paper_test`` reads them with ``P(file, col='value', **filters)``: the one row of
``data/<chapter>/<file>.csv`` whose columns equal the filters (numbers compared as numbers), and its
column ``col`` as a float. Anything but exactly one match is an error naming the file and filters, so a
misspelt row cannot quietly give the wrong number.
"""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

from .paths import data_dir


class PaperValueError(LookupError):
    pass


def _same(cell: str, want) -> bool:
    if str(want) == cell:
        return True
    try:
        return float(cell) == float(want)
    except (TypeError, ValueError):
        return False


@lru_cache(maxsize=None)
def _rows(path: Path) -> tuple[dict, ...]:
    with path.open(newline="") as f:
        return tuple(csv.DictReader(f))


def lookup(chapter: str, root: Path | None = None):
    """``P(file, col='value', **filters)`` over ``data/<chapter>/*.csv``."""
    base = data_dir(chapter, root)

    def P(file: str, col: str = "value", **filters) -> float:
        path = base / f"{file}.csv"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in base.glob("*.csv")))
            raise PaperValueError(f"no paper values file {path.name} in data/{chapter}; allowed values are {known}")
        rows = [r for r in _rows(path) if all(k in r and _same(r[k], v) for k, v in filters.items())]
        if len(rows) != 1:
            raise PaperValueError(f"data/{chapter}/{path.name}: {len(rows)} rows match {filters} (need exactly one)")
        if col not in rows[0]:
            raise PaperValueError(f"data/{chapter}/{path.name} has no column {col!r}; allowed values are "
                                  f"{', '.join(rows[0])}")
        try:
            return float(rows[0][col])
        except ValueError:
            raise PaperValueError(f"data/{chapter}/{path.name} {filters} {col} = {rows[0][col]!r} is not a number") \
                from None

    return P
