"""privtrans.dpformer.experiments: the paper-style table shows a missing spread and a missing run as
dashes, and each run's rows are read from its typed spec."""

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


def _result(method, epsilon, seed, ndcg):
    from privtrans.dpformer.train import RunSpec

    spec = RunSpec(method=method, epsilon=epsilon, seed=seed, batch_size=128, lr=0.01, d=32)
    return {"spec": spec.as_dict(), "ndcg@10": ndcg, "hit@10": 2 * ndcg, "test_ce": 5.0, "seconds": 1.5,
            "privacy": {"epsilon": epsilon, "delta": 1e-5, "noise_multiplier": 0.9, "steps": 40} if epsilon else None,
            "privacy_label": "dp" if epsilon else "non-private",
            "curve": [{"epoch": 5, "ndcg@10": ndcg / 2, "hit@10": ndcg}, {"epoch": 10, "ndcg@10": ndcg, "hit@10": 2 * ndcg}]}


def test_each_run_s_row_and_curve_are_read_from_its_typed_spec():
    """A run's stored spec is read back as a RunSpec: its fields land in the row, a non-private run
    has no privacy budget, and each logged epoch is a curve row of its run."""
    from privtrans.dpformer import experiments

    results = [_result("dpformer", 5.0, 0, 0.05), _result("transformer", None, 1, 0.07)]
    rows = experiments.frame(results)
    assert rows[["method", "epsilon", "seed", "batch_size", "lr", "d"]].iloc[0].tolist() == ["dpformer", 5.0, 0, 128, 0.01, 32]
    assert pd.isna(rows.loc[1, "epsilon_spent"]) and rows.loc[0, "sigma"] == 0.9
    curves = experiments.curves(results)
    assert curves[["method", "seed", "epoch", "ndcg@10"]].values.tolist() == [
        ["dpformer", 0, 5, 0.025], ["dpformer", 0, 10, 0.05], ["transformer", 1, 5, 0.035], ["transformer", 1, 10, 0.07]]
