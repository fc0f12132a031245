"""privtrans.dpformer.readouts.grid (Figure 2) on hand-made grids, and its claims' verdicts, including
ties, noise and a null."""

from __future__ import annotations

import pandas as pd
import pytest

from privtrans.dpformer.readouts import grid

from dpformer_readout_inputs import NULL_SEEDS, _noise, fig2_grid, not_held, refs, verdicts


# ------------------------------------------------------------------------------------ Figure 2
def test_fig2_by_hand():
    out = grid.fig2_sharing_grid(fig2_grid(seeds=(0, 1)), refs(False))
    assert out["n_cells"] == 4 and out["frac_cells_sharing_wins"] == 1.0 and out["seeds_per_cell"] == 2
    assert out["mean_gain_points"] == pytest.approx(1.0)
    vs = out["tied_vs_untied"]
    assert [p["arm"] for p in vs] == ["transformer_untied", "transformer_untied_half"]
    assert vs[0]["a"] == pytest.approx([0.03, 0.04, 0.05, 0.06]) and vs[0]["mean"] == pytest.approx(0.010)
    assert vs[0]["held"] is True and vs[1]["held"] is True and out["sharing_beats_untied"] is True
    assert out["best_cell_shared"] == {"batch_size": 512, "lr": 0.02} and out["best_shared_is_largest"]
    assert len(out["largest_vs_other_cells"]) == 3 and out["largest_cell_beats_others"] is True
    # the best cell of each half of the grid, per seed: B = 512 against 256, then lr 0.02 against 0.005
    lvs = out["large_vs_small"]
    assert set(lvs) == {"transformer", "transformer_untied", "transformer_untied_half"}
    b, lr = lvs["transformer"]["batch_size"], lvs["transformer"]["lr"]
    assert (b["large"], b["small"], lr["large"], lr["small"]) == ([512], [256], [0.02], [0.005])
    assert b["a"] == pytest.approx([0.059, 0.061]) and b["b"] == pytest.approx([0.039, 0.041])
    assert b["mean"] == pytest.approx(0.02) and lr["mean"] == pytest.approx(0.01)
    v = verdicts({"fig2_sharing_grid": out})
    assert v["fig2_sharing_beats_untied"]["verdict"] == "held" and v["fig2_best_large_batch_lr"]["verdict"] == "held"


def test_fig2_tie_and_noisy_gains_fail():
    for gains in ((0.0, 0.0, 0.0, 0.0), (0.01, -0.01, 0.01, -0.01), (0.02, -0.005, 0.015, -0.004)):
        out = grid.fig2_sharing_grid(fig2_grid(gains), refs(False))
        assert out["tied_vs_untied"][0]["held"] is False, gains
        assert verdicts({"fig2_sharing_grid": out})["fig2_sharing_beats_untied"]["verdict"] in (
            "contradicted", "inconclusive", "not judged"), gains  # an exact tie is not judged: it cannot tell


def test_fig2_one_seed_per_cell_leaves_the_best_cell_unjudged():
    out = grid.fig2_sharing_grid(fig2_grid(), refs(False))
    assert out["seeds_per_cell"] == 1 and out["largest_cell_beats_others"] is None
    assert out["large_vs_small"]["transformer"]["batch_size"]["n"] == 1
    row = verdicts({"fig2_sharing_grid": out})["fig2_best_large_batch_lr"]
    assert row["verdict"] == "not judged" and row["held"] is None and "fewer than two" in row["reason"]


def test_fig2_best_cell_elsewhere_fails():
    # the tied arm's best cell at the smallest B and lr, by the same margin on every seed: the data
    # exclude "a large batch size is best" for that arm (judged at the family level of six cells, so three
    # seeds with an exact difference, not two seeds that differ)
    g = fig2_grid(seeds=(0, 1, 2))
    sel = (g.method == "transformer") & (g.batch_size == 256) & (g.lr == 0.005)
    g.loc[sel, "ndcg@10"] = [0.09 - 0.001, 0.09 + 0.001, 0.09 + 0.003]   # the fixture's seed offsets
    out = grid.fig2_sharing_grid(g, refs(False))
    assert out["best_cell_shared"] == {"batch_size": 256, "lr": 0.005} and not out["best_shared_is_largest"]
    assert verdicts({"fig2_sharing_grid": out})["fig2_best_large_batch_lr"]["verdict"] == "contradicted"


def test_fig2_halves_of_an_odd_grid_leave_the_middle_out():
    cells = {(B, lr): {0: B / 1e4 + lr, 1: B / 1e4 + lr + 0.001} for B in (256, 512, 1024) for lr in (0.001, 0.005, 0.009)}
    out = grid.large_vs_small_halves(cells)
    assert (out["batch_size"]["large"], out["batch_size"]["small"]) == ([1024], [256])
    assert (out["lr"]["large"], out["lr"]["small"], out["lr"]["at_batch_sizes"]) == ([0.009], [0.001], [1024])
    assert out["batch_size"]["mean"] == pytest.approx((1024 - 256) / 1e4) and out["lr"]["mean"] == pytest.approx(0.008)
    assert grid.large_vs_small_halves({(256, 0.01): {0: 0.1, 1: 0.2}})["batch_size"]["n"] == 0


def test_fig2_is_judged_on_its_own_metric_whatever_most_popular():
    """Figure 2 compares the tie with the untied arms; no gate reads those arms against MostPopular,
    so a MostPopular above every arm changes no verdict."""
    r = refs(False)
    r.loc[r.method == "most_popular", "ndcg@10"] = 0.1
    out = grid.fig2_sharing_grid(fig2_grid(seeds=(0, 1)), r)
    assert out["best_dp_vs_most_popular"]["held"] is False   # shown
    v = verdicts({"fig2_sharing_grid": out})
    assert v["fig2_sharing_beats_untied"]["verdict"] == "held" and v["fig2_best_large_batch_lr"]["verdict"] == "held"


def test_fig2_missing_arm_raises():
    g = fig2_grid()
    with pytest.raises(ValueError, match="transformer_untied_half"):
        grid.fig2_sharing_grid(g[g.method != "transformer_untied_half"], refs(False))


def test_null_figure_2():
    # every arm and every cell alike: no sharing effect and no batch-size or learning-rate effect
    e = _noise(6)
    cells = pd.DataFrame([{"method": m, "epsilon": 5, "seed": s, "batch_size": B, "lr": lr, "ndcg@10": 0.05 + e(),
                          "hit@10": 0.1, "epsilon_spent": 4.99}
                         for m in ("transformer", "transformer_untied", "transformer_untied_half")
                         for B in (256, 512, 1024, 2048) for lr in (0.001, 0.005, 0.009) for s in NULL_SEEDS])
    out = grid.fig2_sharing_grid(cells, refs(False))
    assert out["seeds_per_cell"] == len(NULL_SEEDS) and out["n_cells"] == 12
    not_held(verdicts({"fig2_sharing_grid": out}), ("fig2_sharing_beats_untied", "fig2_best_large_batch_lr"))
