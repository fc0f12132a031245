"""The TAFT readouts and the claims that read them: synthetic per-seed results with a known answer
go through ``privtrans.taft.readouts`` and the claim predicates of data/taft, as a notebook's
recorded values do. A clear effect holds, a tie or a reversed effect does not, a missing seed is
not judged."""

import numpy as np
import pandas as pd
import pytest

from privtrans.book import claims
from privtrans.book.session import _jsonable
from privtrans.taft import readouts as R

CLAIMS = {c["id"]: c for c in claims.load("taft")["claims"]}
SEEDS = [0, 1, 2]
NOISE = [0.004, -0.003, 0.001]


def verdict(claim_id: str, values: dict, profile: str = "ci"):
    c = CLAIMS[claim_id]
    (row,) = claims.evaluate("taft", {"claims": [c]}, {c["notebook"]: {"profile": profile, "values": _jsonable(values)}},
                             profile)
    return row["held"]


def table1_runs(taft_near=0.97, taft_far=0.55):
    acc = {("digits", "FC"): 0.94, ("digits", "NLFT-1"): 0.97, ("digits", "TAFT-1"): taft_near,
           ("digits", "NLFT-2"): 0.98, ("digits", "TAFT-2"): 0.98, ("digits", "TAFT-1 (paper setting)"): 0.91,
           ("letters", "FC"): 0.46, ("letters", "NLFT-1"): 0.60, ("letters", "TAFT-1"): taft_far,
           ("letters", "NLFT-2"): 0.68, ("letters", "TAFT-2"): 0.60, ("letters", "TAFT-1 (paper setting)"): 0.43}
    return pd.DataFrame([{"task": t, "method": m, "seed": s, "accuracy": a + e}
                         for (t, m), a in acc.items() for s, e in zip(SEEDS, NOISE)])


def test_table1_claims_follow_the_paired_intervals():
    rec = R.table1_finetuning(table1_runs(), margin=0.02)
    assert verdict("table1_taft_near_within_few_points", rec)
    assert verdict("table1_taft_further_behind_far", rec)  # gap 0.05 far, 0 near
    assert verdict("table1_taft_beats_fc", rec)
    assert not verdict("table1_paper_setting_transfers", rec)  # 6 points below NLFT-1
    bad = R.table1_finetuning(table1_runs(taft_near=0.90), margin=0.02)
    assert not verdict("table1_taft_near_within_few_points", bad)


def composition_runs(gap_by_n):
    return pd.DataFrame([{"task": t, "shards": n, "method": m, "seed": s, "accuracy": 0.8 + (g if m == "TAFT" else 0) + e}
                         for t in ("digits", "letters") for n, g in gap_by_n.items() for m in ("TAFT", "Soup")
                         for s, e in zip(SEEDS, NOISE if m == "TAFT" else [0, 0, 0])])


def test_composition_claims_hold_only_for_a_clear_growing_gap():
    rec = R.composition(composition_runs({10: 0.03, 25: 0.08, 50: 0.15}), max_abs_diff=1e-6)
    assert verdict("table2_taft_beats_soup", rec) and verdict("table2_gap_grows_with_n", rec)
    assert verdict("table2_composition_is_the_ensemble", rec)
    tie = R.composition(composition_runs({10: 0.0, 25: 0.0, 50: 0.0}), max_abs_diff=1e-3)
    assert not verdict("table2_taft_beats_soup", tie) and not verdict("table2_gap_grows_with_n", tie)
    assert not verdict("table2_composition_is_the_ensemble", tie)


def gap(g, n):
    return g[n] if isinstance(g, dict) else g


def table11_runs(gaps, diff=None):
    """TAFT ahead of each method by ``gaps[method]`` (a number, or one per N); ``diff``: composed − ensemble."""
    diff = diff or {"TAFT": 1e-6, "Adapter": 0.02, "LoRA": 0.03, "Soup": 0.01}
    return pd.DataFrame([{"task": "letters", "shards": n, "method": m, "seed": s, "composed_minus_ensemble": diff[m],
                          "accuracy": 0.6 - gap(gaps.get(m, 0.0), n) + (e if m == "TAFT" else 0)}
                         for n in (10, 25, 50) for m in ("TAFT", "Adapter", "LoRA", "Soup")
                         for s, e in zip(SEEDS, NOISE)])


def test_table11_claims_need_taft_ahead_of_each_method_at_every_n():
    rec = R.table11_peft(table11_runs({"Adapter": 0.1, "LoRA": 0.2, "Soup": 0.1}))
    assert verdict("table11_taft_beats_adapter", rec) and verdict("table11_taft_beats_lora", rec)
    assert verdict("table11_composition_is_the_ensemble", rec)
    assert rec["composed_minus_ensemble"]["LoRA"] == pytest.approx(0.03)
    tie = R.table11_peft(table11_runs({"Adapter": {10: 0.1, 25: 0.1, 50: 0.0}, "LoRA": 0.2, "Soup": 0.1}, diff={m: 1e-3 for m in
                                                                                         ("TAFT", "Adapter", "LoRA", "Soup")}))
    assert not verdict("table11_taft_beats_adapter", tie) and verdict("table11_taft_beats_lora", tie)
    assert not verdict("table11_composition_is_the_ensemble", tie)
    one_seed = R.table11_peft(table11_runs({"Adapter": 0.1, "LoRA": 0.2}).query("seed == 0"))
    assert verdict("table11_taft_beats_lora", one_seed) is None  # one seed: no interval, not judged


def forgetting_frames(drop_at_half=0.01, paragon_gap=0.02):
    curves = pd.DataFrame([{"task": t, "seed": s, "removed": r, "method": m,
                            "accuracy": 0.9 - drop_at_half * r / 25 - (0.05 if m == "SISA" else 0) + e}
                           for t in ("digits", "letters") for s, e in zip(SEEDS, NOISE) for r in (0, 25, 45)
                           for m in ("TAFT", "SISA")])
    retrain = pd.DataFrame([{"task": t, "seed": s, "fraction": f, "method": m, "seconds": 10.0 if m[0] == "P" else 5.0,
                             "shard_seconds": None if m[0] == "P" else 0.1,
                             "accuracy": 0.9 - (paragon_gap if m[0] == "T" and f > 0 else 0) + e}
                            for t in ("digits", "letters") for s, e in zip(SEEDS[:2], NOISE[:2]) for f in (0.0, 0.5)
                            for m in ("TAFT shard retraining", "Paragon NLFT-1")])
    return curves, retrain


def test_forgetting_claims_use_intervals_within_the_margin():
    rec = R.forgetting(*forgetting_frames(), n_shards=50, subtraction_error=1e-7)
    assert verdict("fig1_forgetting_costs_little", rec) and verdict("fig1_taft_beats_sisa", rec)
    assert verdict("fig1_subtraction_is_exact", rec)
    assert rec["speedup_mean"] == pytest.approx(100.0)
    big = R.forgetting(*forgetting_frames(drop_at_half=0.10, paragon_gap=0.2), n_shards=50, subtraction_error=1e-7)
    assert not verdict("fig1_forgetting_costs_little", big) and not verdict("fig3_retraining_near_paragon", big)


def test_table7_and_fig4_and_cost():
    runs = pd.DataFrame([{"task": t, "setting": st, "method": m, "seed": s, "accuracy": a + e}
                         for t in ("digits", "letters") for st in ("full", "shards")
                         for m, a in (("TAFT", 0.7), ("L-CNN", 0.9)) for s, e in zip(SEEDS, NOISE)])
    rec = R.table7_linearised_cnn(runs, 0.98, 0.94)
    assert verdict("table7_taft_beats_linearised_cnn", rec) is False  # the CNN is 20 points ahead
    n = np.arange(1, 50)
    assert verdict("fig4_change_decays_like_one_over_n", R.fig4_weight_change({"digits": list(3.0 / (n + 1))}, 2.0))
    assert not verdict("fig4_change_decays_like_one_over_n", R.fig4_weight_change({"digits": list(np.ones(49))}, 2.0))
    times = pd.DataFrame([{"batch": b, "feed": f, "phase": p, "method": m, "seconds": (2.0 if m == "TAFT" else 1.0) / b}
                          for b in (1, 32) for f in ("images", "cached") for p in ("train", "inference")
                          for m in ("NLFT", "TAFT")])
    rec = R.cost(times)
    assert rec["train_ratio_b1_images"] == pytest.approx(2.0) and rec["cached_speedup"] == pytest.approx(32.0)
    assert verdict("table8_train_cost_about_twice", rec) and verdict("table8_caching_and_batching_help", rec)
