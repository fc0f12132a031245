"""privtrans.dpformer.experiments: the paper-style table shows a missing spread and a missing run as
dashes."""

from __future__ import annotations

import numpy as np
import pandas as pd


def test_paper_table_shows_missing_spread_and_runs_as_dashes():
    from privtrans.dpformer import experiments

    df = pd.DataFrame({"method": ["transformer", "dpformer", "dpformer"], "epsilon": [5, 5, 5], "seed": [0, 0, 1],
                       "ndcg@10": [0.04, 0.05, 0.07], "hit@10": [0.1, 0.1, 0.1]})
    t = experiments.paper_table(df, ["transformer", "dpformer", "gru"], [5]).set_index("method")
    assert t.loc["Transformer (vanilla)", "ε=5 NDCG@10"] == "4.00 ± –"    # one seed: no std, not 0
    assert t.loc["DPFormer", "ε=5 NDCG@10"] == f"6.00 ± {100 * np.std([0.05, 0.07], ddof=1):.2f}"
    assert t.loc["GRU", "ε=5 NDCG@10"] == "–"
    assert t.loc["Relative improvement", "ε=5 NDCG@10"] == "+50%"
