"""privtrans.dpformer.readouts on small hand-made inputs (no training): the recorded values, and the
verdicts the chapter's claims files give on them, including the cases that must fail or not be judged."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privtrans.book import claims
from privtrans.book.session import _jsonable
from privtrans.dpformer import claim31, readouts

# every "A beats B" claim (an interval against a margin >= 0) whose readout is fed A = B plus noise
# below (the null tests, at the end of this file); tests/test_claims.py requires the list to be complete
NULL_TESTED = {
    "fig2_sharing_beats_untied", "fig2_best_large_batch_lr",
    "table1_vanilla_beats_untied", "table1_dpformer_ge_vanilla", "table1_vanilla_beats_rnns",
    "fig6_reattention_stabler", "table1_dpformer_ge_vanilla_hit", "fig6_dpformer_converges_faster",
    "table2_dpformer_ge_vanilla_hit", "table2_gain_smaller_at_low_eps", "fig6_amazon_dpformer_converges_faster",
    "table2_dpformer_ge_vanilla", "table2_vanilla_beats_untied", "table2_vanilla_beats_rnns",
    "fig6_amazon_reattention_stabler", "fig7_dpformer_wins_diagonal",
    "fig9_shift_shrinks_with_eps", "fig9_low_eps_leans_to_rare_items",
    "fig9_reattention_lowers_rare_item_attention", "fig9_reattention_closer_to_nonprivate",
    "premise_setting_can_show", "premise_dpformer_beats_vanilla", "premise_gain_grows_as_eps_shrinks",
    "premise_fig6_stabler", "premise_dp_distracts_attention", "premise_reattention_lowers_tail_attention",
    "premise_fig2_sharing_beats_untied", "premise_fig7_dpformer_wins_diagonal", "premise_dpformer_gain_size",
    "fig3_speedup_grows_with_vocabulary", "fig3_speedup_in_paper_range",
    "table1_gain_grows_as_eps_shrinks", "table1_limitation_drop",
    "table1_dp_learns_beyond_popularity", "table2_dp_learns_beyond_popularity",
}
NOT_SHOWN = "not judged: the setting cannot show the effect"   # the reason of a failed precondition

TABLE_METHODS = ("gru", "lstm", "transformer_untied", "transformer", "dpformer")
# mean NDCG@10 per method at ε = 5, 8 (seeds add ±0.001 around it)
NDCG = {"gru": (0.020, 0.022), "lstm": (0.021, 0.023), "transformer_untied": (0.025, 0.035),
        "transformer": (0.030, 0.040), "dpformer": (0.036, 0.042)}
EPS = [5, 8]
N_USERS = 1000  # the evaluated users behind HIT@10 (its resolution 1/N)
MOST_POPULAR = 0.02  # below the untied Transformer's seeds at ε = 8 (0.034, 0.036): the Re-Attention gate holds


# ------------------------------------------------------------------------------------ fixtures
def table_runs(ndcg=NDCG, seeds=(0, 1), epsilons=EPS, drop=()) -> pd.DataFrame:
    """One row per (method, ε, seed); ``drop`` removes (method, ε) pairs (ε None: every ε)."""
    rows = []
    for m, vals in ndcg.items():
        for e, v in zip(epsilons, vals):
            if (m, e) in drop or (m, None) in drop:
                continue
            for k, s in enumerate(seeds):
                off = 0.001 * (2 * k - 1) if len(seeds) > 1 else 0.0
                rows.append({"method": m, "label": m, "epsilon": e, "seed": s, "batch_size": 256, "lr": 0.02,
                             "ndcg@10": v + off, "hit@10": 2 * (v + off), "epsilon_spent": e - 0.01})
    return pd.DataFrame(rows)


def table_curves(seeds=(0, 1), spread=None, fall=None) -> pd.DataFrame:
    """Curves at epochs 2, 4, 6; seed s is offset by ±spread[method]/√2 (the same at every epoch) so its
    std is spread[method]; from epoch 4 to 6 the k-th seed falls back by fall[method]·(1 + 0.01 k). The
    untied Transformer (an arm the Re-Attention claims do not compare, what Figure 6's gate reads) rises
    and never falls back."""
    spread = spread or {"transformer": 0.004, "dpformer": 0.002, "transformer_untied": 0.002}
    fall = fall or {"transformer": 0.004, "dpformer": 0.0}
    rows = []
    for m, sd in spread.items():
        for e in EPS:
            for k, s in enumerate(seeds):
                for epoch, base in ((2, 0.01), (4, 0.02), (6, 0.02 - fall.get(m, 0.0) * (1 + 0.01 * k))):
                    off = (sd / math.sqrt(2)) * (1 if k else -1) if len(seeds) > 1 else 0.0
                    rows.append({"method": m, "epsilon": e, "seed": s, "epoch": epoch,
                                 "ndcg@10": base + off, "hit@10": 2 * base})
    return pd.DataFrame(rows)


def refs(oracle=True) -> pd.DataFrame:
    rows = [{"method": "most_popular", "label": "MostPopular", "ndcg@10": MOST_POPULAR, "hit@10": 0.1}]
    if oracle:
        rows.append({"method": "oracle", "label": "Oracle", "ndcg@10": 0.2, "hit@10": 0.3})
    return pd.DataFrame(rows)


def grid_runs(values: dict, epsilon=8, seeds=(0,)) -> pd.DataFrame:
    """values: {(B, lr): {method: ndcg}}; with several seeds, seed k adds 0.001·(2k − 1) to every
    method alike (so paired differences between methods are exact)."""
    rows = []
    for k, s in enumerate(seeds):
        off = 0.001 * (2 * k - 1) if len(seeds) > 1 else 0.0
        rows += [{"method": m, "epsilon": epsilon, "seed": s, "batch_size": B, "lr": lr, "ndcg@10": v + off,
                  "hit@10": 2 * (v + off), "epsilon_spent": epsilon - 0.01}
                 for (B, lr), per in values.items() for m, v in per.items()]
    return pd.DataFrame(rows)


FIG7_GRID = {(256, 0.005): {"transformer": 0.030, "dpformer": 0.040},    # diagonal, +0.010
             (256, 0.02): {"transformer": 0.030, "dpformer": 0.020},     # off-diagonal, -0.010
             (512, 0.005): {"transformer": 0.030, "dpformer": 0.031},    # off-diagonal, +0.001
             (512, 0.02): {"transformer": 0.030, "dpformer": 0.050}}     # diagonal, +0.020


def fig2_grid(gains=(0.010, 0.012, 0.008, 0.010), seeds=(0,)) -> pd.DataFrame:
    """Tied NDCG 0.03 ... 0.06 over the cells (best at the largest B and lr); untied = tied − gain,
    untied d/2 = tied − 0.02."""
    cells = [(256, 0.005), (256, 0.02), (512, 0.005), (512, 0.02)]
    values = {cell: {"transformer": tied, "transformer_untied": tied - gain, "transformer_untied_half": tied - 0.02}
              for cell, gain, tied in zip(cells, gains, (0.03, 0.04, 0.05, 0.06))}
    return grid_runs(values, epsilon=5, seeds=seeds)


def verdicts(readout_values: dict[str, dict], profile: str = "ci") -> dict[str, dict]:
    """{claim id: summary row} for the chapter's claims, from values as the session records them."""
    doc = claims.load("dpformer")
    results = {nb: {"profile": profile, "values": _jsonable(v)} for nb, v in readout_values.items()}
    return {r["id"]: r for r in claims.evaluate("dpformer", doc, results, profile)}


# ------------------------------------------------------------------------------------ Tables 1, 2
def test_table1_values_by_hand():
    out = readouts.table1_movielens(table_runs(), table_curves(), refs(False), EPS, n_test_users=N_USERS)
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
    v = verdicts({"table1_movielens": readouts.table1_movielens(table_runs(), table_curves(), refs(False), EPS,
                                                                n_test_users=N_USERS)})
    for cid in ("table1_dpformer_ge_vanilla", "table1_vanilla_beats_untied", "table1_vanilla_beats_rnns",
                "fig6_reattention_stabler"):
        assert v[cid]["verdict"] == "held" and v[cid]["held"] is True, v[cid]["reason"]


def test_dpformer_below_vanilla_at_one_eps_fails_the_claim():
    ndcg = {**NDCG, "dpformer": (0.036, 0.039)}  # below vanilla's 0.040 at ε = 8
    out = readouts.table1_movielens(table_runs(ndcg), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert out["dpformer_ge_vanilla"] == [True, False]
    assert [p["held"] for p in out["dpformer_vs_vanilla"]] == [True, False]
    # the seeds move both methods alike, so DPFormer − vanilla is −0.001 on every seed at ε = 8: the
    # interval lies below zero and the data exclude the paper's statement
    row = verdicts({"table1_movielens": out})["table1_dpformer_ge_vanilla"]
    assert row["verdict"] == "contradicted" and row["held"] is False, row["reason"]


def test_one_rnn_above_vanilla_fails_the_claim():
    ndcg = {**NDCG, "lstm": (0.021, 0.045)}
    out = readouts.table1_movielens(table_runs(ndcg), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert out["vanilla_gt_rnns"] == [True, False] and out["vanilla_beats_rnns_all"] is False
    row = verdicts({"table1_movielens": out})["table1_vanilla_beats_rnns"]
    assert row["verdict"] == "contradicted" and "LSTM/ε = 8" in row["reason"]


def test_orderings_need_paired_seeds_to_clear_zero():
    # a mean ahead but seeds that disagree: the interval crosses zero, so not held (the precondition
    # still holds through the other, tight cells)
    runs = table_runs()
    runs.loc[(runs.method == "dpformer") & (runs.epsilon == 8), "ndcg@10"] = [0.030, 0.054]  # mean 0.042
    out = readouts.table1_movielens(runs, table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert out["dpformer_ge_vanilla"] == [True, True]  # the old rule on means would have passed
    p = out["dpformer_vs_vanilla"][1]
    assert p["lo"] < 0 < p["hi"] and p["held"] is False
    # the interval contains zero: these seeds cannot tell, and the reason says how many would
    row = verdicts({"table1_movielens": out})["table1_dpformer_ge_vanilla"]
    assert row["verdict"] == "inconclusive" and row["held"] is False
    assert "paired seeds would resolve" in row["reason"]
    # an exact tie never holds: the interval [0, 0] lies at the margin, which excludes "beats"
    tie = readouts.table1_movielens(table_runs({**NDCG, "dpformer": NDCG["transformer"]}), table_curves(),
                                    refs(False), EPS, n_test_users=N_USERS)
    assert tie["dpformer_beats_vanilla_all"] is False
    assert verdicts({"table1_movielens": tie})["table1_dpformer_ge_vanilla"]["verdict"] == "contradicted"
    # one seed: no interval, not judged
    one = readouts.table1_movielens(table_runs(seeds=(0,)), table_curves(seeds=(0,)), refs(False), EPS,
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
    out = readouts.table1_movielens(table_runs(), table_curves(), r, EPS, n_test_users=N_USERS)
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
    base = readouts.table1_movielens(table_runs(), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    low = {**NDCG, "transformer": (0.010, 0.012), "dpformer": (0.005, 0.006)}   # both below MostPopular (0.02)
    moved = readouts.table1_movielens(table_runs(low), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert moved["other_dp_vs_most_popular"] == base["other_dp_vs_most_popular"]
    assert moved["best_dp_vs_most_popular"]["method"] == "transformer_untied"
    row = verdicts({"table1_movielens": moved})["table1_dpformer_ge_vanilla"]
    assert row["verdict"] == "contradicted", row["reason"]   # the old gate (the compared arms) said "not judged"
    # the other arms at MostPopular's level, vanilla and DPFormer far above it: not judged
    flat = {**NDCG, "gru": (0.02, 0.02), "lstm": (0.02, 0.02), "transformer_untied": (0.02, 0.02)}
    out = readouts.table1_movielens(table_runs(flat), table_curves(), refs(False), EPS, n_test_users=N_USERS)
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
    out = readouts.table1_movielens(runs, table_curves(spread={"transformer": 0.004}), refs(False), EPS,
                                    n_test_users=N_USERS)
    assert out["dpformer_ge_vanilla"] is None and out["rel_improvement"] is None
    assert "dpformer" not in out["ndcg_by_method"] and out["spread_dpformer"] is None
    assert out["vanilla_gt_untied"] == [True, True]  # what can be judged still is
    v = verdicts({"table1_movielens": out})
    for cid in ("table1_dpformer_ge_vanilla", "fig6_reattention_stabler"):
        assert v[cid]["verdict"] == "not judged" and v[cid]["held"] is None, v[cid]["reason"]
        assert "cannot evaluate" in v[cid]["reason"] or "was not computed" in v[cid]["reason"]


def test_a_missing_eps_of_one_method_is_none():
    out = readouts.table1_movielens(table_runs(drop=[("transformer_untied", 8)]), table_curves(), refs(False), EPS,
                                    n_test_users=N_USERS)
    assert out["vanilla_gt_untied"] is None
    assert out["ndcg_by_method"]["transformer_untied"] == [pytest.approx(0.025), None]
    assert out["dpformer_ge_vanilla"] == [True, True]
    assert verdicts({"table1_movielens": out})["table1_vanilla_beats_untied"]["verdict"] == "not judged"


def test_one_seed_has_no_spread_so_stability_is_not_judged():
    out = readouts.table1_movielens(table_runs(seeds=(0,)), table_curves(seeds=(0,)), refs(False), EPS,
                                    n_test_users=N_USERS)
    assert out["spread_vanilla"] is None and out["spread_dpformer"] is None and out["spread_ratio"] is None
    assert out["ndcg"]["transformer"]["e5"]["ndcg_std"] is None
    assert verdicts({"table1_movielens": out})["fig6_reattention_stabler"]["verdict"] == "not judged"


def test_fig6_is_judged_on_paired_fall_back_shares():
    # vanilla rises 0.01, then falls back 0.004 (×1.00, ×1.01) per (ε, seed); DPFormer never falls back:
    # vanilla's share of movement backwards is 0.004 / 0.014, DPFormer's 0
    out = readouts.table1_movielens(table_runs(), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    st = out["dpformer_stabler"]
    assert st["n"] == st["planned"] == 4 and st["keys"] == [[5.0, 0], [5.0, 1], [8.0, 0], [8.0, 1]]
    assert st["a"] == pytest.approx([0.004 / 0.014, 0.00404 / 0.01404] * 2) and st["b"] == pytest.approx([0.0] * 4)
    assert st["held"] is True
    # a tie (both fall back alike) never holds
    tie = readouts.table1_movielens(table_runs(), table_curves(fall={"transformer": 0.004, "dpformer": 0.004}),
                                    refs(False), EPS, n_test_users=N_USERS)
    assert tie["dpformer_stabler"]["mean"] == pytest.approx(0.0) and tie["dpformer_stabler"]["held"] is False
    assert verdicts({"table1_movielens": tie})["fig6_reattention_stabler"]["verdict"] != "held"
    # a noisy difference: DPFormer falls back less on some (ε, seed) and more on others
    runs = table_curves(fall={"transformer": 0.004, "dpformer": 0.0})
    sel = (runs.method == "dpformer") & (runs.epoch == 6) & (runs.epsilon == 8)
    runs.loc[sel, "ndcg@10"] -= 0.012   # DPFormer now falls back 0.012 at ε = 8: the interval crosses 0
    noisy_out = readouts.table1_movielens(table_runs(), runs, refs(False), EPS, n_test_users=N_USERS)
    noisy = noisy_out["dpformer_stabler"]
    assert noisy["lo"] < 0 < noisy["hi"] and noisy["held"] is False
    assert verdicts({"table1_movielens": noisy_out})["fig6_reattention_stabler"]["verdict"] == "inconclusive"


def test_a_flat_curve_is_neither_stabler_nor_faster():
    """A DPFormer that never learns: its curve jitters around where it started (no net rise). It has
    fewer drops than a vanilla that learns and falls back once, which the summed drops called "more
    stable", and it is at 90 % of its own flat best at once, which "90 % of its own best" called
    "faster". Against a share of movement and a common target it is neither; an exactly constant
    curve has no movement at all and is a lost run, never a pass."""
    cv = table_curves(seeds=(0, 1, 2), fall={"transformer": 0.002, "dpformer": 0.0})
    for k, jitter in enumerate((0.0002, 0.0003, 0.00025)):
        for e in EPS:
            sel = (cv.method == "dpformer") & (cv.epsilon == e) & (cv.seed == k)
            cv.loc[sel, "ndcg@10"] = [0.0100, 0.0100 + jitter, 0.0100]
    runs = table_runs(seeds=(0, 1, 2))
    out = readouts.table1_movielens(runs, cv, refs(False), EPS, n_test_users=N_USERS)
    # the summed drops would call it stabler (0.0002 against vanilla's 0.002) ...
    assert readouts.fall_back(cv, "dpformer")[(5.0, 0)] < readouts.fall_back(cv, "transformer")[(5.0, 0)] / 5
    assert readouts.fall_back_share(cv, "dpformer")[(5.0, 1)] == pytest.approx(0.5)   # ... but half its movement is
    v = verdicts({"table1_movielens": out})
    assert out["dpformer_stabler"]["hi"] < 0 and v["fig6_reattention_stabler"]["verdict"] == "contradicted"
    fast = out["dpformer_converges_faster"]
    assert fast["b"] == [8.0] * 6   # never at 90 % of vanilla's best: one evaluation after its last
    assert fast["mean"] < 0 and v["fig6_dpformer_converges_faster"]["verdict"] == "contradicted"
    # exactly constant: no share, a lost run on every (ε, seed); not held
    cv.loc[cv.method == "dpformer", "ndcg@10"] = 0.01
    const = readouts.table1_movielens(runs, cv, refs(False), EPS, n_test_users=N_USERS)
    assert const["dpformer_stabler"]["planned"] == 6 and const["dpformer_stabler"]["n"] == 0
    assert verdicts({"table1_movielens": const})["fig6_reattention_stabler"]["verdict"] != "held"
    one = readouts.table1_movielens(table_runs(), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert one["curves_falling_back"] == 4  # vanilla's four (ε, seed) curves fall back, DPFormer's none


def test_less_stable_dpformer_fails_fig6():
    out = readouts.table1_movielens(table_runs(), table_curves(fall={"transformer": 0.0, "dpformer": 0.003}),
                                    refs(False), EPS, n_test_users=N_USERS)
    assert out["dpformer_stabler"]["mean"] < 0
    assert verdicts({"table1_movielens": out})["fig6_reattention_stabler"]["verdict"] == "contradicted"


def test_hit_orderings_gain_by_eps_and_convergence_by_hand():
    out = readouts.table1_movielens(table_runs(), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    # the fixture's HIT@10 is twice its NDCG@10, seed by seed
    assert [p["mean"] for p in out["dpformer_vs_vanilla_hit"]] == pytest.approx([0.012, 0.004])
    assert out["hit_by_method"]["dpformer"] == pytest.approx([0.072, 0.084])
    # relative gain 0.036/0.030 − 1 = 0.2 at ε = 5 and 0.042/0.040 − 1 = 0.05 at ε = 8 (seed offsets aside):
    # smaller at the larger ε, so "smaller at ε = 5 than at 10" is contradicted
    g = out["gain_at_largest_minus_smallest_eps"]
    assert g["mean"] == pytest.approx(0.05 - 0.2, abs=0.01) and g["hi"] < 0
    v = verdicts({"table1_movielens": out, "table2_amazon_like": {**out, "grid_diffs": {}}})
    assert v["table1_dpformer_ge_vanilla_hit"]["verdict"] == "held"
    assert v["table2_gain_smaller_at_low_eps"]["verdict"] == "contradicted"
    # the pair's common target is 90 % of the better best (0.021 or 0.022): DPFormer reaches it at epoch 2,
    # vanilla at epoch 4: one evaluation (2 epochs) sooner
    rows = [{"method": m, "epsilon": e, "seed": s, "epoch": ep, "ndcg@10": val, "hit@10": 0.0}
            for e in EPS for s in (0, 1, 2)
            for m, curve in (("transformer", (0.010, 0.020 + 0.001 * s, 0.019)), ("dpformer", (0.019 + 0.001 * s, 0.020, 0.021)))
            for ep, val in zip((2, 4, 6), curve)]
    fast = readouts.faster_convergence(pd.DataFrame(rows))
    assert fast["mean"] == pytest.approx(2.0) and fast["n"] == 6 and fast["held"] is True
    va, dp = readouts.convergence_epochs(pd.DataFrame(rows))
    assert va == {(e, s): 4.0 for e in (5.0, 8.0) for s in (0, 1, 2)}
    assert dp == {(e, s): 2.0 for e in (5.0, 8.0) for s in (0, 1, 2)}


def test_ties_of_quantised_readings_are_not_contradicted():
    """Both methods reach the pair's common target at the same evaluation (every 2 epochs) at every
    (ε, seed), and hit the same number of the N users at every seed. The readings cannot show a
    difference below one step (2 epochs; 1/N), so the intervals carry that resolution: the claims come
    out inconclusive, where the zero-width interval [0, 0] had called them contradicted."""
    seeds = (0, 1, 2)
    curves = table_curves(seeds=seeds, fall={"transformer": 0.0, "dpformer": 0.0})
    runs = table_runs(seeds=seeds)
    for m, hits in (("transformer", (38, 25, 39)), ("dpformer", (38, 25, 39))):
        for e in EPS:
            runs.loc[(runs.method == m) & (runs.epsilon == e), "hit@10"] = [h / N_USERS for h in hits]
    assert readouts.evaluation_step(curves) == 2.0
    fast = readouts.faster_convergence(curves)
    assert fast["a"] == fast["b"] == [4.0] * 6 and fast["resolution"] == 2.0
    assert fast["mean"] == 0 and fast["lo"] < 0 < fast["hi"]
    # the same epochs without their resolution: the zero-width interval the issue reported
    bare = readouts.paired_keyed(*readouts.convergence_epochs(curves))
    assert (bare["lo"], bare["hi"]) == (0.0, 0.0)
    t1 = readouts.table1_movielens(runs, curves, refs(False), EPS, n_test_users=N_USERS)
    t2 = readouts.table2_amazon_like(runs, curves, refs(), EPS, grid_runs(FIG7_GRID, seeds=(0, 1)),
                                     n_test_users=N_USERS)
    assert t1["n_test_users"] == N_USERS
    assert all(p["resolution"] == 1 / N_USERS and p["lo"] < 0 < p["hi"] for p in t1["dpformer_vs_vanilla_hit"])
    assert all(p["resolution"] == 0.0 for p in t1["dpformer_vs_vanilla"])   # NDCG@10: not on a grid
    v = verdicts({"table1_movielens": t1, "table2_amazon_like": t2})
    for cid in ("fig6_dpformer_converges_faster", "fig6_amazon_dpformer_converges_faster",
                "table1_dpformer_ge_vanilla_hit", "table2_dpformer_ge_vanilla_hit"):
        assert v[cid]["verdict"] == "inconclusive", (cid, v[cid]["reason"])


def test_evaluation_step_is_the_widest_gap_between_evaluations():
    def curves(epochs, method="transformer"):
        return pd.DataFrame([{"method": method, "epsilon": 5, "seed": 0, "epoch": ep, "ndcg@10": 0.1, "hit@10": 0.2}
                             for ep in epochs], columns=["method", "epsilon", "seed", "epoch", "ndcg@10", "hit@10"])

    assert readouts.evaluation_step(curves((2, 4, 6, 8))) == 2.0
    assert readouts.evaluation_step(curves((2, 4, 6, 8, 9))) == 2.0   # a run length off the interval
    assert readouts.evaluation_step(curves((5, 10, 12))) == 5.0
    assert readouts.evaluation_step(curves((1,))) == 1.0              # one evaluation: since epoch 0
    assert readouts.evaluation_step(curves((1, 2), method="gru")) == 0.0   # not a Figure 6 method
    assert readouts.evaluation_step(curves(())) == 0.0


def test_n_test_users_is_required_and_checked():
    with pytest.raises(TypeError, match="n_test_users"):
        readouts.table1_movielens(table_runs(), table_curves(), refs(False), EPS)
    for bad in (0, -5, 943.0, None, True):
        with pytest.raises(ValueError, match="n_test_users must be the number of evaluated test users"):
            readouts.table1_movielens(table_runs(), table_curves(), refs(False), EPS, n_test_users=bad)


def test_missing_reference_row_raises():
    with pytest.raises(ValueError, match="most_popular"):
        readouts.table1_movielens(table_runs(), table_curves(), refs(False).iloc[0:0], EPS, n_test_users=N_USERS)
    with pytest.raises(ValueError, match="oracle"):
        readouts.table2_amazon_like(table_runs(), table_curves(), refs(False), EPS, grid_runs(FIG7_GRID),
                                    n_test_users=N_USERS)


def test_table2_grid_diagonal_by_hand():
    out = readouts.table2_amazon_like(table_runs(), table_curves(), refs(), EPS, grid_runs(FIG7_GRID, seeds=(0, 1)),
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
    # a tie on one diagonal cell never holds
    tie = {**FIG7_GRID, (512, 0.02): {"transformer": 0.030, "dpformer": 0.030}}
    out = readouts.table2_amazon_like(table_runs(), table_curves(), refs(), EPS, grid_runs(tie, seeds=(0, 1)),
                                      n_test_users=N_USERS)
    assert out["diag_paired"][1]["held"] is False
    assert verdicts({"table2_amazon_like": out})["fig7_dpformer_wins_diagonal"]["verdict"] == "contradicted"
    # a noisy difference: ahead on one seed, behind on the other
    g = grid_runs(FIG7_GRID, seeds=(0, 1))
    g.loc[(g.method == "dpformer") & (g.batch_size == 512) & (g.lr == 0.02), "ndcg@10"] = [0.055, 0.020]
    out = readouts.table2_amazon_like(table_runs(), table_curves(), refs(), EPS, g, n_test_users=N_USERS)
    p = out["diag_paired"][1]
    assert p["mean"] > 0 and p["lo"] < 0 < p["hi"] and p["held"] is False
    assert verdicts({"table2_amazon_like": out})["fig7_dpformer_wins_diagonal"]["verdict"] == "inconclusive"
    # one seed per cell: no interval, the claim is not judged
    one = readouts.table2_amazon_like(table_runs(), table_curves(), refs(), EPS, grid_runs(FIG7_GRID),
                                      n_test_users=N_USERS)
    row = verdicts({"table2_amazon_like": one})["fig7_dpformer_wins_diagonal"]
    assert row["verdict"] == "not judged" and row["held"] is None and "fewer than two" in row["reason"]


def test_grid_hole_raises_never_counts_as_a_loss():
    holed = grid_runs(FIG7_GRID)
    holed = holed[~((holed.batch_size == 512) & (holed.lr == 0.02) & (holed.method == "dpformer"))]
    with pytest.raises(ValueError, match="without a run"):
        readouts.table2_amazon_like(table_runs(), table_curves(), refs(), EPS, holed, n_test_users=N_USERS)


# ------------------------------------------------------------------------------------ Figure 2
def test_fig2_by_hand():
    out = readouts.fig2_sharing_grid(fig2_grid(seeds=(0, 1)), refs(False))
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
        out = readouts.fig2_sharing_grid(fig2_grid(gains), refs(False))
        assert out["tied_vs_untied"][0]["held"] is False, gains
        assert verdicts({"fig2_sharing_grid": out})["fig2_sharing_beats_untied"]["verdict"] in (
            "contradicted", "inconclusive"), gains


def test_fig2_one_seed_per_cell_leaves_the_best_cell_unjudged():
    out = readouts.fig2_sharing_grid(fig2_grid(), refs(False))
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
    out = readouts.fig2_sharing_grid(g, refs(False))
    assert out["best_cell_shared"] == {"batch_size": 256, "lr": 0.005} and not out["best_shared_is_largest"]
    assert verdicts({"fig2_sharing_grid": out})["fig2_best_large_batch_lr"]["verdict"] == "contradicted"


def test_fig2_halves_of_an_odd_grid_leave_the_middle_out():
    cells = {(B, lr): {0: B / 1e4 + lr, 1: B / 1e4 + lr + 0.001} for B in (256, 512, 1024) for lr in (0.001, 0.005, 0.009)}
    out = readouts.large_vs_small_halves(cells)
    assert (out["batch_size"]["large"], out["batch_size"]["small"]) == ([1024], [256])
    assert (out["lr"]["large"], out["lr"]["small"], out["lr"]["at_batch_sizes"]) == ([0.009], [0.001], [1024])
    assert out["batch_size"]["mean"] == pytest.approx((1024 - 256) / 1e4) and out["lr"]["mean"] == pytest.approx(0.008)
    assert readouts.large_vs_small_halves({(256, 0.01): {0: 0.1, 1: 0.2}})["batch_size"]["n"] == 0


def test_fig2_is_judged_on_its_own_metric_whatever_most_popular():
    """Figure 2 compares the tie with the untied arms; no gate reads those arms against MostPopular,
    so a MostPopular above every arm changes no verdict."""
    r = refs(False)
    r.loc[r.method == "most_popular", "ndcg@10"] = 0.1
    out = readouts.fig2_sharing_grid(fig2_grid(seeds=(0, 1)), r)
    assert out["best_dp_vs_most_popular"]["held"] is False   # shown
    v = verdicts({"fig2_sharing_grid": out})
    assert v["fig2_sharing_beats_untied"]["verdict"] == "held" and v["fig2_best_large_batch_lr"]["verdict"] == "held"


def test_fig2_missing_arm_raises():
    g = fig2_grid()
    with pytest.raises(ValueError, match="transformer_untied_half"):
        readouts.fig2_sharing_grid(g[g.method != "transformer_untied_half"], refs(False))


# ------------------------------------------------------------------------------------ Figure 5
STATS = {"users": 943, "items": 1349, "interactions": 99287, "density": 0.078, "top20_share": 0.58,
         "gini": 0.6, "avg_len": 105.3}


def test_fig5_by_hand_and_claims():
    amz = {**STATS, "density": 0.0078, "top20_share": 0.51}
    out = readouts.fig5_long_tail(STATS, amz)
    assert out["sparsity_ratio"] == pytest.approx(10.0)
    assert out["movielens"]["users"] == 943 and out["amazon_like"]["top20_share"] == 0.51
    v = verdicts({"fig5_long_tail": out})
    assert v["fig5_long_tail"]["held"] is True and v["fig5_amazon_sparser"]["held"] is True
    flat = readouts.fig5_long_tail(STATS, {**amz, "top20_share": 0.45})
    assert verdicts({"fig5_long_tail": flat})["fig5_long_tail"]["held"] is False


def test_fig5_missing_field_raises_and_zero_density_is_none():
    with pytest.raises(ValueError, match="density"):
        readouts.fig5_long_tail(STATS, {k: v for k, v in STATS.items() if k != "density"})
    out = readouts.fig5_long_tail(STATS, {**STATS, "density": 0.0})
    assert out["sparsity_ratio"] is None
    assert verdicts({"fig5_long_tail": out})["fig5_amazon_sparser"]["held"] is None


# ------------------------------------------------------------------------------------ Claim 3.1
def claim31_inputs(phantom_err=1e-12, message="NotImplementedError: Parameter tying is not supported with Ghost"):
    errors = pd.DataFrame({m: [1e-13, 1e-13] for m in claim31.VARIANTS}, index=["M=30", "M=200"])
    errors.loc["M=200", "phantom"] = phantom_err
    errors["no_cross_term"] = [0.05, 0.1]
    ft = {"exact": np.array([1.0, 2.0]), "opacus_hooks": np.array([0.8, 1.9]),
          "phantom": "RuntimeError: Phantom Clipping does not see every use"}
    return errors, message, ft, {"abadi": 1e-14, "automatic": 2e-14}, 12


def test_claim31_by_hand_and_claims():
    out = readouts.claim31_phantom_exact(*claim31_inputs())
    assert out["phantom_max_rel_err"] == 1e-12 and out["no_cross_max_rel_err"] == 0.1
    assert out["opacus_functional_tie_max_underestimate"] == pytest.approx(0.2)
    assert out["opacus_ghost_refuses_tie"] and out["phantom_refuses_functional_tie"]
    assert out["clipped_grad_max_rel_err"] == 2e-14 and out["n_samples_checked"] == 12
    v = verdicts({"claim31_phantom_exact": out})
    assert v["claim31_phantom_norms_exact"]["held"] is True and v["claim31_ghost_cannot_tie"]["held"] is True


def test_claim31_inexact_norm_or_accepted_tie_fails():
    v = verdicts({"claim31_phantom_exact": readouts.claim31_phantom_exact(*claim31_inputs(phantom_err=1e-3))})
    assert v["claim31_phantom_norms_exact"]["held"] is False
    out = readouts.claim31_phantom_exact(*claim31_inputs(message=""))
    assert out["opacus_ghost_refuses_tie"] is False
    assert verdicts({"claim31_phantom_exact": out})["claim31_ghost_cannot_tie"]["held"] is False


def test_claim31_missing_variant_raises():
    errors, *rest = claim31_inputs()
    with pytest.raises(ValueError, match="opacus_hooks"):
        readouts.claim31_phantom_exact(errors.drop(columns="opacus_hooks"), *rest)


# ------------------------------------------------------------------------------------ Figure 3
def fig3_measured(Ms=(500, 1000, 2000), ghost_time=(2.0, 6.0, 20.0), chunked_at=()):
    rows = []
    for i, M in enumerate(Ms):
        per = {"nonprivate": (1.0, 100.0 * M / 500), "phantom": (1.2, 120.0 * M / 500),
               "paper_ghost": (ghost_time[i], 50.0 * (M / 500) ** 2), "opacus_ghost": (1.5, 130.0),
               "opacus_hooks": (3.0, 400.0)}
        for m, (t, x) in per.items():
            rows.append({"method": m, "M": M, "cpu_s": t, "extra_mb": x, "chunked": m == "paper_ghost" and M in chunked_at})
    return pd.DataFrame(rows)


def fig3_modelled(ratios=(10.0, 400.0), Ms=(3416, 23715), opacus=(3000, 600)):
    """The modelled table at the paper's vocabularies: Phantom fits 2400 and 480 (0.8× opacus ghost's)."""
    phantom = [2400, 480]
    return pd.DataFrame({"phantom": phantom, "opacus_ghost": list(opacus),
                         "Phantom / paper-style Ghost": list(ratios), "Phantom / non-private": [0.9] * len(Ms),
                         "Phantom / opacus ghost": [p / o for p, o in zip(phantom, opacus)]}, index=list(Ms))


def fig3_speed(ratio=1.2):
    """Five processes' interleaved timings as efficiency.speed_processes returns them: Phantom ``ratio`` ×
    non-private, ± 2 % from process to process."""
    return [{"order": [["phantom", "nonprivate"], ["nonprivate", "phantom"]],
             "times": {"phantom": [ratio * j, ratio * j * 1.01], "nonprivate": [1.0, 1.01]},
             "M": 2000, "L": 30, "B": 32, "d": 64, "threads": 1, "steps_per_repeat": 3, "warmup": 1}
            for j in (1.0, 1.02, 0.99, 1.01, 0.98)]


def fig3_ghost(small=1.5, large=30.0, Ms=(500, 2000), jitter=(1.0, 1.05, 0.96)):
    """Three processes per M of interleaved paper-style Ghost / Phantom timings (``speed_processes``
    with ``methods=GHOST_PAIR``): Ghost ``small``× Phantom at the smaller M and ``large``× at the larger,
    each process's ratio × ``jitter``."""
    def runs(M, ratio):
        return [{"order": [["paper_ghost", "phantom"], ["phantom", "paper_ghost"]],
                 "times": {"paper_ghost": [ratio * j * 0.1, ratio * j * 0.101], "phantom": [0.1, 0.101]},
                 "M": M, "L": 30, "B": 32, "d": 64, "threads": 1, "steps_per_repeat": 1, "warmup": 1}
                for j in jitter]
    return readouts.fig3_ghost_speed({Ms[0]: runs(Ms[0], small), Ms[1]: runs(Ms[1], large)})


def fig3_memory_rows(ratio=1.2, noise=0.02, repeats=5, Ms=(500, 1000, 2000), seed=0):
    """Repeated extra-memory rows as efficiency.memory_repeats returns them: Phantom ``ratio`` × non-private
    (100 MB per 500 items), each process's reading × exp(N(0, noise))."""
    rng = np.random.default_rng(seed)
    return [{"method": m, "M": M, "repeat": k,
             "extra_mb": (ratio if m == "phantom" else 1.0) * 100.0 * M / 500 * math.exp(rng.normal(0.0, noise))}
            for k in range(repeats) for M in Ms for m in ("phantom", "nonprivate")]


def test_fig3_by_hand_and_claims():
    out = readouts.fig3_memory_speed(fig3_measured(), fig3_modelled(), isolated=True)
    out.update(readouts.fig3_memory_vs_nonprivate(fig3_memory_rows()))
    speed = readouts.fig3_speed_vs_nonprivate(fig3_speed())
    ghost = fig3_ghost()
    assert speed["time_ratio_phantom_nonprivate_interleaved"]["gm"] == pytest.approx(1.2, rel=0.01)
    assert out["Ms"] == [500, 1000, 2000]
    assert out["time_ratio_ghost_phantom"] == pytest.approx([2 / 1.2, 6 / 1.2, 20 / 1.2])
    assert out["time_ratio_ghost_phantom_increasing"] is True
    assert out["time_ratio_phantom_nonprivate"] == pytest.approx([1.2] * 3)
    assert out["memory_ratio_phantom_nonprivate_max"] == pytest.approx(1.2)
    assert out["ghost_memory_loglog_slope"] == pytest.approx(2.0) and out["phantom_memory_loglog_slope"] == pytest.approx(1.0)
    assert out["ghost_unchunked_points"] == 3 and out["modelled_max_batch_ratio"] == [10.0, 400.0]
    assert out["modelled_max_batch_by_M"] == [
        {"M": 3416, "phantom_over_ghost": 10.0, "phantom_over_nonprivate": 0.9, "phantom_batch": 2400,
         "opacus_ghost_batch": 3000, "phantom_over_opacus_ghost": 0.8},
        {"M": 23715, "phantom_over_ghost": 400.0, "phantom_over_nonprivate": 0.9, "phantom_batch": 480,
         "opacus_ghost_batch": 600, "phantom_over_opacus_ghost": 0.8}]
    # Ghost / Phantom per process: the geometric mean over its rounds, then the interval across processes
    shown = ghost["time_ratio_ghost_phantom_interleaved"]
    assert [r["M"] for r in shown] == [500, 2000] and [r["processes"] for r in shown] == [3, 3]
    assert shown[1]["gm"] == pytest.approx(30.0 * (1.0 * 1.05 * 0.96) ** (1 / 3), rel=1e-3)
    assert shown[1]["lo"] < shown[1]["gm"] < shown[1]["hi"]
    g = ghost["ghost_log_speedup_growth"]
    assert (g["from_M"], g["to_M"], g["n"]) == (500, 2000, 3) and g["mean"] == pytest.approx(math.log(20.0))
    v = verdicts({"fig3_memory_speed": {**out, **speed, **ghost}})
    for cid in ("fig3_speedup_grows_with_vocabulary", "fig3_speedup_in_paper_range", "fig3_memory_in_paper_range",
                "fig3_memory_near_nonprivate", "fig3_ghost_memory_grows_with_vocabulary",
                "fig3_phantom_speed_near_nonprivate", "fig3_phantom_vs_opacus_ghost_batch"):
        assert v[cid]["verdict"] == "held", (cid, v[cid]["reason"])
    # Phantom fitting as much as opacus ghost (or more) is not what the memory model says: contradicted
    same = readouts.fig3_memory_speed(fig3_measured(), fig3_modelled(opacus=(2400, 400)), isolated=True)
    row = verdicts({"fig3_memory_speed": same})["fig3_phantom_vs_opacus_ghost_batch"]
    assert row["verdict"] == "contradicted", row["reason"]


def test_fig3_magnitudes_outside_the_papers_ranges_are_contradicted():
    # Phantom at 2× the non-private step time, every process: beyond the paper's 1.47× and our 1.5×
    row = verdicts({"fig3_memory_speed": readouts.fig3_speed_vs_nonprivate(fig3_speed(2.0))})
    assert row["fig3_phantom_speed_near_nonprivate"]["verdict"] == "contradicted"
    # Ghost / Phantom 1.7× at the largest M, every process: below the paper's 4-100×
    row = verdicts({"fig3_memory_speed": fig3_ghost(small=1.2, large=1.7)})["fig3_speedup_in_paper_range"]
    assert row["verdict"] == "contradicted" and "lies outside" in row["reason"], row["reason"]
    fast = verdicts({"fig3_memory_speed": fig3_ghost(large=150.0)})["fig3_speedup_in_paper_range"]
    assert fast["verdict"] == "contradicted"
    # near the band's edge, with the process-to-process spread: cannot tell
    edge = verdicts({"fig3_memory_speed": fig3_ghost(large=4.0, jitter=(0.9, 1.15, 1.0))})["fig3_speedup_in_paper_range"]
    assert edge["verdict"] == "inconclusive", edge["reason"]
    # a modelled batch ratio of 5× at ML-1M's vocabulary is below 10×
    small = readouts.fig3_memory_speed(fig3_measured(), fig3_modelled(ratios=(5.0, 400.0)), isolated=True)
    assert verdicts({"fig3_memory_speed": small})["fig3_memory_in_paper_range"]["verdict"] == "contradicted"
    # a model without the paper's vocabularies does not pass
    other = readouts.fig3_memory_speed(fig3_measured(), fig3_modelled(Ms=(1349, 3416)), isolated=True)
    assert verdicts({"fig3_memory_speed": other})["fig3_memory_in_paper_range"]["verdict"] == "contradicted"
    # peak memory measured in one process for every configuration is not judged
    shared = readouts.fig3_memory_speed(fig3_measured(), fig3_modelled(), isolated=False)
    v = verdicts({"fig3_memory_speed": shared})
    assert v["fig3_memory_near_nonprivate"]["verdict"] == v["fig3_ghost_memory_grows_with_vocabulary"]["verdict"] \
        == "not judged"


def test_fig3_memory_is_judged_per_M_across_repeated_processes():
    """Every M must clear 1.5× on its interval; one M clearly above contradicts; a ratio at the line with
    process noise is inconclusive although single processes read either side of it (the flip that one
    process per point gave: 1.11× and 1.62× in two builds)."""
    def judge(rows, isolated=True):
        rec = {**readouts.fig3_memory_speed(fig3_measured(), fig3_modelled(), isolated=isolated),
               **readouts.fig3_memory_vs_nonprivate(rows)}
        return verdicts({"fig3_memory_speed": rec})["fig3_memory_near_nonprivate"]

    rec = readouts.fig3_memory_vs_nonprivate(fig3_memory_rows(1.2))
    assert [r["M"] for r in rec["memory_ratio_phantom_nonprivate_by_M"]] == [500, 1000, 2000]
    assert all(r["gm"] == pytest.approx(1.2, rel=0.05) and r["repeats"] == 5 for r in rec["memory_ratio_phantom_nonprivate_by_M"])
    assert judge(fig3_memory_rows(1.2))["verdict"] == "held"
    high = [r if not (r["M"] == 500 and r["method"] == "phantom") else {**r, "extra_mb": r["extra_mb"] / 1.2 * 1.8}
            for r in fig3_memory_rows(1.2)]
    row = judge(high)
    assert row["verdict"] == "contradicted" and "M = 500" in row["reason"], row["reason"]
    edge_rows = fig3_memory_rows(1.5, noise=0.05, seed=3)
    edge = judge(edge_rows)
    assert edge["verdict"] == "inconclusive", edge["reason"]
    by = {(r["method"], r["M"], r["repeat"]): r["extra_mb"] for r in edge_rows}
    single = [by["phantom", M, k] / by["nonprivate", M, k] for M in (500, 1000, 2000) for k in range(5)]
    assert min(single) < 1.5 < max(single)  # one process per point would have read either verdict
    assert judge(fig3_memory_rows(1.2), isolated=False)["verdict"] == "not judged"


def test_memory_repeats_measure_the_pair_again_with_the_sweeps_settings():
    from privtrans.dpformer import efficiency as eff

    rows = eff.sweep(["nonprivate", "phantom", "paper_ghost"], [20, 30], 4, 2, 8, steps=1, isolate=False)
    rep = eff.memory_repeats(rows, 3)  # in this process, as the sweep ran
    assert sorted({(r["method"], r["M"]) for r in rep}) == [(m, M) for m in ("nonprivate", "phantom") for M in (20, 30)]
    assert sorted(r["repeat"] for r in rep) == [k for k in range(3) for _ in range(4)]
    first = {(r["method"], r["M"]): r["extra_mb"] for r in rows}
    assert all(r["extra_mb"] == first[r["method"], r["M"]] for r in rep if r["repeat"] == 0)
    with pytest.raises(ValueError, match="repeats must be an integer >= 2"):
        eff.memory_repeats(rows, 1)
    with pytest.raises(ValueError, match="parallel must be a positive int"):
        eff.measure_all([], parallel=0)


def test_measure_all_runs_each_configuration_in_its_own_process_and_a_peak_repeats():
    """Each configuration in a fresh interpreter, two at a time, results in order: the step's extra peak
    is at least its logits (B·L·M float32), and the same configuration reads the same peak again.

    The shapes make the logits 5-10 MB, so the few hundred kB by which a process's small allocations
    vary stay within 5 % (eight processes of the larger read 36.07-36.31 MB; with logits of 0.7 MB they
    read 8.2-9.3 MB, too close to that noise to test 'repeats'). Without a fixed mmap threshold one
    configuration read 83-105 MB across processes (the module docstring)."""
    from privtrans.dpformer import efficiency as eff

    configs = [dict(method=m, n_items=M, length=16, batch=8, d=8, steps=1, threads=1)
               for M in (10000, 20000) for m in ("nonprivate", "nonprivate")]
    rows = eff.measure_all(configs, parallel=2)
    assert [(r["method"], r["M"]) for r in rows] == [(c["method"], c["n_items"]) for c in configs]
    assert {r["mmap_threshold"] for r in rows} == {eff.MMAP_THRESHOLD}
    for r in rows:
        assert r["extra_mb"] >= 8 * 16 * r["M"] * 4 / 2**20, r
    assert rows[0]["extra_mb"] == pytest.approx(rows[1]["extra_mb"], rel=0.05)
    assert rows[2]["extra_mb"] == pytest.approx(rows[3]["extra_mb"], rel=0.05)


def test_fig3_falling_speedup_fails_and_chunked_points_leave_the_fit():
    out = readouts.fig3_memory_speed(fig3_measured(ghost_time=(2.0, 8.0, 7.0), chunked_at=(2000,)), fig3_modelled(),
                                     isolated=True)
    assert out["time_ratio_ghost_phantom_increasing"] is False and out["ghost_unchunked_points"] == 2
    v = verdicts({"fig3_memory_speed": out})
    assert v["fig3_ghost_memory_grows_with_vocabulary"]["verdict"] == "contradicted"  # two unchunked points: too few
    # the speed-up judged on its own interleaved timings: smaller at the larger M on every process
    ghost = fig3_ghost(small=8.0, large=5.8)
    v = verdicts({"fig3_memory_speed": ghost})
    assert ghost["ghost_log_speedup_growth"]["hi"] < 0
    assert v["fig3_speedup_grows_with_vocabulary"]["verdict"] == "contradicted"
    assert v["fig3_speedup_in_paper_range"]["verdict"] == "held"   # 5.8× at the largest M


def test_fig3_speedup_is_judged_on_interleaved_processes_not_one_reading():
    """The sweep's one reading per (method, M) decides neither speed-up check: a single process that
    reads 30× beside two that read 2× at the largest M leaves the band check open, though that one
    reading alone lies inside 4-100×; and a process lost on one M is kept in the count."""
    mixed = fig3_ghost(large=2.0, jitter=(15.0, 1.0, 1.02))
    row = verdicts({"fig3_memory_speed": mixed})["fig3_speedup_in_paper_range"]
    assert row["verdict"] == "inconclusive", row["reason"]
    from privtrans.dpformer import efficiency as eff

    def run(ratio):
        return {"times": {"paper_ghost": [ratio * 0.1, ratio * 0.1], "phantom": [0.1, 0.1]}, "M": 1}
    out = eff.ghost_speedup({500: [run(1.5), run(1.6), run(1.4)], 2000: [run(30.0), run(31.0)]})
    g = out["ghost_log_speedup_growth"]
    assert (g["n"], g["planned"]) == (2, 3)
    with pytest.raises(ValueError, match="positive per-round times"):
        eff.ghost_speedup({500: [{"times": {"phantom": [0.1, 0.1]}}] * 2})


def test_fig3_one_vocabulary_size_cannot_show_growth():
    out = readouts.fig3_memory_speed(fig3_measured(Ms=(500,), ghost_time=(2.0,)), fig3_modelled(), isolated=True)
    assert out["time_ratio_ghost_phantom_increasing"] is None and out["ghost_memory_loglog_slope"] is None
    from privtrans.dpformer import efficiency as eff

    one = eff.ghost_speedup({500: [{"times": {"paper_ghost": [0.2, 0.2], "phantom": [0.1, 0.1]}}] * 3})
    assert one["ghost_log_speedup_growth"]["n"] == 0
    # never a pass: no interval of a growth from one M
    assert verdicts({"fig3_memory_speed": one})["fig3_speedup_grows_with_vocabulary"]["held"] is not True


def test_fig3_missing_method_raises():
    m = fig3_measured()
    with pytest.raises(ValueError, match="nonprivate"):
        readouts.fig3_memory_speed(m[m.method != "nonprivate"], fig3_modelled(), isolated=True)


# ------------------------------------------------------------------------------------ Figure 4, Table 3
def fig4_inputs(inflation=(1.0, 1.5, 2.2), tv_re=(0.001, 0.002, 0.004)):
    mc = {"truth": np.array([0.1, 0.4, 0.4, 0.1]), "noisy": np.array([0.15, 0.35, 0.35, 0.15]),
          "corrected": np.array([0.11, 0.39, 0.39, 0.11])}
    sweep = pd.DataFrame({"tail_logit_std": [0.0, 1.0, 2.0], "inflation_noisy": list(inflation),
                          "tv_noisy": [0.002, 0.05, 0.1], "tv_reattention": list(tv_re)})
    t3 = pd.DataFrame({"input_std": [0.1, 1.0, 0.1, 1.0], "activation": ["ReLU", "ReLU", "GELU", "GELU"],
                       "n=10": [9.0] * 4, "n=1000": [0.0034, 0.35, 0.0025, 0.35],
                       "analytic_own": [0.0034, 0.3408, 0.0025, 0.3467], "analytic_relu": [0.0034, 0.3408] * 2,
                       "eq8_as_printed": [0.005, 0.5, 0.005, 0.5]})
    paper = pd.DataFrame({"input_std": [0.1, 1.0, 0.1, 1.0], "activation": ["ReLU", "ReLU", "GELU", "GELU"],
                          "n=1e+06": [0.0034, 0.3418, 0.0025, 0.3467]})
    checks = pd.DataFrame({"rule": ["Linear", "Linear → ReLU (Eq. 8 as printed; paper)", "SASRec keys, block 0 (end to end)"],
                           "rel_error": [0.01, -0.5, -0.03]})
    return mc, sweep, 0, t3, paper, checks


def test_fig4_by_hand_and_claims():
    out = readouts.fig4_attention_distraction(*fig4_inputs())
    assert out["tail_noisy"] == 0.15 and out["tv_noisy"] == pytest.approx(0.1) and out["tv_reattention"] == pytest.approx(0.02)
    assert out["inflation_monotone"] is True and out["inflation_at_max"] == 2.2
    assert out["frac_sweep_corrected_closer"] == 1.0  # σ = 0 (where both are 0 in truth) is left out
    assert out["table3_relu_max_rel_err"] == pytest.approx(0.35 / 0.3408 - 1)
    assert out["table3_eq8_min_rel_err"] == pytest.approx(0.5 / 0.35 - 1)
    assert out["table3_gelu_vs_paper_max_rel_diff"] == pytest.approx(0.35 / 0.3467 - 1)
    assert out["checks_max_abs_rel_err"] == 0.03 and out["checks_end_to_end_max_abs_rel_err"] == 0.03
    v = verdicts({"fig4_attention_distraction": out})
    assert v["fig4_distraction_grows_with_variance"]["verdict"] == "held"
    assert v["fig4_reattention_closer_to_truth"]["verdict"] == "held"
    assert v["table3_relu_analytic_matches_sampling"]["verdict"] == "contradicted"  # 2.7% > 2%
    assert v["table3_gelu_sampled_values"]["verdict"] == "held"   # 0.35 vs 0.3467: 1.0% < 3%
    assert v["moments_match_monte_carlo"]["verdict"] == "held"
    # Figure 8: the ReLU rule for GELU, 0.0034 vs 0.0025 (×1.36) at s = 0.1, 0.3408 vs 0.35 at s = 1: the
    # gap the paper's own Table 3 shows, within the factor 1.5 that "approximate" is given
    f8 = out["fig8_relu_rule_rel_err"]
    assert [r["input_std"] for r in f8] == [0.1, 1.0]
    assert [r["rel_err"] for r in f8] == pytest.approx([0.0034 / 0.0025 - 1, 0.3408 / 0.35 - 1])
    assert v["fig8_relu_rule_approximates_gelu"]["verdict"] == "held"


def test_fig8_fails_beyond_a_factor_of_one_and_a_half():
    mc, sweep, tail, t3, paper, checks = fig4_inputs()
    t3.loc[t3.activation == "GELU", "n=1000"] = [0.002, 0.34]   # 0.0034 / 0.002 = 1.7
    out = readouts.fig4_attention_distraction(mc, sweep, tail, t3, paper, checks)
    assert verdicts({"fig4_attention_distraction": out})["fig8_relu_rule_approximates_gelu"]["verdict"] == "contradicted"
    t3.loc[t3.activation == "GELU", "n=1000"] = [0.0030, 0.6]    # 0.3408 / 0.6 = 0.57 < 1 / 1.5
    out = readouts.fig4_attention_distraction(mc, sweep, tail, t3, paper, checks)
    assert verdicts({"fig4_attention_distraction": out})["fig8_relu_rule_approximates_gelu"]["verdict"] == "contradicted"


def test_fig4_failures_and_missing_rows():
    out = readouts.fig4_attention_distraction(*fig4_inputs(inflation=(1.0, 2.0, 1.9), tv_re=(0.0, 0.06, 0.01)))
    assert out["inflation_monotone"] is False and out["frac_sweep_corrected_closer"] == 0.5
    v = verdicts({"fig4_attention_distraction": out})
    assert v["fig4_distraction_grows_with_variance"]["verdict"] == "contradicted"
    assert v["fig4_reattention_closer_to_truth"]["verdict"] == "contradicted"
    mc, sweep, tail, t3, paper, checks = fig4_inputs()
    with pytest.raises(ValueError, match="GELU input stds differ"):
        readouts.fig4_attention_distraction(mc, sweep, tail, t3, paper.iloc[:3], checks)
    no_e2e = readouts.fig4_attention_distraction(mc, sweep, tail, t3, paper, checks.iloc[:2])
    assert no_e2e["checks_end_to_end_max_abs_rel_err"] is None


# ------------------------------------------------------------------------------------ Figure 9
def fig9_shift(kl=(0.03, 0.02, 0.01), lean=(0.02, 0.01, 0.005), dpf=(0.01, 0.035), np_lean=0.0, seeds=(0, 1),
               with_dpformer=True, dpf_raw=0.012):
    """Two blocks per model, identical, so the means are the given values. DPFormer at ε = 5 has rarity
    lean dpf[0] and KL dpf[1] read with its Re-Attention on, and lean ``dpf_raw`` read with it off."""
    rows = []
    models = [("non-private", None, 0.0, np_lean)] + [("transformer", e, k, l) for e, k, l in zip((5, 8, 10), kl, lean)]
    if with_dpformer:
        models += [("dpformer", 5, dpf[1], dpf[0]), ("dpformer_no_offset", 5, dpf[1], dpf_raw)]
    for s in seeds:
        for m, e, k, l in models:
            for block in (0, 1):
                rows.append({"method": m, "epsilon": e, "seed": s, "block": block, "KL_to_nonprivate": k,
                             "rarity_lean": l, "rows": 10})
    return pd.DataFrame(rows)


def fig9_models(seeds=(0, 1), ndcg=0.03, nonprivate=0.05):
    """One row per model, as notebook 08 records them: NDCG@10 ``ndcg`` (± 0.001 by seed) for every DP
    model, ``nonprivate`` for the non-private one; MostPopular (``refs``) is 0.02."""
    rows = [{"method": "non-private", "epsilon": None, "seed": s, "NDCG@10": nonprivate + 0.001 * k}
            for k, s in enumerate(seeds)]
    rows += [{"method": m, "epsilon": e, "seed": s, "NDCG@10": ndcg + 0.001 * k}
             for m, e in (("transformer", 5), ("transformer", 8), ("transformer", 10), ("dpformer", 5))
             for k, s in enumerate(seeds)]
    return pd.DataFrame(rows)


def fig9(shift, epsilons=(5, 8, 10), models=None, most_popular=True):
    return readouts.fig9_attention_shift(shift, list(epsilons), fig9_models() if models is None else models,
                                         refs(False) if most_popular else None)


def test_fig9_by_hand_and_claims():
    out = fig9(fig9_shift())
    assert out["kl_by_eps"] == [0.03, 0.02, 0.01] and out["kl_monotone"] is True
    assert (out["lean_low"], out["lean_high"], out["lean_nonprivate"]) == (0.02, 0.005, 0.0)
    assert out["dpformer_lean_low"] == 0.01 and out["dpformer_kl_low"] == 0.035
    assert out["dpformer_lean_low_no_offset"] == 0.012
    assert out["seeds_kl_monotone"] == 1.0 and out["seeds_dpformer_lean_below"] == 1.0
    assert out["seeds_dpformer_kl_below"] == 0.0
    assert [p["vs"] for p in out["lean_low_paired"]] == ["ε high", "uniform"]
    assert out["lean_low_paired"][1]["a"] == [0.02, 0.02] and out["lean_low_paired"][1]["b"] == [0.0, 0.0]
    assert out["dpformer_lowers_lean"]["b"] == [0.012, 0.012]   # read with the correction off
    assert out["dpformer_lowers_lean_with_offset"]["b"] == [0.01, 0.01]   # shown
    gate = out["nonprivate_vs_most_popular"]
    assert gate["held"] is True and gate["mean"] == pytest.approx(0.0305) and gate["n"] == 2
    v = verdicts({"fig9_attention_shift": out})
    assert v["fig9_shift_shrinks_with_eps"]["verdict"] == "held"
    assert v["fig9_low_eps_leans_to_rare_items"]["verdict"] == "held"
    assert v["fig9_reattention_lowers_rare_item_attention"]["verdict"] == "held"
    # KL 0.035 against vanilla's 0.03 on every seed: the data exclude "closer"
    assert v["fig9_reattention_closer_to_nonprivate"]["verdict"] == "contradicted"


def test_fig9_gate_reads_the_non_private_reference_only():
    """The gate is the non-private model above MostPopular: not judged where it is not (or where there is
    no MostPopular); DP models below MostPopular, the arms the claims compare, leave the verdicts as they were."""
    for out in (fig9(fig9_shift(), models=fig9_models(nonprivate=0.019)), fig9(fig9_shift(), most_popular=False)):
        v = verdicts({"fig9_attention_shift": out})
        for cid in ("fig9_shift_shrinks_with_eps", "fig9_low_eps_leans_to_rare_items",
                    "fig9_reattention_lowers_rare_item_attention", "fig9_reattention_closer_to_nonprivate"):
            assert v[cid]["verdict"] == "not judged", (cid, v[cid]["reason"])
    low = fig9(fig9_shift(), models=fig9_models(ndcg=0.01))
    assert low["best_dp_vs_most_popular"]["held"] is False and low["nonprivate_vs_most_popular"]["held"] is True
    same = {cid: r["verdict"] for cid, r in verdicts({"fig9_attention_shift": low}).items() if cid.startswith("fig9")}
    assert same == {cid: r["verdict"] for cid, r in verdicts({"fig9_attention_shift": fig9(fig9_shift())}).items()
                    if cid.startswith("fig9")}


def test_fig9_near_uniform_attention_does_not_lean_to_rare_items():
    """An under-trained model at the smallest ε attends about uniformly (lean 0), a trained one at the
    largest ε and the non-private one lean to popular items (below 0): above both, yet no lean to rare
    items. Against uniform attention the claim is not held (the old cell against the non-private model
    passed it)."""
    out = fig9(fig9_shift(lean=(0.0, -0.015, -0.02), np_lean=-0.03))
    assert out["lean_low_vs_nonprivate"]["held"] is True    # what the old cell would have read
    assert out["lean_low_paired"][0]["held"] is True and out["lean_low_paired"][1]["held"] is False
    row = verdicts({"fig9_attention_shift": out})["fig9_low_eps_leans_to_rare_items"]
    assert row["verdict"] == "contradicted", row["reason"]


def test_fig9_re_attention_is_read_with_its_correction_off():
    """The correction lowers rare items' attention by its formula: DPFormer read with it on leans less than
    vanilla (0.01 < 0.02) whatever it learnt; read with it off it leans more (0.03): the claim is contradicted."""
    out = fig9(fig9_shift(dpf_raw=0.03))
    assert out["dpformer_lowers_lean_with_offset"]["held"] is True and out["dpformer_lowers_lean"]["hi"] < 0
    row = verdicts({"fig9_attention_shift": out})["fig9_reattention_lowers_rare_item_attention"]
    assert row["verdict"] == "contradicted", row["reason"]


def test_fig9_non_monotone_kl_fails_and_missing_dpformer_is_not_judged():
    out = fig9(fig9_shift(kl=(0.03, 0.01, 0.02), with_dpformer=False))
    assert out["kl_monotone"] is False and out["seeds_kl_monotone"] == 0.0
    assert out["dpformer_lean_low"] is None and out["dpformer_lean_low_no_offset"] is None
    assert out["seeds_dpformer_lean_below"] is None
    v = verdicts({"fig9_attention_shift": out})
    assert v["fig9_shift_shrinks_with_eps"]["verdict"] == "contradicted"   # KL rises from ε = 8 to 10
    assert v["fig9_reattention_lowers_rare_item_attention"]["verdict"] == "not judged"


def test_fig9_comparisons_are_paired_across_seeds():
    out = fig9(fig9_shift())
    assert out["seeds"] == [0, 1] and [p["held"] for p in out["kl_steps_paired"]] == [True, True]
    assert out["dpformer_lowers_lean"]["a"] == [0.02, 0.02] and out["dpformer_lowers_lean"]["b"] == [0.012, 0.012]
    # DPFormer's lean below vanilla's on seed 0, above on seed 1: the interval crosses zero
    sh = fig9_shift()
    sel = (sh.method == "dpformer_no_offset") & (sh.seed == 1)
    sh.loc[sel, "rarity_lean"] = 0.04
    noisy = fig9(sh)
    assert noisy["dpformer_lean_low_no_offset"] == pytest.approx(0.026) and noisy["dpformer_lowers_lean"]["held"] is False
    row = verdicts({"fig9_attention_shift": noisy})["fig9_reattention_lowers_rare_item_attention"]
    assert row["verdict"] == "inconclusive" and row["held"] is False
    # equal leans at low and high ε (a tie) never hold
    tie = fig9(fig9_shift(lean=(0.02, 0.01, 0.02)))
    assert tie["low_eps_leans_to_rare"] is False
    # a seed without its DPFormer model: kept as lost, not dropped
    lost = fig9(fig9_shift(seeds=(0, 1, 2))[lambda d: ~((d.method == "dpformer_no_offset") & (d.seed == 2))])
    assert (lost["dpformer_lowers_lean"]["n"], lost["dpformer_lowers_lean"]["planned"]) == (2, 3)
    assert verdicts({"fig9_attention_shift": lost})["fig9_reattention_lowers_rare_item_attention"]["verdict"] != "held"
    assert verdicts({"fig9_attention_shift": tie})["fig9_low_eps_leans_to_rare_items"]["verdict"] == "contradicted"


def test_fig9_one_eps_cannot_show_a_trend():
    out = fig9(fig9_shift(), epsilons=(5,))
    assert out["kl_monotone"] is None and out["seeds_kl_monotone"] is None
    assert verdicts({"fig9_attention_shift": out})["fig9_shift_shrinks_with_eps"]["verdict"] == "not judged"


# ------------------------------------------------------------------------------------ premise data
P_EPS = [1, 3, 8]
P_SEEDS = (0, 1, 2)
SEED_NOISE = (0.0, 0.004, -0.003)   # the same for both methods: a shared seed moves both alike


def premise_runs(diff=((0.03, 0.032, 0.029), (0.02, 0.021, 0.019), (0.01, 0.011, 0.009)), base=(0.50, 0.55, 0.60)):
    """vanilla NDCG base[ε] + seed noise; DPFormer = vanilla + diff[ε][seed]; CE = 3 − NDCG."""
    rows = []
    for e, b, ds in zip(P_EPS, base, diff):
        for k, s in enumerate(P_SEEDS):
            for m, v in (("transformer", b + SEED_NOISE[k]), ("dpformer", b + SEED_NOISE[k] + ds[k])):
                rows.append({"method": m, "label": m, "epsilon": e, "seed": s, "ndcg@10": v, "hit@10": v + 0.1,
                             "test_ce": 3 - v, "epsilon_spent": e})
    return pd.DataFrame(rows)


def premise_curves(fall=(0.01, 0.0)):
    rows = []
    for m, f in zip(("transformer", "dpformer"), fall):
        for e in P_EPS:
            for k, s in enumerate(P_SEEDS):
                for epoch, v in ((1, 0.3), (2, 0.5), (3, 0.5 - f * (1 + 0.1 * k))):
                    rows.append({"method": m, "epsilon": e, "seed": s, "epoch": epoch, "ndcg@10": v, "hit@10": v})
    return pd.DataFrame(rows)


def premise_refs(mp=0.3):
    return pd.DataFrame([{"method": "most_popular", "label": "MP", "ndcg@10": mp, "hit@10": 0.5, "ce": 4.0},
                         {"method": "oracle", "label": "Oracle", "ndcg@10": 0.73, "hit@10": 0.84, "ce": 2.0}])


def premise_attention(tail=((0.10, 0.08, 0.06), (0.09, 0.07, 0.05)), nonprivate=0.03, uniform=0.07, raw=None):
    """tail[method][ε] + seed noise (shared); the trigger gets 0.5 − tail. DPFormer read with its
    correction off puts raw[ε] on the tail (default: 0.005 above its corrected reading); every model's
    uniform tail share is ``uniform``."""
    raw = [v + 0.005 for v in tail[1]] if raw is None else raw
    rows = [{"method": "non-private", "epsilon": None, "seed": s, "tail_attention": nonprivate + SEED_NOISE[k],
             "trigger_attention": 0.6, "tail_attention_no_offset": nonprivate + SEED_NOISE[k],
             "tail_uniform": uniform} for k, s in enumerate(P_SEEDS)]
    for m, t in zip(("transformer", "dpformer"), tail):
        for i, (e, v) in enumerate(zip(P_EPS, t)):
            for k, s in enumerate(P_SEEDS):
                rows.append({"method": m, "epsilon": e, "seed": s, "tail_attention": v + SEED_NOISE[k],
                             "trigger_attention": 0.5 - v, "tail_uniform": uniform,
                             "tail_attention_no_offset": (raw[i] if m == "dpformer" else v) + SEED_NOISE[k]})
    return pd.DataFrame(rows)


def premise_nonprivate_curves(gain=0.2):
    """The non-private reference's curves (method transformer, ε None): up by ``gain`` (± 0.01 by seed)."""
    return pd.DataFrame([{"method": "transformer", "epsilon": None, "seed": s, "epoch": ep,
                          "ndcg@10": 0.5 + (gain + 0.01 * k) * (ep - 1) / 2, "hit@10": 0.6}
                         for k, s in enumerate(P_SEEDS) for ep in (1, 2, 3)])


def premise_values(runs=None, curves=None, refs=None, attention=None, nonprivate_ndcg=(0.7, 0.71, 0.69),
                   nonprivate_curves=None):
    nonprivate = pd.DataFrame({"seed": list(P_SEEDS), "ndcg@10": list(nonprivate_ndcg)})
    return readouts.premise_table(premise_runs() if runs is None else runs,
                                  premise_curves() if curves is None else curves,
                                  premise_refs() if refs is None else refs, P_EPS,
                                  premise_attention() if attention is None else attention, nonprivate,
                                  premise_nonprivate_curves() if nonprivate_curves is None else nonprivate_curves)


def test_premise_table_by_hand_and_claims():
    out = premise_values()
    assert out["seeds"] == [0, 1, 2] and out["epsilons"] == P_EPS
    d = out["dpformer_vs_vanilla"]
    assert [p["mean"] for p in d] == pytest.approx([0.0303333, 0.02, 0.01], abs=1e-6)
    assert d[0]["keys"] == [0, 1, 2] and d[0]["a"] == pytest.approx([0.53, 0.536, 0.526])
    assert all(p["held"] for p in d) and out["dpformer_beats_vanilla_all"] is True
    assert out["dpformer_lower_ce_all"] is True
    assert out["ce_vanilla_minus_dpformer"][0]["mean"] == pytest.approx(d[0]["mean"])
    assert out["dp_above_most_popular"]["held"] is True and out["oracle_ce"] == 2.0
    # the gates: the non-private reference, an arm no claim here compares by NDCG@10
    assert out["nonprivate_vs_most_popular"]["held"] is True
    assert out["nonprivate_vs_most_popular"]["mean"] == pytest.approx(0.4)
    assert out["nonprivate_curve_rises"]["held"] is True and out["nonprivate_curve_rises"]["mean"] == pytest.approx(0.21)
    assert out["gain_grows_as_eps_shrinks"]["held"] is True
    # vanilla falls back 0.01 after rising 0.2: a share of 0.01 / 0.21 (×1.1, ×1.2 by seed); DPFormer 0
    assert out["dpformer_stabler"]["a"][0] == pytest.approx(0.01 / 0.21) and out["dpformer_stabler"]["held"] is True
    att = out["dp_draws_attention_to_tail"]
    assert set(att) == {"vs non-private", "vs uniform"}
    assert att["vs non-private"]["mean"] == pytest.approx(0.07) and att["vs uniform"]["mean"] == pytest.approx(0.03 + 1 / 3000)
    # Re-Attention judged on the attention DPFormer learnt, read with its correction off
    assert out["tail_attention_dpformer_no_offset"] == pytest.approx([0.095 + 1 / 3000, 0.075 + 1 / 3000, 0.055 + 1 / 3000])
    assert [p["mean"] for p in out["dpformer_lowers_tail_attention"]] == pytest.approx([0.005] * 3)
    assert [p["mean"] for p in out["dpformer_lowers_tail_attention_with_offset"]] == pytest.approx([0.01] * 3)
    assert out["dpformer_lowers_tail_attention_all"] is True
    # relative gains about 0.03/0.5, 0.02/0.55, 0.01/0.6: clear, but far below the paper's "around 20 %"
    g = out["rel_gain_per_eps"]
    assert g[0]["mean"] == pytest.approx(0.0606, abs=1e-3) and out["rel_gain_band"] == [0.10, 0.40]
    m = out["rel_gain_mean_over_eps"]
    assert m["keys"] == [0, 1, 2] and m["mean"] == pytest.approx(np.mean([p["mean"] for p in g]))
    assert m["mean"] == pytest.approx(0.0376, abs=1e-3) and m["hi"] < 0.10
    assert out["tail_attention"]["transformer"] == pytest.approx([0.10 + 1 / 3000, 0.08 + 1 / 3000, 0.06 + 1 / 3000])
    v = verdicts({"premise_table": out})
    for cid in ("premise_setting_can_show", "premise_dpformer_beats_vanilla",
                "premise_gain_grows_as_eps_shrinks",
                "premise_fig6_stabler", "premise_dp_distracts_attention", "premise_reattention_lowers_tail_attention"):
        assert v[cid]["verdict"] == "held", (cid, v[cid]["reason"])
    # the direction holds, the size does not: a gain of +4 % lies outside the band around 20 %
    assert v["premise_dpformer_gain_size"]["verdict"] == "contradicted", v["premise_dpformer_gain_size"]["reason"]


def test_premise_gain_size_held_contradicted_inconclusive():
    big = premise_values(premise_runs(diff=((0.12, 0.125, 0.115), (0.11, 0.112, 0.108), (0.10, 0.104, 0.097))))
    assert 0.10 < big["rel_gain_mean_over_eps"]["lo"] < big["rel_gain_mean_over_eps"]["hi"] < 0.40
    row = verdicts({"premise_table": big})["premise_dpformer_gain_size"]
    assert row["verdict"] == "held", row["reason"]
    # a clear but small gain (+0.1 %) is a direction, not the paper's size
    small = premise_values(premise_runs(diff=((0.0005, 0.0006, 0.0004),) * 3))
    vs = verdicts({"premise_table": small})
    assert vs["premise_dpformer_beats_vanilla"]["verdict"] == "held"
    assert vs["premise_dpformer_gain_size"]["verdict"] == "contradicted"
    # a gain of about +60 % is not "around 20 %" either: above the band
    huge = premise_values(premise_runs(diff=((0.30, 0.305, 0.295), (0.33, 0.332, 0.328), (0.36, 0.362, 0.358))))
    assert huge["rel_gain_mean_over_eps"]["lo"] > 0.40
    assert verdicts({"premise_table": huge})["premise_dpformer_gain_size"]["verdict"] == "contradicted"
    # a gain near +10 % with seeds that disagree: the interval overlaps the band's edge, and the reason
    # says how many seeds would resolve it
    near = premise_values(premise_runs(diff=((0.03, 0.09, 0.06), (0.03, 0.09, 0.06), (0.03, 0.09, 0.06))))
    row = verdicts({"premise_table": near})["premise_dpformer_gain_size"]
    assert row["verdict"] == "inconclusive" and "paired seeds would resolve" in row["reason"], row["reason"]


def test_premise_tie_and_noisy_difference_do_not_hold():
    tie = premise_values(premise_runs(diff=((0.0,) * 3,) * 3))
    assert tie["dpformer_beats_vanilla_all"] is False and tie["dpformer_vs_vanilla"][0]["mean"] == 0
    assert verdicts({"premise_table": tie})["premise_dpformer_beats_vanilla"]["verdict"] == "contradicted"
    noisy = premise_values(premise_runs(diff=((0.03, 0.032, 0.029), (0.02, -0.015, 0.01), (0.01, 0.011, 0.009))))
    p = noisy["dpformer_vs_vanilla"][1]
    assert p["mean"] > 0 and p["lo"] < 0 < p["hi"] and p["held"] is False
    assert verdicts({"premise_table": noisy})["premise_dpformer_beats_vanilla"]["verdict"] == "inconclusive"
    # equal tail attention of vanilla and DPFormer (read without its correction) at one ε: a tie
    same = premise_values(attention=premise_attention(raw=(0.095, 0.08, 0.055)))
    assert same["dpformer_lowers_tail_attention_all"] is False
    assert verdicts({"premise_table": same})["premise_reattention_lowers_tail_attention"]["verdict"] == "contradicted"
    # DPFormer below vanilla only through its correction (on: 0.01 below; off: 0.01 above): contradicted
    offset_only = premise_values(attention=premise_attention(raw=(0.11, 0.09, 0.07)))
    assert offset_only["dpformer_lowers_tail_attention_with_offset"][0]["held"] is True
    row = verdicts({"premise_table": offset_only})["premise_reattention_lowers_tail_attention"]
    assert row["verdict"] == "contradicted", row["reason"]


def test_premise_gates_read_the_non_private_reference():
    # MostPopular above vanilla at ε = 1 (0.50): the setting check fails (at the family level of its six
    # cells), but no claim's gate reads the DP arms
    out = premise_values(refs=premise_refs(mp=0.53))
    assert out["dp_above_most_popular"]["held"] is False
    assert "transformer at ε = 1" in out["dp_above_most_popular"]["reason"]
    v = verdicts({"premise_table": out})
    assert v["premise_setting_can_show"]["verdict"] == "contradicted"
    assert v["premise_dpformer_beats_vanilla"]["verdict"] == "held"
    # the non-private reference at MostPopular's level: the DPFormer − vanilla claims are not judged
    flat = premise_values(nonprivate_ndcg=(0.3, 0.3, 0.3))
    v = verdicts({"premise_table": flat})
    for cid in ("premise_dpformer_beats_vanilla", "premise_gain_grows_as_eps_shrinks",
                "premise_reattention_lowers_tail_attention", "premise_dpformer_gain_size"):
        assert v[cid]["verdict"] == "not judged" and v[cid]["held"] is None and NOT_SHOWN in v[cid]["reason"], cid
    assert v["premise_dp_distracts_attention"]["verdict"] == "held"   # no gate: its uniform cell guards it
    # the non-private curve flat: Figure 6 is not judged
    still = premise_values(nonprivate_curves=premise_nonprivate_curves(gain=0.0).assign(
        **{"ndcg@10": lambda d: 0.5 + 0.001 * d.seed * (d.epoch % 2)}))
    assert still["nonprivate_curve_rises"]["held"] is False
    assert verdicts({"premise_table": still})["premise_fig6_stabler"]["verdict"] == "not judged"


def test_premise_near_uniform_attention_is_no_distraction():
    """A barely trained vanilla attends about uniformly: more tail attention than the trained non-private
    model, but no more than uniform attention. Not held (the cell against the non-private model alone
    held it)."""
    att = premise_attention(tail=((0.07, 0.07, 0.07), (0.07, 0.07, 0.07)), nonprivate=0.03, uniform=0.07)
    out = premise_values(attention=att)
    cells = out["dp_draws_attention_to_tail"]
    assert cells["vs non-private"]["held"] is True and cells["vs uniform"]["held"] is False
    assert verdicts({"premise_table": out})["premise_dp_distracts_attention"]["verdict"] != "held"


def test_premise_lost_seed_is_kept_in_every_comparison():
    """A run that failed (missing, or NaN) on one arm stays in the comparison as a lost seed: the cell
    keeps it in its count and is not held on the seeds that survived."""
    runs = premise_runs()
    runs = runs[~((runs.method == "dpformer") & (runs.epsilon == 3) & (runs.seed == 2))]
    nan_runs = premise_runs()
    nan_runs.loc[(nan_runs.method == "transformer") & (nan_runs.epsilon == 8) & (nan_runs.seed == 1), "ndcg@10"] = np.nan
    for r in (runs, nan_runs):
        out = premise_values(r)
        cells = {p["epsilon"]: (p["n"], p["planned"]) for p in out["dpformer_vs_vanilla"]}
        assert sorted(cells.values()) == [(2, 3), (3, 3), (3, 3)], cells
        assert out["rel_gain_mean_over_eps"]["planned"] == 3 and out["rel_gain_mean_over_eps"]["n"] == 2
        v = verdicts({"premise_table": out})
        assert v["premise_dpformer_beats_vanilla"]["verdict"] == "inconclusive", v["premise_dpformer_beats_vanilla"]["reason"]
        assert "of 3" in v["premise_dpformer_beats_vanilla"]["reason"]


def test_paired_keyed_keeps_every_planned_key():
    p = readouts.paired_keyed({0: 1.0, 1: 2.0, 2: float("nan")}, {0: 0.5, 1: 1.0, 3: 1.0})
    assert p["keys"] == [0, 1, 2, 3] and p["a"] == [1.0, 2.0, None, None] and p["b"] == [0.5, 1.0, None, 1.0]
    assert (p["n"], p["planned"]) == (2, 4)
    q = readouts.paired_keyed({0: 1.0}, {0: 0.5}, keys=[0, 1, 2])
    assert (q["n"], q["planned"]) == (1, 3)
    # Figure 2's halves: a seed one cell of a half lacks is lost, not a smaller maximum
    cells = {(256, 0.01): {0: 0.1, 1: 0.2}, (512, 0.01): {0: 0.3}}
    assert readouts.large_vs_small_halves(cells)["batch_size"]["planned"] == 2
    # Tables 1, 2: a seed missing from one method at one ε
    runs = table_runs(seeds=(0, 1, 2))
    runs = runs[~((runs.method == "dpformer") & (runs.epsilon == 8) & (runs.seed == 1))]
    out = readouts.table1_movielens(runs, table_curves(seeds=(0, 1, 2)), refs(False), EPS, n_test_users=N_USERS)
    assert [(p["n"], p["planned"]) for p in out["dpformer_vs_vanilla"]] == [(3, 3), (2, 3)]
    row = verdicts({"table1_movielens": out})["table1_dpformer_ge_vanilla"]
    assert row["verdict"] != "held" and "of 3" in row["reason"], row["reason"]


def premise_sharing(gains=(0.02, 0.025, 0.018)):
    rows = []
    for k, s in enumerate(P_SEEDS):
        t = 0.55 + SEED_NOISE[k]
        for m, v in (("transformer", t), ("transformer_untied", t - gains[k]), ("transformer_untied_half", t - 0.05)):
            rows.append({"method": m, "epsilon": 3, "seed": s, "ndcg@10": v, "epsilon_spent": 3})
    return pd.DataFrame(rows)


def premise_grid(diag_gain=(0.01, 0.012, 0.009)):
    rows = []
    for B, lr, seeds in ((250, 0.005, P_SEEDS), (250, 0.01, (0,)), (500, 0.005, (0,)), (500, 0.01, P_SEEDS)):
        for k, s in enumerate(seeds):
            v = 0.6 + SEED_NOISE[k]
            rows += [{"method": "transformer", "epsilon": 8, "seed": s, "batch_size": B, "lr": lr, "ndcg@10": v,
                      "epsilon_spent": 8},
                     {"method": "dpformer", "epsilon": 8, "seed": s, "batch_size": B, "lr": lr,
                      "ndcg@10": v + diag_gain[k], "epsilon_spent": 8}]
    return pd.DataFrame(rows)


def test_premise_sharing_grid_by_hand_and_claims():
    out = readouts.premise_sharing_grid(premise_sharing(), premise_grid(), premise_refs(), 3)
    assert [p["held"] for p in out["tied_vs_untied"]] == [True, True] and out["sharing_beats_untied"] is True
    assert out["grid_seeds_per_cell"] == 3 and [len(p["keys"]) for p in out["diag_paired"]] == [3, 3]
    assert out["dpformer_beats_vanilla_diag"] is True and out["grid_above_most_popular"]["held"] is True
    v = verdicts({"premise_sharing_grid": out})
    assert v["premise_fig2_sharing_beats_untied"]["verdict"] == "held"
    assert v["premise_fig7_dpformer_wins_diagonal"]["verdict"] == "held"
    tie = readouts.premise_sharing_grid(premise_sharing((0.0, 0.0, 0.0)), premise_grid((0.0, 0.0, 0.0)),
                                        premise_refs(), 3)
    vt = verdicts({"premise_sharing_grid": tie})
    assert vt["premise_fig2_sharing_beats_untied"]["verdict"] == "contradicted"
    assert vt["premise_fig7_dpformer_wins_diagonal"]["verdict"] == "contradicted"
    noisy = readouts.premise_sharing_grid(premise_sharing((0.03, -0.02, 0.01)), premise_grid((0.02, -0.015, 0.01)),
                                          premise_refs(), 3)
    assert noisy["tied_vs_untied"][0]["held"] is False and noisy["dpformer_beats_vanilla_diag"] is False


# ------------------------------------------------------------------------------------ every claim
def test_every_claim_reads_only_recorded_values():
    """With every readout filled, no claim of the chapter fails to evaluate (no key is read that no
    readout records)."""
    values = {
        "fig5_long_tail": readouts.fig5_long_tail(STATS, {**STATS, "density": 0.0078}),
        "claim31_phantom_exact": readouts.claim31_phantom_exact(*claim31_inputs()),
        "fig3_memory_speed": {**readouts.fig3_memory_speed(fig3_measured(), fig3_modelled(), isolated=True),
                              **readouts.fig3_memory_vs_nonprivate(fig3_memory_rows()),
                              **readouts.fig3_speed_vs_nonprivate(fig3_speed()), **fig3_ghost()},
        "fig2_sharing_grid": readouts.fig2_sharing_grid(fig2_grid(seeds=(0, 1)), refs(False)),
        "table1_movielens": readouts.table1_movielens(table_runs(), table_curves(), refs(False), EPS,
                                                      n_test_users=N_USERS),
        "table2_amazon_like": readouts.table2_amazon_like(table_runs(), table_curves(), refs(), EPS,
                                                          grid_runs(FIG7_GRID, seeds=(0, 1)), n_test_users=N_USERS),
        "fig4_attention_distraction": readouts.fig4_attention_distraction(*fig4_inputs()),
        "fig9_attention_shift": fig9(fig9_shift()),
        "premise_table": premise_values(),
        "premise_sharing_grid": readouts.premise_sharing_grid(premise_sharing(), premise_grid(), premise_refs(), 3),
    }
    rows = verdicts(values)
    assert len(rows) == len(claims.load("dpformer")["claims"]) > 20
    # judged at paper only (ε = 8 is not trained at ci): evaluated, then not judged at this profile
    assert rows["table1_limitation_drop"]["verdict"] == "not judged"
    assert rows["table1_limitation_drop"]["value"].startswith("not run: this profile trains ε = [5, 8]")
    bad = {cid: r["reason"] for cid, r in rows.items() if r["held"] is None and cid != "table1_limitation_drop"}
    assert not bad


# ------------------------------------------------------------------------------------ null tests
# A = B plus noise (no effect) through each readout, with five paired seeds: no "A beats B" claim may
# come out held. The noise is drawn once (fixed generator), independently for every method, cell and
# seed; every precondition holds, so a verdict other than held is the interval's, not the gate's.
NULL_SEEDS = (0, 1, 2, 3, 4)


def _noise(seed: int, sd: float = 0.002):
    rng = np.random.default_rng(seed)
    return lambda: float(rng.normal(0.0, sd))


def null_table_runs(seed: int, methods=TABLE_METHODS, base=0.05):
    e = _noise(seed)
    return pd.DataFrame([{"method": m, "label": m, "epsilon": eps, "seed": s, "batch_size": 256, "lr": 0.02,
                          "ndcg@10": base + e(), "hit@10": 2 * base + e(), "epsilon_spent": eps - 0.01}
                         for m in methods for eps in EPS for s in NULL_SEEDS])


def null_curves(seed: int, methods=("transformer", "dpformer"), epsilons=EPS):
    """Flat noisy curves of the compared methods, and a rising one of the untied Transformer (an arm the
    Figure 6 claims do not compare) so that their gate holds and the null is really judged."""
    e = _noise(seed, 0.004)
    rows = [{"method": m, "epsilon": eps, "seed": s, "epoch": epoch, "ndcg@10": 0.05 + e(), "hit@10": 0.1}
            for m in methods for eps in epsilons for s in NULL_SEEDS for epoch in (1, 2, 3, 4)]
    rows += [{"method": "transformer_untied", "epsilon": eps, "seed": s, "epoch": epoch,
              "ndcg@10": 0.03 + 0.01 * epoch + e() / 4, "hit@10": 0.1}
             for eps in epsilons for s in NULL_SEEDS for epoch in (1, 2, 3, 4)]
    return pd.DataFrame(rows)


def not_held(rows: dict, ids) -> None:
    for cid in ids:
        assert rows[cid]["verdict"] != "held", (cid, rows[cid]["reason"])
        assert rows[cid]["verdict"] != "not judged", (cid, rows[cid]["reason"])   # the null was really judged


def test_null_tables_1_2_figures_6_7():
    table1 = readouts.table1_movielens(null_table_runs(1), null_curves(2), refs(False), EPS, n_test_users=N_USERS)
    assert table1["other_dp_vs_most_popular"]["held"] is True and table1["other_dp_curve_rises"]["held"] is True
    assert table1["dpformer_stabler"]["n"] == 2 * len(NULL_SEEDS)
    not_held(verdicts({"table1_movielens": table1}),
             ("table1_vanilla_beats_untied", "table1_dpformer_ge_vanilla", "table1_vanilla_beats_rnns",
              "fig6_reattention_stabler", "table1_dpformer_ge_vanilla_hit", "fig6_dpformer_converges_faster",
              "table1_gain_grows_as_eps_shrinks"))
    e = _noise(3)
    grid = pd.DataFrame([{"method": m, "epsilon": 8, "seed": s, "batch_size": B, "lr": lr, "ndcg@10": 0.05 + e(),
                          "hit@10": 0.1, "epsilon_spent": 7.99}
                         for m in ("transformer", "dpformer") for B in (256, 512) for lr in (0.005, 0.02)
                         for s in NULL_SEEDS])
    table2 = readouts.table2_amazon_like(null_table_runs(4), null_curves(5), refs(), EPS, grid, n_test_users=N_USERS)
    assert table2["grid_seeds_per_cell"] == len(NULL_SEEDS)
    not_held(verdicts({"table2_amazon_like": table2}),
             ("table2_dpformer_ge_vanilla", "table2_vanilla_beats_untied", "table2_vanilla_beats_rnns",
              "fig6_amazon_reattention_stabler", "fig7_dpformer_wins_diagonal", "table2_dpformer_ge_vanilla_hit",
              "table2_gain_smaller_at_low_eps", "fig6_amazon_dpformer_converges_faster"))


def test_null_figure_2():
    # every arm and every cell alike: no sharing effect and no batch-size or learning-rate effect
    e = _noise(6)
    grid = pd.DataFrame([{"method": m, "epsilon": 5, "seed": s, "batch_size": B, "lr": lr, "ndcg@10": 0.05 + e(),
                          "hit@10": 0.1, "epsilon_spent": 4.99}
                         for m in ("transformer", "transformer_untied", "transformer_untied_half")
                         for B in (256, 512, 1024, 2048) for lr in (0.001, 0.005, 0.009) for s in NULL_SEEDS])
    out = readouts.fig2_sharing_grid(grid, refs(False))
    assert out["seeds_per_cell"] == len(NULL_SEEDS) and out["n_cells"] == 12
    not_held(verdicts({"fig2_sharing_grid": out}), ("fig2_sharing_beats_untied", "fig2_best_large_batch_lr"))


def test_null_figure_9():
    e = _noise(7, 0.003)
    rows = []
    for s in NULL_SEEDS:
        # KL and lean the same at every ε and for both methods; the non-private lean the same as vanilla's
        models = [("non-private", None)] + [("transformer", eps) for eps in (5, 8, 10)] + \
            [("dpformer", 5), ("dpformer_no_offset", 5)]
        for m, eps in models:
            for block in (0, 1):
                rows.append({"method": m, "epsilon": eps, "seed": s, "block": block,
                             "KL_to_nonprivate": 0.0 if m == "non-private" else 0.02 + e(),
                             "rarity_lean": e(), "rows": 10})   # no lean: uniform plus noise
    out = fig9(pd.DataFrame(rows), models=fig9_models(seeds=NULL_SEEDS))
    assert out["nonprivate_vs_most_popular"]["held"] is True
    not_held(verdicts({"fig9_attention_shift": out}),
             ("fig9_shift_shrinks_with_eps", "fig9_low_eps_leans_to_rare_items",
              "fig9_reattention_lowers_rare_item_attention", "fig9_reattention_closer_to_nonprivate"))


def null_premise(draw: int, mp: float = 0.3) -> dict:
    e = _noise(draw, 0.004)
    runs = pd.DataFrame([{"method": m, "label": m, "epsilon": eps, "seed": s, "ndcg@10": v, "hit@10": v + 0.1,
                          "test_ce": 3 - v, "epsilon_spent": eps}
                         for m in ("transformer", "dpformer") for eps in P_EPS for s in NULL_SEEDS
                         for v in [0.6 + e()]])
    curves = null_curves(draw + 1000, epsilons=P_EPS)
    a = _noise(draw + 2000, 0.004)
    attention = pd.DataFrame([{"method": m, "epsilon": eps, "seed": s, "tail_attention": 0.05 + a(),
                               "trigger_attention": 0.6, "tail_attention_no_offset": 0.05 + a(), "tail_uniform": 0.05}
                              for m, epss in (("non-private", [None]), ("transformer", P_EPS), ("dpformer", P_EPS))
                              for eps in epss for s in NULL_SEEDS])
    nonprivate = pd.DataFrame({"seed": list(NULL_SEEDS), "ndcg@10": [0.7] * len(NULL_SEEDS)})
    np_curves = pd.DataFrame([{"method": "transformer", "epsilon": None, "seed": s, "epoch": ep,
                               "ndcg@10": 0.4 + 0.1 * ep + 0.001 * s, "hit@10": 0.5}
                              for s in NULL_SEEDS for ep in (1, 2, 3)])
    return readouts.premise_table(runs, curves, premise_refs(mp), P_EPS, attention, nonprivate, np_curves)


PREMISE_NULL = ("premise_dpformer_beats_vanilla", "premise_gain_grows_as_eps_shrinks", "premise_fig6_stabler",
                "premise_dp_distracts_attention", "premise_reattention_lowers_tail_attention",
                "premise_dpformer_gain_size")


def test_null_premise_table():
    out = null_premise(12)
    assert out["nonprivate_vs_most_popular"]["held"] is True and out["nonprivate_curve_rises"]["held"] is True
    assert out["dp_above_most_popular"]["held"] is True and out["rel_gain_mean_over_eps"]["n"] == len(NULL_SEEDS)
    not_held(verdicts({"premise_table": out}), PREMISE_NULL)
    # the setting check against MostPopular: DP models at the MostPopular level plus noise
    row = verdicts({"premise_table": null_premise(12, mp=0.6)})["premise_setting_can_show"]
    assert row["verdict"] != "held", row["reason"]


def test_null_is_held_no_more_often_than_the_intervals_allow():
    """Over 40 independent null draws a one-cell comparison is held with the t interval's one-sided
    2.5 % (about 1 in 40): the readouts add no effect of their own. Allowed: 4 of 40 (P < 0.01 when
    the rate is 2.5 %)."""
    held = {cid: 0 for cid in PREMISE_NULL}
    for draw in range(100, 140):
        rows = verdicts({"premise_table": null_premise(draw)})
        for cid in PREMISE_NULL:
            held[cid] += rows[cid]["verdict"] == "held"
    assert max(held.values()) <= 4, held


def test_null_premise_sharing_grid():
    e = _noise(11, 0.004)
    sharing = pd.DataFrame([{"method": m, "epsilon": 3, "seed": s, "ndcg@10": 0.55 + e(), "epsilon_spent": 3}
                            for m in ("transformer", "transformer_untied", "transformer_untied_half")
                            for s in NULL_SEEDS])
    grid = pd.DataFrame([{"method": m, "epsilon": 8, "seed": s, "batch_size": B, "lr": lr, "ndcg@10": 0.6 + e(),
                          "epsilon_spent": 8}
                         for B, lr in ((250, 0.005), (250, 0.01), (500, 0.005), (500, 0.01))
                         for m in ("transformer", "dpformer") for s in NULL_SEEDS])
    out = readouts.premise_sharing_grid(sharing, grid, premise_refs(), 3)
    assert out["untied_vs_most_popular"]["held"] is True
    not_held(verdicts({"premise_sharing_grid": out}),
             ("premise_fig2_sharing_beats_untied", "premise_fig7_dpformer_wins_diagonal"))


def test_null_figure_3():
    """The paper-style Ghost as fast as Phantom at both M, each process ± 5 %: neither speed-up check
    holds (the growth is a null, and 1× lies outside 4-100×); nor does a growth-free 10× at both M."""
    rng = np.random.default_rng(13)

    def runs(ratio):
        return [{"times": {"paper_ghost": [ratio * math.exp(rng.normal(0, 0.05)) * 0.1] * 2, "phantom": [0.1, 0.1]},
                 "M": 1} for _ in range(5)]
    same = readouts.fig3_ghost_speed({500: runs(1.0), 4000: runs(1.0)})
    not_held(verdicts({"fig3_memory_speed": same}), ("fig3_speedup_grows_with_vocabulary", "fig3_speedup_in_paper_range"))
    flat = readouts.fig3_ghost_speed({500: runs(10.0), 4000: runs(10.0)})
    not_held(verdicts({"fig3_memory_speed": flat}), ("fig3_speedup_grows_with_vocabulary",))
    # at the band's lower edge (4×): not held either
    edge = readouts.fig3_ghost_speed({500: runs(1.0), 4000: runs(4.0)})
    not_held(verdicts({"fig3_memory_speed": edge}), ("fig3_speedup_in_paper_range",))


def test_movielens_gain_grows_as_eps_shrinks_by_hand():
    """§5: on MovieLens the gain grows as ε shrinks; the reverse pairing of Table 2's claim."""
    out = readouts.table1_movielens(table_runs(), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    g = out["gain_at_smallest_minus_largest_eps"]
    # +0.2 at ε = 5, +0.05 at ε = 8 (seed offsets aside): larger at the smaller ε
    assert g["mean"] == pytest.approx(0.2 - 0.05, abs=0.01) and g["lo"] > 0
    assert g["mean"] == pytest.approx(-out["gain_at_largest_minus_smallest_eps"]["mean"])
    assert verdicts({"table1_movielens": out})["table1_gain_grows_as_eps_shrinks"]["verdict"] == "held"
    flat = dict(NDCG, dpformer=[0.0315, 0.042])  # +5 % at ε = 5, +5 % at ε = 8: no growth
    out = readouts.table1_movielens(table_runs(flat), table_curves(), refs(False), EPS, n_test_users=N_USERS)
    assert verdicts({"table1_movielens": out})["table1_gain_grows_as_eps_shrinks"]["verdict"] != "held"


def test_the_limitation_drop_needs_all_three_eps():
    """§6: DPFormer drops more from ε = 8 to 5 than from 10 to 8; without ε = 8 nothing is judged."""
    assert readouts.limitation_drop(table_runs(), EPS)["n"] == 0
    ndcg = {"dpformer": [0.05, 0.07, 0.075], "transformer": [0.04, 0.06, 0.07]}
    runs = table_runs(ndcg, seeds=(0, 1, 2), epsilons=[5, 8, 10])
    d = readouts.limitation_drop(runs, [5, 8, 10])
    assert d["mean"] == pytest.approx(0.02 - 0.005) and d["n"] == 3 and d["held"] is True
    steady = readouts.limitation_drop(table_runs({"dpformer": [0.05, 0.06, 0.07]}, seeds=(0, 1, 2),
                                                 epsilons=[5, 8, 10]), [5, 8, 10])
    assert steady["mean"] == pytest.approx(0.0, abs=1e-12) and steady["held"] is not True
    # a seed without its ε = 8 run is a lost seed, never a silent drop
    lost = readouts.limitation_drop(runs[~((runs.seed == 2) & (runs.epsilon == 8))], [5, 8, 10])
    assert lost["planned"] == 3 and lost["n"] == 2


def test_null_limitation_drop():
    """The same NDCG@10 at ε = 5, 8, 10 (noise only): no sharper drop from 8 to 5 (judged at paper)."""
    e = _noise(11)
    runs = pd.DataFrame([{"method": m, "label": m, "epsilon": eps, "seed": s, "batch_size": 256, "lr": 0.02,
                          "ndcg@10": 0.05 + e(), "hit@10": 0.1 + e(), "epsilon_spent": eps - 0.01}
                         for m in TABLE_METHODS for eps in (5, 8, 10) for s in NULL_SEEDS])
    out = readouts.table1_movielens(runs, null_curves(12, epsilons=(5, 8, 10)), refs(False), (5, 8, 10),
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
    t1 = readouts.table1_movielens(null_table_runs(13, base=MOST_POPULAR - 0.002), null_curves(14), refs(False),
                                   EPS, n_test_users=N_USERS)
    t2 = readouts.table2_amazon_like(null_table_runs(15, base=MOST_POPULAR - 0.002), null_curves(16), refs(), EPS,
                                     grid_runs(FIG7_GRID, seeds=(0, 1)), n_test_users=N_USERS)
    rows = verdicts({"table1_movielens": t1, "table2_amazon_like": t2})
    not_held(rows, ("table1_dp_learns_beyond_popularity", "table2_dp_learns_beyond_popularity"))
    assert "points (MostPopular 2.00 %)" in rows["table1_dp_learns_beyond_popularity"]["value"]
    assert rows["table1_dpformer_ge_vanilla"]["reason"].startswith(NOT_SHOWN)
    # far above MostPopular: held, and the gate opens
    up = readouts.table1_movielens(null_table_runs(13), null_curves(14), refs(False), EPS, n_test_users=N_USERS)
    assert verdicts({"table1_movielens": up})["table1_dp_learns_beyond_popularity"]["verdict"] == "held"
