"""Figure 5: the long tail of the interaction data, per data set.
"""

from __future__ import annotations

from privtrans.book.readouts import ratio


LONG_TAIL_FIELDS = ("users", "items", "interactions", "density", "top20_share", "gini", "avg_len")


def fig5_long_tail(movielens: dict, amazon_like: dict) -> dict:
    """The two datasets' statistics (``data.long_tail_stats``) and how much sparser the second is."""
    out = {}
    for name, st in (("movielens", movielens), ("amazon_like", amazon_like)):
        absent = [k for k in LONG_TAIL_FIELDS if k not in st]
        if absent:
            raise ValueError(f"{name} statistics lack {absent}")
        out[name] = {k: (int(st[k]) if k in ("users", "items", "interactions") else float(st[k]))
                     for k in LONG_TAIL_FIELDS}
    out["sparsity_ratio"] = ratio(movielens["density"], amazon_like["density"])
    return out
