"""The paper's numbers, read from the cited data files in ``data/taft/`` (never typed in a notebook).

``paper_tables.csv``: long format (table, dataset, column, value, source), every table of the
paper with numbers and the numbers its text gives for figures. ``paper_hyperparameters.csv``:
Tables 4-6 (the configurations the paper chose).
"""

from __future__ import annotations

import pandas as pd

from privtrans.book.paths import data_dir


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(data_dir("taft") / name)


def values() -> pd.DataFrame:
    return _read("paper_tables.csv")


def table(name: str) -> pd.DataFrame:
    """One table of the paper, wide: a row per dataset, a column per method (values in %)."""
    df = values()
    df = df[df.table == name]
    if df.empty:
        raise ValueError(f"no paper table {name!r}; known: {', '.join(values().table.unique())}")
    order = list(dict.fromkeys(df.column))
    wide = df.pivot(index="dataset", columns="column", values="value")[order]
    wide = wide.loc[list(dict.fromkeys(df.dataset))].reset_index()
    wide.columns.name = None
    return wide


def value(table_name: str, dataset: str, column: str) -> float:
    df = values()
    hit = df[(df.table == table_name) & (df.dataset == dataset) & (df.column == column)]
    if len(hit) != 1:
        raise KeyError(f"paper value {table_name} / {dataset} / {column}: {len(hit)} matches")
    return float(hit.value.iloc[0])


def hyperparameters() -> pd.DataFrame:
    """Tables 4-6: the configuration the paper chose per dataset and method."""
    return _read("paper_hyperparameters.csv").drop(columns="source")
