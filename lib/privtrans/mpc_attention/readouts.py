"""What each MPC-attention notebook records for the claims (``nb.record(**readouts.<notebook>(...))``)."""

from __future__ import annotations

import pandas as pd

from privtrans.book.readouts import num
from privtrans.shared.mpc.network import LINKS, modelled_time

from .normalisers import KINDS, PARENT


def with_network_time(costs: pd.DataFrame) -> pd.DataFrame:
    """Adds the modelled communication seconds of each row on every link (``LINKS``)."""
    out = costs.copy()
    for name, link in LINKS.items():
        out[f"{name} s"] = modelled_time(out["bytes"], out["rounds"], **link)
    return out


def table1_attention_cost(costs: pd.DataFrame, tolerance: float) -> dict:
    """``costs``: one row per (protocol, n, kind) with rounds, bytes, seconds, max_abs_err (from
    ``parties.normaliser_cost``), network seconds added by ``with_network_time``."""
    c = costs.set_index(["protocol", "n", "kind"])
    cells = list(c.index.droplevel("kind").unique())
    get = lambda p, n, k, col: num(c.loc[(p, n, k), col]) if (p, n, k) in c.index else None  # noqa: E731
    cheaper = all(get(p, n, ch, col) is not None and get(p, n, ch, col) < get(p, n, pa, col)
                  for p, n in cells for ch, pa in PARENT.items() for col in ("rounds", "bytes"))
    others = [k for k in KINDS if k not in ("scaling", "2quad_freediv")]
    runner_up = all(get(p, n, "2quad_freediv", col) < min(get(p, n, k, col) for k in others)
                    for p, n in cells for col in ("rounds", "LAN s"))
    below_softmax = all(get(p, n, k, "LAN s") < get(p, n, "softmax", "LAN s")
                        for p, n in cells for k in KINDS if k != "softmax")
    sf_vs_2quad = {f"{p} n={n}": {"softmax_freediv": get(p, n, "softmax_freediv", "LAN s"),
                                  "2quad": get(p, n, "2quad", "LAN s")} for p, n in cells}
    speedup = {f"{p} n={n}": {k: (get(p, n, "softmax", "LAN s") / get(p, n, k, "LAN s")
                                  if get(p, n, k, "LAN s") else None) for k in KINDS if k != "softmax"}
               for p, n in cells}
    return {
        "cells": [f"{p} n={n}" for p, n in cells],
        "max_abs_err": num(costs.max_abs_err.max()), "tolerance": tolerance,
        "secure_equals_plaintext": bool(costs.max_abs_err.max() < tolerance),
        "freediv_cheaper_than_parent": cheaper,
        "quad_freediv_next_to_scaling": runner_up,
        "every_replacement_below_softmax": below_softmax,
        "softmax_freediv_lan_vs_2quad": sf_vs_2quad,
        "softmax_freediv_beats_2quad": {p: all(get(p, n, "softmax_freediv", "LAN s") < get(p, n, "2quad", "LAN s")
                                               for q, n in cells if q == p)
                                        for p in dict.fromkeys(p for p, _ in cells)},
        "lan_speedup_over_softmax": speedup,
    }
