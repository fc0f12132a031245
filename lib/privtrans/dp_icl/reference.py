"""The authors' own numbers, for side-by-side comparison: data/dp_icl/paper_values.csv.

Figures 1-4 come from the result CSVs of the official repository (github.com/chebyshevtech/DP1,
commit 77a9254, MIT; the paper prints no numbers for its figures), Table 1 from the paper. Each
row carries its ``source``.
"""

from __future__ import annotations

import pandas as pd

from privtrans.book.paths import data_dir


def paper_values(figure: str | None = None) -> pd.DataFrame:
    df = pd.read_csv(data_dir("dp_icl") / "paper_values.csv")
    if figure is not None:
        if figure not in set(df["figure"]):
            raise KeyError(f"no paper values for {figure!r}; have {sorted(set(df['figure']))}")
        df = df[df["figure"] == figure].reset_index(drop=True)
    return df


def matched(ours: pd.DataFrame, ref: pd.DataFrame, keys: list[str], quantity: str | None = None) -> pd.DataFrame:
    """Our means next to the authors' values at the settings both have (an inner join on ``keys``).

    ``ours`` has ``keys`` and ``mean`` (a ``summarise`` frame); ``ref`` is ``paper_values(...)``,
    restricted to one ``quantity`` when given. Returns ``keys`` + this reproduction, authors, ratio
    (ours / authors); a setting only one side has is left out, so the result may be empty.
    """
    if quantity is not None:
        if quantity not in set(ref["quantity"]):
            raise KeyError(f"no paper values for quantity {quantity!r}; have {sorted(set(ref['quantity']))}")
        ref = ref[ref["quantity"] == quantity]
    for k in keys:
        if k not in ours.columns or k not in ref.columns:
            raise KeyError(f"cannot match on {k!r}: ours has {list(ours.columns)}, the authors' {list(ref.columns)}")
    if ours.duplicated(keys).any() or ref.duplicated(keys).any():
        raise ValueError(f"{keys} do not identify one row per setting (a method or quantity left unselected?)")
    ref = ref[keys + ["value"]].dropna(subset=keys)
    # the CSV reads N as float (other figures leave it empty): match it as our dtype
    ref = ref.astype({k: ours[k].dtype for k in keys})
    out = ours[keys + ["mean"]].merge(ref, on=keys, how="inner").sort_values(keys, ignore_index=True)
    out = out.rename(columns={"mean": "this reproduction", "value": "authors"})
    out["ratio"] = out["this reproduction"] / out["authors"]
    return out
