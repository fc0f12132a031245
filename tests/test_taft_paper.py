"""The paper's numbers as the TAFT notebooks and claims read them (privtrans.taft.paper): every value
of ``data/taft/paper_tables.csv`` (read here with the csv module, not through the module) is where
``table`` puts it, rows and columns in the file's order; the numbers the notebooks and the claims
files quote or derive (Table 7's 7.3 and 9.0 points, Table 8's 1.4x and 3.1x, the Average rows, ...)
follow from what the module returns; a wrong name is refused with the known names."""

import csv
from pathlib import Path

import pandas as pd
import pytest

from privtrans.taft import paper

DATA = Path(__file__).resolve().parents[1] / "data" / "taft"


def rows(name):
    with open(DATA / name, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_every_value_of_the_file_is_in_its_table_in_the_files_order():
    raw = rows("paper_tables.csv")
    assert len(raw) == len(paper.values()) == 226
    names = list(dict.fromkeys(r["table"] for r in raw))
    assert names[:3] == ["Table 1", "Table 2", "Table 3"] and "Figure 2(c)" in names
    for name in names:
        mine = [r for r in raw if r["table"] == name]
        wide = paper.table(name)
        assert list(wide.columns) == ["dataset", *dict.fromkeys(r["column"] for r in mine)], name
        assert list(wide.dataset) == list(dict.fromkeys(r["dataset"] for r in mine)), name
        cells = wide.set_index("dataset")
        for r in mine:
            assert cells.loc[r["dataset"], r["column"]] == float(r["value"]), (name, r)
            assert paper.value(name, r["dataset"], r["column"]) == float(r["value"])
        # one cell per row of the file: nothing invented, nothing lost
        assert int(cells.notna().sum().sum()) == len(mine), name
    assert all(r["source"].startswith("Liu, Golatkar & Soatto 2024") and r["table"] in r["source"] for r in raw)


def test_table_1_as_notebook_02_shows_it():
    t1 = paper.table("Table 1")
    assert list(t1.columns) == ["dataset", "NLFT-7", "TAFT-7", "NLFT-1", "TAFT-1", "FC"]
    assert list(t1.dataset) == ["Caltech-256", "MIT-67", "Oxford Pets", "Stanford Dogs", "CUB-200",
                                "FGVC-Aircrafts", "Stanford Cars", "Average"]
    near = t1.loc[lambda d: d.dataset.isin(["Caltech-256", "Stanford Cars", "Average"])]
    assert near.set_index("dataset")["TAFT-1"].to_dict() == {"Caltech-256": 95.9, "Stanford Cars": 67.2,
                                                             "Average": 84.3}


@pytest.mark.parametrize("name", ["Table 1", "Table 2"])
def test_average_rows_are_the_mean_of_the_seven_datasets_to_the_printed_digit(name):
    t = paper.table(name).set_index("dataset")
    body = t.drop(index="Average")
    assert len(body) == 7
    assert ((body.mean() - t.loc["Average"]).abs() <= 0.05 + 1e-9).all(), (body.mean() - t.loc["Average"])


def test_the_numbers_the_notebooks_and_claims_quote_follow_from_the_tables():
    # Table 7 (notebook 08, claims.appendix.yaml): TAFT 93.2 vs L-RN50 86.0, +7.3 with full data;
    # TAFT 91.8 vs 82.8, +9.0 with 10 shards
    t7 = paper.table("Table 7").set_index("dataset")
    full, shards = t7[t7.index.str.endswith("shards=-")], t7[t7.index.str.endswith("shards=10")]
    assert len(full) == len(shards) == 3
    assert (round(full.TAFT.mean(), 1), round(full["L-RN50"].mean(), 1)) == (93.2, 86.0)
    assert round((full.TAFT - full["L-RN50"]).mean(), 1) == 7.3
    assert (round(shards.TAFT.mean(), 1), round(shards["L-RN50"].mean(), 1)) == (91.8, 82.8)
    assert round((shards.TAFT - shards["L-RN50"]).mean(), 1) == 9.0
    # Table 8 (notebook 06): 0.204 vs 0.147 s to train (1.4x), 0.065 vs 0.021 s to predict (3.1x)
    t8 = paper.table("Table 8")
    assert list(t8.columns) == ["dataset", "NLFT train", "TAFT train", "NLFT inference", "TAFT inference"]
    r = t8.iloc[0]
    assert (r["TAFT train"], r["NLFT train"], r["TAFT inference"], r["NLFT inference"]) == (0.204, 0.147, 0.065, 0.021)
    assert (round(r["TAFT train"] / r["NLFT train"], 1), round(r["TAFT inference"] / r["NLFT inference"], 1)) == (1.4, 3.1)
    # Table 10: gaps +7.1, +11.8, +17.7 at N = 10, 25, 50
    t10 = paper.table("Table 10").iloc[0]
    assert [round(t10[f"TAFT N={n}"] - t10[f"Soup N={n}"], 1) for n in (10, 25, 50)] == [7.1, 11.8, 17.7]
    # Table 2: average gap +9.1, +13.0, +13.5 (the Average row)
    avg = paper.table("Table 2").set_index("dataset").loc["Average"]
    assert [round(avg[f"TAFT N={n}"] - avg[f"Soup N={n}"], 1) for n in (10, 25, 50)] == [9.1, 13.0, 13.5]
    # Table 12: RSL - CE on the three datasets' mean, +10.0 at R = 1 and -3.5 at R = 10
    t12 = paper.table("Table 12").set_index("dataset")
    for radius, gap in (("R=1", 10.0), ("R=10", -3.5)):
        sel = t12[t12.index.str.endswith(radius)]
        assert len(sel) == 3 and round((sel.RSL - sel.CE).mean(), 1) == gap
    # Table 9: CLS - MAE (T-ViT-B) +17.2, L - B (CLS) +5.2, CLIP - CLS (T-ViT-L) +2.1 on the means
    t9 = paper.table("Table 9").set_index("dataset")
    assert round((t9["CLS / T-ViT-B"] - t9["MAE / T-ViT-B"]).mean(), 1) == 17.2
    assert round((t9["CLS / T-ViT-L"] - t9["CLS / T-ViT-B"]).mean(), 1) == 5.2
    assert round((t9["CLIP / T-ViT-L"] - t9["CLS / T-ViT-L"]).mean(), 1) == 2.1
    # single values the claims state
    assert paper.value("Figure 1(c)", "N=50", "speed-up of shard retraining over full retraining") == 50.0
    assert paper.value("Figure 2(a)", "hardest dataset", "RSL minus MSE") == 23.8


def test_hyperparameters_are_tables_4_to_6_without_the_source():
    raw = rows("paper_hyperparameters.csv")
    hp = paper.hyperparameters()
    assert list(hp.columns) == ["table", "dataset", "method", "configuration"]
    assert len(hp) == len(raw) and set(hp.table) == {"Table 4", "Table 5", "Table 6"}
    assert hp.to_dict("records") == [{k: r[k] for k in hp.columns} for r in raw]
    cell = hp[(hp.table == "Table 4") & (hp.dataset == "Caltech-256") & (hp.method == "TAFT-1")]
    assert cell.configuration.tolist() == ["LR=1e-3, κ=15, PT=F, CLS=F"]


def test_unknown_names_are_refused_with_what_is_known():
    with pytest.raises(ValueError, match=r"no paper table 'Table 13'; known: Table 1, Table 2, Table 3, "):
        paper.table("Table 13")
    with pytest.raises(ValueError, match="Figure 2\\(c\\)"):
        paper.table("table 7")
    with pytest.raises(KeyError, match="Table 7 / Caltech-256 / TAFT: 0 matches"):
        paper.value("Table 7", "Caltech-256", "TAFT")  # the dataset is 'Caltech-256 shards=-'


def test_a_repeated_cell_is_refused_and_order_is_the_files(tmp_path, monkeypatch):
    """A file with the same cell twice cannot answer ``value``; a table lists datasets and columns
    in the order they first appear, not sorted."""
    d = tmp_path / "taft"
    d.mkdir()
    pd.DataFrame([("T", "zeta", "b", 1.0, "s"), ("T", "zeta", "a", 2.0, "s"), ("T", "alpha", "b", 3.0, "s"),
                  ("T", "alpha", "a", 4.0, "s"), ("U", "x", "c", 5.0, "s"), ("U", "x", "c", 6.0, "s")],
                 columns=["table", "dataset", "column", "value", "source"]).to_csv(d / "paper_tables.csv", index=False)
    monkeypatch.setattr(paper, "data_dir", lambda chapter: tmp_path / chapter)
    t = paper.table("T")
    assert list(t.columns) == ["dataset", "b", "a"] and list(t.dataset) == ["zeta", "alpha"]
    assert t.values.tolist() == [["zeta", 1.0, 2.0], ["alpha", 3.0, 4.0]]
    assert paper.value("T", "alpha", "a") == 4.0
    with pytest.raises(KeyError, match="U / x / c: 2 matches"):
        paper.value("U", "x", "c")
