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
