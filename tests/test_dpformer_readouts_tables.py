"""privtrans.dpformer.readouts.tables (Tables 1 and 2, Figures 6 and 7) on hand-made run tables, and the
verdicts the claims files give on them, including the cases that must fail or not be judged."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from privtrans.book import claims
from privtrans.dpformer.readouts import curves, runs, tables

from dpformer_readout_inputs import (
    EPS,
    FIG7_GRID,
    MOST_POPULAR,
    NDCG,
    NOT_SHOWN,
    NULL_SEEDS,
    N_USERS,
    TABLE_METHODS,
    _noise,
    grid_runs,
    not_held,
    null_curves,
    null_table_runs,
    refs,
    table_curves,
    table_runs,
    verdicts,
)


# ------------------------------------------------------------------------------------ Tables 1, 2
def test_table1_values_by_hand():
    out = tables.table1_movielens(table_runs(), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert out["dpformer_ge_vanilla"] == [True, True]
    assert out["vanilla_gt_untied"] == [True, True] and out["vanilla_gt_rnns"] == [True, True]
    # judged on paired seeds: the fixture's seeds move every method alike, so each difference is exact
    d = out["dpformer_vs_vanilla"]
    assert [p["mean"] for p in d] == pytest.approx([0.006, 0.002]) and [p["seeds"] for p in d] == [[0, 1], [0, 1]]
    assert [p["lo"] for p in d] == pytest.approx([0.006, 0.002]) and all(p["held"] for p in d)
    assert all(p["planned"] == p["n"] == 2 for p in d)
    assert out["dpformer_beats_vanilla_all"] is out["vanilla_beats_untied_all"] is out["vanilla_beats_rnns_all"] is True
    mp = out["best_dp_vs_most_popular"]   # shown only
    assert (mp["method"], mp["epsilon"], mp["held"]) == ("dpformer", 8, True)
    assert mp["mean"] == pytest.approx(0.022)
    # the Re-Attention gate reads the other arms only: the untied Transformer at ε = 8 is the highest
    gate = out["other_dp_vs_most_popular"]
    assert out["other_arms"] == ["gru", "lstm", "transformer_untied"]
    assert (gate["method"], gate["epsilon"], gate["held"]) == ("transformer_untied", 8, True)
    assert gate["mean"] == pytest.approx(0.015)
    rises = out["other_dp_curve_rises"]   # Figure 6's gate: the untied curves rise 0.01 on every seed
    assert rises["method"] == "transformer_untied" and rises["held"] is True and rises["mean"] == pytest.approx(0.01)
    assert out["rel_improvement"] == pytest.approx([0.036 / 0.030 - 1, 0.042 / 0.040 - 1])
    assert out["ndcg_by_method"]["dpformer"] == pytest.approx([0.036, 0.042])
    assert out["ndcg"]["transformer"]["e8"]["ndcg"] == pytest.approx(0.040)
    assert out["ndcg"]["transformer"]["e8"]["ndcg_std"] == pytest.approx(0.002 / math.sqrt(2))
    assert out["most_popular_ndcg"] == MOST_POPULAR and out["best_dp_ndcg"] == pytest.approx(0.042)
    # the fixture's vanilla curves fall back slightly differently per seed at epoch 6
    assert out["spread_vanilla"] == pytest.approx(0.004, rel=0.01) and out["spread_dpformer"] == pytest.approx(0.002)
    assert out["spread_ratio"] == pytest.approx(0.5, rel=0.01)
    assert out["n_seeds"] == 2 and out["epsilon_spent_max"] == pytest.approx(7.99)


def test_table1_claims_hold_on_a_table_that_shows_them():
    v = verdicts({"table1_movielens": tables.table1_movielens(table_runs(), table_curves(), refs(False), EPS,
                                                                n_test_users=N_USERS)})
    for cid in ("table1_dpformer_ge_vanilla", "table1_vanilla_beats_untied", "table1_vanilla_beats_rnns",
                "fig6_reattention_stabler"):
        assert v[cid]["verdict"] == "held" and v[cid]["held"] is True, v[cid]["reason"]


def test_dpformer_below_vanilla_at_one_eps_fails_the_claim():
    ndcg = {**NDCG, "dpformer": (0.036, 0.039)}  # below vanilla's 0.040 at ε = 8
    out = tables.table1_movielens(table_runs(ndcg), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert out["dpformer_ge_vanilla"] == [True, False]
    assert [p["held"] for p in out["dpformer_vs_vanilla"]] == [True, False]
    # the seeds move both methods alike, so DPFormer − vanilla is −0.001 on every seed at ε = 8: the
    # interval lies below zero and the data exclude the paper's statement
    row = verdicts({"table1_movielens": out})["table1_dpformer_ge_vanilla"]
    assert row["verdict"] == "contradicted" and row["held"] is False, row["reason"]


def test_one_rnn_above_vanilla_fails_the_claim():
    ndcg = {**NDCG, "lstm": (0.021, 0.045)}
    out = tables.table1_movielens(table_runs(ndcg), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert out["vanilla_gt_rnns"] == [True, False] and out["vanilla_beats_rnns_all"] is False
    row = verdicts({"table1_movielens": out})["table1_vanilla_beats_rnns"]
    assert row["verdict"] == "contradicted" and "LSTM/ε = 8" in row["reason"]


def test_orderings_need_paired_seeds_to_clear_zero():
    # a mean ahead but seeds that disagree: the interval crosses zero, so not held (the precondition
    # still holds through the other, tight cells)
    runs = table_runs()
    runs.loc[(runs.method == "dpformer") & (runs.epsilon == 8), "ndcg@10"] = [0.030, 0.054]  # mean 0.042
    out = tables.table1_movielens(runs, table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert out["dpformer_ge_vanilla"] == [True, True]  # the old rule on means would have passed
    p = out["dpformer_vs_vanilla"][1]
    assert p["lo"] < 0 < p["hi"] and p["held"] is False
    # the interval contains zero: these seeds cannot tell, and the reason says how many would
    row = verdicts({"table1_movielens": out})["table1_dpformer_ge_vanilla"]
    assert row["verdict"] == "inconclusive" and row["held"] is False
    assert "paired seeds would resolve" in row["reason"]
    # an exact tie never holds, and decides nothing: [0, 0] on the margin is a measure that cannot tell
    tie = tables.table1_movielens(table_runs({**NDCG, "dpformer": NDCG["transformer"]}), table_curves(),
                                    refs(False), EPS, n_test_users=N_USERS)
    assert tie["dpformer_beats_vanilla_all"] is False
    assert verdicts({"table1_movielens": tie})["table1_dpformer_ge_vanilla"]["verdict"] == "not judged"
    # one seed: no interval, not judged
    one = tables.table1_movielens(table_runs(seeds=(0,)), table_curves(seeds=(0,)), refs(False), EPS,
                                    n_test_users=N_USERS)
    assert one["dpformer_beats_vanilla_all"] is None
    row = verdicts({"table1_movielens": one})["table1_dpformer_ge_vanilla"]
    assert row["verdict"] == "not judged" and row["held"] is None   # (one seed: the precondition has no interval)


def test_re_attention_claims_are_not_judged_when_no_other_arm_beats_most_popular():
    """MostPopular above every arm but vanilla and DPFormer: the gate of the DPFormer − vanilla claims
    reads the other arms, so they are not judged; the orderings of sharing and of the RNNs have no gate
    and are judged on their own metric."""
    r = refs(False)
    r.loc[r.method == "most_popular", "ndcg@10"] = 0.037   # above every other arm, below vanilla at ε = 8
    out = tables.table1_movielens(table_runs(), table_curves(), r, EPS, n_test_users=N_USERS)
    assert out["other_dp_vs_most_popular"]["held"] is False
    v = verdicts({"table1_movielens": out})
    for cid in ("table1_dpformer_ge_vanilla", "table1_dpformer_ge_vanilla_hit"):
        assert v[cid]["verdict"] == "not judged" and NOT_SHOWN in v[cid]["reason"], cid
    for cid in ("table1_vanilla_beats_untied", "table1_vanilla_beats_rnns"):
        assert v[cid]["verdict"] == "held", (cid, v[cid]["reason"])
    # Figure 6's gate reads the other arms' curves, which still rise: judged
    assert v["fig6_reattention_stabler"]["verdict"] == "held"


def test_the_gate_reads_no_compared_arm():
    """Moving vanilla and DPFormer anywhere (here far below MostPopular) leaves the gate of the claims
    that compare them unchanged, and a contradiction between them stays a contradiction; and where the
    other arms never learn, DPFormer far above vanilla is still not judged."""
    base = tables.table1_movielens(table_runs(), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    low = {**NDCG, "transformer": (0.010, 0.012), "dpformer": (0.005, 0.006)}   # both below MostPopular (0.02)
    moved = tables.table1_movielens(table_runs(low), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert moved["other_dp_vs_most_popular"] == base["other_dp_vs_most_popular"]
    assert moved["best_dp_vs_most_popular"]["method"] == "transformer_untied"
    row = verdicts({"table1_movielens": moved})["table1_dpformer_ge_vanilla"]
    assert row["verdict"] == "contradicted", row["reason"]   # the old gate (the compared arms) said "not judged"
    # the other arms at MostPopular's level, vanilla and DPFormer far above it: not judged
    flat = {**NDCG, "gru": (0.02, 0.02), "lstm": (0.02, 0.02), "transformer_untied": (0.02, 0.02)}
    out = tables.table1_movielens(table_runs(flat), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert out["best_dp_vs_most_popular"]["held"] is True and out["other_dp_vs_most_popular"]["held"] is False
    assert verdicts({"table1_movielens": out})["table1_dpformer_ge_vanilla"]["verdict"] == "not judged"
    # every gated claim of the chapter names what it compares and what its gate reads, and they differ
    for c in claims.load("dpformer")["claims"]:
        if c.get("precondition"):
            assert c["compares"] and c["gate_reads"] and not set(c["compares"]) & set(c["gate_reads"]), c["id"]
            test = c.get("interval") or c["predicate"]
            for arm in ("dpformer_vs", "vanilla_vs", "tied_vs", "diag_paired", "lean_low", "kl_"):
                assert not (arm in c["precondition"] and arm in test), c["id"]


def test_a_missing_method_is_none_and_not_judged_never_zero():
    runs = table_runs(drop=[("dpformer", None)])
    out = tables.table1_movielens(runs, table_curves(spread={"transformer": 0.004}), refs(False), EPS,
                                    n_test_users=N_USERS)
    assert out["dpformer_ge_vanilla"] is None and out["rel_improvement"] is None
    assert "dpformer" not in out["ndcg_by_method"] and out["spread_dpformer"] is None
    assert out["vanilla_gt_untied"] == [True, True]  # what can be judged still is
    v = verdicts({"table1_movielens": out})
    for cid in ("table1_dpformer_ge_vanilla", "fig6_reattention_stabler"):
        assert v[cid]["verdict"] == "not judged" and v[cid]["held"] is None, v[cid]["reason"]
        assert "cannot evaluate" in v[cid]["reason"] or "was not computed" in v[cid]["reason"]


def test_a_missing_eps_of_one_method_is_none():
    out = tables.table1_movielens(table_runs(drop=[("transformer_untied", 8)]), table_curves(), refs(False), EPS,
                                    n_test_users=N_USERS)
    assert out["vanilla_gt_untied"] is None
    assert out["ndcg_by_method"]["transformer_untied"] == [pytest.approx(0.025), None]
    assert out["dpformer_ge_vanilla"] == [True, True]
    assert verdicts({"table1_movielens": out})["table1_vanilla_beats_untied"]["verdict"] == "not judged"


def test_one_seed_has_no_spread_so_stability_is_not_judged():
    out = tables.table1_movielens(table_runs(seeds=(0,)), table_curves(seeds=(0,)), refs(False), EPS,
                                    n_test_users=N_USERS)
    assert out["spread_vanilla"] is None and out["spread_dpformer"] is None and out["spread_ratio"] is None
    assert out["ndcg"]["transformer"]["e5"]["ndcg_std"] is None
    assert verdicts({"table1_movielens": out})["fig6_reattention_stabler"]["verdict"] == "not judged"


def test_fig6_is_judged_on_paired_fall_back_shares():
    # vanilla rises 0.01, then falls back 0.004 (×1.00, ×1.01) per (ε, seed); DPFormer never falls back:
    # vanilla's share of movement backwards is 0.004 / 0.014, DPFormer's 0
    out = tables.table1_movielens(table_runs(), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    st = out["dpformer_stabler"]
    assert st["n"] == st["planned"] == 4 and st["keys"] == [[5.0, 0], [5.0, 1], [8.0, 0], [8.0, 1]]
    assert st["a"] == pytest.approx([0.004 / 0.014, 0.00404 / 0.01404] * 2) and st["b"] == pytest.approx([0.0] * 4)
    assert st["held"] is True
    # a tie (both fall back alike) never holds
    tie = tables.table1_movielens(table_runs(), table_curves(fall={"transformer": 0.004, "dpformer": 0.004}),
                                    refs(False), EPS, n_test_users=N_USERS)
    assert tie["dpformer_stabler"]["mean"] == pytest.approx(0.0) and tie["dpformer_stabler"]["held"] is False
    assert verdicts({"table1_movielens": tie})["fig6_reattention_stabler"]["verdict"] != "held"
    # a noisy difference: DPFormer falls back less on some (ε, seed) and more on others
    runs = table_curves(fall={"transformer": 0.004, "dpformer": 0.0})
    sel = (runs.method == "dpformer") & (runs.epoch == 6) & (runs.epsilon == 8)
    runs.loc[sel, "ndcg@10"] -= 0.012   # DPFormer now falls back 0.012 at ε = 8: the interval crosses 0
    noisy_out = tables.table1_movielens(table_runs(), runs, refs(False), EPS, n_test_users=N_USERS)
    noisy = noisy_out["dpformer_stabler"]
    assert noisy["lo"] < 0 < noisy["hi"] and noisy["held"] is False
    assert verdicts({"table1_movielens": noisy_out})["fig6_reattention_stabler"]["verdict"] == "inconclusive"


def test_less_stable_dpformer_fails_fig6():
    out = tables.table1_movielens(table_runs(), table_curves(fall={"transformer": 0.0, "dpformer": 0.003}),
                                    refs(False), EPS, n_test_users=N_USERS)
    assert out["dpformer_stabler"]["mean"] < 0
    assert verdicts({"table1_movielens": out})["fig6_reattention_stabler"]["verdict"] == "contradicted"


def test_ties_of_quantised_readings_are_not_contradicted():
    """Both methods reach the pair's common target at the same evaluation (every 2 epochs) at every
    (ε, seed), and hit the same number of the N users at every seed. The readings cannot show a
    difference below one step (2 epochs; 1/N), so the intervals carry that resolution: the claims come
    out inconclusive, where the zero-width interval [0, 0] had called them contradicted."""
    seeds = (0, 1, 2)
    curve_table = table_curves(seeds=seeds, fall={"transformer": 0.0, "dpformer": 0.0})
    run_table = table_runs(seeds=seeds)
    for m, hits in (("transformer", (38, 25, 39)), ("dpformer", (38, 25, 39))):
        for e in EPS:
            run_table.loc[(run_table.method == m) & (run_table.epsilon == e), "hit@10"] = [h / N_USERS for h in hits]
    assert curves.evaluation_step(curve_table) == 2.0
    fast = curves.faster_convergence(curve_table)
    assert fast["a"] == fast["b"] == [4.0] * 6 and fast["resolution"] == 2.0
    assert fast["mean"] == 0 and fast["lo"] < 0 < fast["hi"]
    # the same epochs without their resolution: the zero-width interval the issue reported
    bare = runs.paired_keyed(*curves.convergence_epochs(curve_table))
    assert (bare["lo"], bare["hi"]) == (0.0, 0.0)
    t1 = tables.table1_movielens(run_table, curve_table, refs(False), EPS, n_test_users=N_USERS)
    t2 = tables.table2_amazon_like(run_table, curve_table, refs(), EPS, grid_runs(FIG7_GRID, seeds=(0, 1)),
                                     n_test_users=N_USERS)
    assert t1["n_test_users"] == N_USERS
    assert all(p["resolution"] == 1 / N_USERS and p["lo"] < 0 < p["hi"] for p in t1["dpformer_vs_vanilla_hit"])
    assert all(p["resolution"] == 0.0 for p in t1["dpformer_vs_vanilla"])   # NDCG@10: not on a grid
    v = verdicts({"table1_movielens": t1, "table2_amazon_like": t2})
    for cid in ("fig6_dpformer_converges_faster", "fig6_amazon_dpformer_converges_faster",
                "table1_dpformer_ge_vanilla_hit", "table2_dpformer_ge_vanilla_hit"):
        assert v[cid]["verdict"] == "inconclusive", (cid, v[cid]["reason"])


def test_n_test_users_is_required_and_checked():
    with pytest.raises(TypeError, match="n_test_users"):
        tables.table1_movielens(table_runs(), table_curves(), refs(False), EPS)
    for bad in (0, -5, 943.0, None, True):
        with pytest.raises(ValueError, match="n_test_users must be the number of evaluated test users"):
            tables.table1_movielens(table_runs(), table_curves(), refs(False), EPS, n_test_users=bad)


def test_missing_reference_row_raises():
    with pytest.raises(ValueError, match="most_popular"):
        tables.table1_movielens(table_runs(), table_curves(), refs(False).iloc[0:0], EPS, n_test_users=N_USERS)
    with pytest.raises(ValueError, match="oracle"):
        tables.table2_amazon_like(table_runs(), table_curves(), refs(False), EPS, grid_runs(FIG7_GRID),
                                    n_test_users=N_USERS)


def test_table2_grid_diagonal_by_hand():
    out = tables.table2_amazon_like(table_runs(), table_curves(), refs(), EPS, grid_runs(FIG7_GRID, seeds=(0, 1)),
                                      n_test_users=N_USERS)
    assert out["diag_diffs"] == pytest.approx([0.010, 0.020])
    assert out["grid_diffs"] == pytest.approx({"B256_lr0.005": 0.010, "B256_lr0.02": -0.010,
                                               "B512_lr0.005": 0.001, "B512_lr0.02": 0.020})
    assert out["frac_grid_dpformer_wins"] == pytest.approx(0.75)
    assert out["oracle_ndcg"] == 0.2 and out["oracle_hit"] == 0.3
    assert out["grid_seeds_per_cell"] == 2
    d = out["diag_paired"]
    assert [(p["batch_size"], p["lr"]) for p in d] == [(256, 0.005), (512, 0.02)]
    assert [p["keys"] for p in d] == [[0, 1], [0, 1]] and d[1]["a"] == pytest.approx([0.049, 0.051])
    assert [p["mean"] for p in d] == pytest.approx([0.010, 0.020]) and all(p["held"] for p in d)
    v = verdicts({"table2_amazon_like": out})
    for cid in ("fig7_dpformer_wins_diagonal", "table2_dpformer_ge_vanilla", "table2_vanilla_beats_untied",
                "table2_vanilla_beats_rnns", "fig6_amazon_reattention_stabler"):
        assert v[cid]["verdict"] == "held", (cid, v[cid]["reason"])


def test_fig7_tie_noise_and_one_seed():
    # a tie on one diagonal cell never holds, and decides nothing
    tie = {**FIG7_GRID, (512, 0.02): {"transformer": 0.030, "dpformer": 0.030}}
    out = tables.table2_amazon_like(table_runs(), table_curves(), refs(), EPS, grid_runs(tie, seeds=(0, 1)),
                                      n_test_users=N_USERS)
    assert out["diag_paired"][1]["held"] is False
    assert verdicts({"table2_amazon_like": out})["fig7_dpformer_wins_diagonal"]["verdict"] == "not judged"
    # a noisy difference: ahead on one seed, behind on the other
    g = grid_runs(FIG7_GRID, seeds=(0, 1))
    g.loc[(g.method == "dpformer") & (g.batch_size == 512) & (g.lr == 0.02), "ndcg@10"] = [0.055, 0.020]
    out = tables.table2_amazon_like(table_runs(), table_curves(), refs(), EPS, g, n_test_users=N_USERS)
    p = out["diag_paired"][1]
    assert p["mean"] > 0 and p["lo"] < 0 < p["hi"] and p["held"] is False
    assert verdicts({"table2_amazon_like": out})["fig7_dpformer_wins_diagonal"]["verdict"] == "inconclusive"
    # one seed per cell: no interval, the claim is not judged
    one = tables.table2_amazon_like(table_runs(), table_curves(), refs(), EPS, grid_runs(FIG7_GRID),
                                      n_test_users=N_USERS)
    row = verdicts({"table2_amazon_like": one})["fig7_dpformer_wins_diagonal"]
    assert row["verdict"] == "not judged" and row["held"] is None and "fewer than two" in row["reason"]


def test_grid_hole_raises_never_counts_as_a_loss():
    holed = grid_runs(FIG7_GRID)
    holed = holed[~((holed.batch_size == 512) & (holed.lr == 0.02) & (holed.method == "dpformer"))]
    with pytest.raises(ValueError, match="without a run"):
        tables.table2_amazon_like(table_runs(), table_curves(), refs(), EPS, holed, n_test_users=N_USERS)


def test_null_tables_1_2_figures_6_7():
    table1 = tables.table1_movielens(null_table_runs(1), null_curves(2), refs(False), EPS, n_test_users=N_USERS)
    assert table1["other_dp_vs_most_popular"]["held"] is True and table1["other_dp_curve_rises"]["held"] is True
    # every run planned; a flat noisy run that never reaches 90 % of the pair's best counts as failed
    assert table1["dpformer_stabler"]["planned"] == 2 * len(NULL_SEEDS) and table1["dpformer_stabler"]["n"] >= 2
    not_held(verdicts({"table1_movielens": table1}),
             ("table1_vanilla_beats_untied", "table1_dpformer_ge_vanilla", "table1_vanilla_beats_rnns",
              "fig6_reattention_stabler", "table1_dpformer_ge_vanilla_hit", "fig6_dpformer_converges_faster",
              "table1_gain_grows_as_eps_shrinks"))
    e = _noise(3)
    grid = pd.DataFrame([{"method": m, "epsilon": 8, "seed": s, "batch_size": B, "lr": lr, "ndcg@10": 0.05 + e(),
                          "hit@10": 0.1, "epsilon_spent": 7.99}
                         for m in ("transformer", "dpformer") for B in (256, 512) for lr in (0.005, 0.02)
                         for s in NULL_SEEDS])
    table2 = tables.table2_amazon_like(null_table_runs(4), null_curves(5), refs(), EPS, grid, n_test_users=N_USERS)
    assert table2["grid_seeds_per_cell"] == len(NULL_SEEDS)
    not_held(verdicts({"table2_amazon_like": table2}),
             ("table2_dpformer_ge_vanilla", "table2_vanilla_beats_untied", "table2_vanilla_beats_rnns",
              "fig6_amazon_reattention_stabler", "fig7_dpformer_wins_diagonal", "table2_dpformer_ge_vanilla_hit",
              "table2_gain_smaller_at_low_eps", "fig6_amazon_dpformer_converges_faster"))


def test_movielens_gain_grows_as_eps_shrinks_by_hand():
    """§5: on MovieLens the gain grows as ε shrinks; the reverse pairing of Table 2's claim."""
    out = tables.table1_movielens(table_runs(), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    g = out["gain_at_smallest_minus_largest_eps"]
    # +0.2 at ε = 5, +0.05 at ε = 8 (seed offsets aside): larger at the smaller ε
    assert g["mean"] == pytest.approx(0.2 - 0.05, abs=0.01) and g["lo"] > 0
    assert g["mean"] == pytest.approx(-out["gain_at_largest_minus_smallest_eps"]["mean"])
    assert verdicts({"table1_movielens": out})["table1_gain_grows_as_eps_shrinks"]["verdict"] == "held"
    flat = dict(NDCG, dpformer=[0.0315, 0.042])  # +5 % at ε = 5, +5 % at ε = 8: no growth
    out = tables.table1_movielens(table_runs(flat), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert verdicts({"table1_movielens": out})["table1_gain_grows_as_eps_shrinks"]["verdict"] != "held"


def test_the_limitation_drop_needs_all_three_eps():
    """§6: DPFormer drops more from ε = 8 to 5 than from 10 to 8; without ε = 8 nothing is judged."""
    assert tables.limitation_drop(table_runs(), EPS)["n"] == 0
    ndcg = {"dpformer": [0.05, 0.07, 0.075], "transformer": [0.04, 0.06, 0.07]}
    runs = table_runs(ndcg, seeds=(0, 1, 2), epsilons=[5, 8, 10])
    d = tables.limitation_drop(runs, [5, 8, 10])
    assert d["mean"] == pytest.approx(0.02 - 0.005) and d["n"] == 3 and d["held"] is True
    steady = tables.limitation_drop(table_runs({"dpformer": [0.05, 0.06, 0.07]}, seeds=(0, 1, 2),
                                                 epsilons=[5, 8, 10]), [5, 8, 10])
    assert steady["mean"] == pytest.approx(0.0, abs=1e-12) and steady["held"] is not True
    # a seed without its ε = 8 run is a lost seed, never a silent drop
    lost = tables.limitation_drop(runs[~((runs.seed == 2) & (runs.epsilon == 8))], [5, 8, 10])
    assert lost["planned"] == 3 and lost["n"] == 2


def test_null_limitation_drop():
    """The same NDCG@10 at ε = 5, 8, 10 (noise only): no sharper drop from 8 to 5 (judged at paper)."""
    e = _noise(11)
    runs = pd.DataFrame([{"method": m, "label": m, "epsilon": eps, "seed": s, "batch_size": 256, "lr": 0.02,
                          "ndcg@10": 0.05 + e(), "hit@10": 0.1 + e(), "epsilon_spent": eps - 0.01}
                         for m in TABLE_METHODS for eps in (5, 8, 10) for s in NULL_SEEDS])
    out = tables.table1_movielens(runs, null_curves(12, epsilons=(5, 8, 10)), refs(False), (5, 8, 10),
                                    n_test_users=N_USERS)
    assert out["limitation_drop"]["n"] == len(NULL_SEEDS)
    not_held(verdicts({"table1_movielens": out}, profile="paper"), ("table1_limitation_drop",))
    ci = verdicts({"table1_movielens": out})["table1_limitation_drop"]
    assert ci["verdict"] == "not judged" and "judged at paper" in ci["reason"]


def test_null_dp_learns_beyond_popularity():
    """Every DP arm no better than MostPopular (0.2 points under it, plus noise): the setting checks (the
    Re-Attention claims' gate, shown with its interval) are judged and not held, and the gated claims
    are not judged. (Exactly at MostPopular the best of six cells clears it more often than 2.5 %: the
    check reads the best cell, as the gate does.)"""
    t1 = tables.table1_movielens(null_table_runs(13, base=MOST_POPULAR - 0.002), null_curves(14), refs(False),
                                   EPS, n_test_users=N_USERS)
    t2 = tables.table2_amazon_like(null_table_runs(15, base=MOST_POPULAR - 0.002), null_curves(16), refs(), EPS,
                                     grid_runs(FIG7_GRID, seeds=(0, 1)), n_test_users=N_USERS)
    rows = verdicts({"table1_movielens": t1, "table2_amazon_like": t2})
    not_held(rows, ("table1_dp_learns_beyond_popularity", "table2_dp_learns_beyond_popularity"))
    assert "points (MostPopular 2.00 %)" in rows["table1_dp_learns_beyond_popularity"]["value"]
    assert rows["table1_dpformer_ge_vanilla"]["reason"].startswith(NOT_SHOWN)
    # far above MostPopular: held, and the gate opens
    up = tables.table1_movielens(null_table_runs(13), null_curves(14), refs(False), EPS, n_test_users=N_USERS)
    assert verdicts({"table1_movielens": up})["table1_dp_learns_beyond_popularity"]["verdict"] == "held"
