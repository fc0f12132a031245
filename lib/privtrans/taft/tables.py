"""Our numbers laid out as the paper's tables: mean and sd over seeds, beside the paper's columns.

Presentation only, and kept out of ``experiments`` on purpose: that module's source keys every
cached fine-tune (``experiments.CODE``), so a change of a table's layout made there would train them
all again.
"""

from __future__ import annotations

STATS = ("mean", "std")


def mean_sd(runs, index, columns, value: str = "accuracy", label: str = "{column} {stat}"):
    """Mean and sd over seeds of ``value`` in points (x100, one decimal): one row per ``index``, two
    columns per value of ``columns``, named by ``label`` (its fields: ``column``, the value of
    ``columns``; ``stat``, mean or std)."""
    keys = ([index] if isinstance(index, str) else list(index)) + [columns]
    missing = [k for k in keys + [value] if k not in runs.columns]
    if missing:
        raise KeyError(f"runs has no column(s) {missing}; it has {list(runs.columns)}")
    table = (runs.groupby(keys)[value].agg(list(STATS)).mul(100).round(1)
             .reset_index().pivot(index=index, columns=columns))
    table.columns = [label.format(column=c, stat=s) for s, c in table.columns]
    return table
