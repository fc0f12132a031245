"""privtrans.taft.tables: the mean ± sd tables printed beside the paper's."""

import pandas as pd
import pytest

from privtrans.taft import tables

RUNS = pd.DataFrame({"method": ["TAFT"] * 3 + ["Soup"] * 3 + ["TAFT"] * 2,
                     "shards": [10] * 6 + [50] * 2,
                     "seed": [0, 1, 2, 0, 1, 2, 0, 1],
                     "accuracy": [0.80, 0.82, 0.84, 0.70, 0.71, 0.75, 0.60, 0.66]})


def test_each_cell_is_the_mean_and_sd_over_seeds_in_points():
    t = tables.mean_sd(RUNS, index="method", columns="shards", label="N={column} {stat}")
    assert list(t.columns) == ["N=10 mean", "N=50 mean", "N=10 std", "N=50 std"]
    assert t.loc["TAFT", "N=10 mean"] == 82.0 and t.loc["TAFT", "N=10 std"] == 2.0
    assert t.loc["Soup", "N=10 mean"] == pytest.approx(round(100 * (0.70 + 0.71 + 0.75) / 3, 1))
    assert t.loc["TAFT", "N=50 std"] == pytest.approx(round(100 * RUNS.accuracy[6:].std(), 1))
    assert pd.isna(t.loc["Soup", "N=50 mean"])  # no runs: empty, not zero


def test_the_default_label_and_a_multi_column_index():
    t = tables.mean_sd(RUNS, index=["method", "shards"], columns="seed")
    assert "0 mean" in t.columns and "2 std" in t.columns
    assert t.loc[("TAFT", 10), "1 mean"] == 82.0


def test_a_missing_column_is_named():
    with pytest.raises(KeyError, match=r"no column\(s\) \['task'\]"):
        tables.mean_sd(RUNS, index="method", columns="task")
