"""privtrans.taft.readouts.shards on small hand-made inputs (no training)"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privtrans.taft.readouts import shards

from taft_readout_inputs import (
    NULL_SEEDS,
    _noise,
    _not_held,
    composition_runs,
    forgetting_frames,
    gap,
    row,
    table11_runs,
    verdict,
)


def test_composition_claims_hold_only_for_a_clear_growing_gap():
    rec = shards.composition(composition_runs({10: 0.03, 25: 0.08, 50: 0.15}), max_abs_diff=1e-6)
    assert verdict("table2_taft_beats_soup", rec) == "held"
    assert verdict("table2_gap_grows_with_n", rec) == "held"
    assert rec["growth_mean"]["mean"] == pytest.approx(0.12)
    assert verdict("table2_composition_is_the_ensemble", rec) == "held"
    tie = shards.composition(composition_runs({10: 0.0, 25: 0.0, 50: 0.0}), max_abs_diff=1e-3)
    assert verdict("table2_taft_beats_soup", tie) == "inconclusive"  # the seeds' noise straddles zero
    assert verdict("table2_gap_grows_with_n", tie) == "not judged"  # the same gap at every N: a tie
    assert verdict("table2_composition_is_the_ensemble", tie) == "contradicted"


def test_table2_growth_is_judged_on_the_average_over_tasks():
    """The paper states its average row's gap: a task whose gap shrinks does not decide it alone."""
    runs = pd.concat([composition_runs({10: 0.02, 25: 0.10, 50: 0.20}, tasks=("digits",)),
                      composition_runs({10: 0.10, 25: 0.09, 50: 0.08}, tasks=("letters",))])
    rec = shards.composition(runs, max_abs_diff=1e-6)
    assert rec["growth"]["letters"]["hi"] < 0  # this task's gap shrinks
    assert verdict("table2_gap_grows_with_n", rec) == "held"  # the average gap grows by 0.08


def test_soup_ahead_contradicts_and_a_small_effect_on_noisy_seeds_is_inconclusive():
    rng = np.random.default_rng(7)
    seeds = range(5)

    def runs(gap, sd):
        return pd.DataFrame([{"task": t, "shards": n, "method": m, "seed": s,
                              "accuracy": 0.8 + (gap if m == "TAFT" else 0) + (rng.normal(0, sd) if m == "TAFT" else 0)}
                             for t in ("digits", "letters") for n in (10, 25, 50) for m in ("TAFT", "Soup") for s in seeds])
    assert verdict("table2_taft_beats_soup", shards.composition(runs(-0.05, 0.002), 1e-6)) == "contradicted"
    small = row("table2_taft_beats_soup", shards.composition(runs(0.004, 0.02), 1e-6))
    assert small["verdict"] == "inconclusive" and "paired seeds would resolve" in small["reason"]


def test_table11_claims_need_taft_ahead_of_each_method_at_every_n():
    rec = shards.table11_peft(table11_runs({"Adapter": 0.1, "LoRA": 0.2, "Soup": 0.1}))
    assert verdict("table11_taft_beats_adapter", rec) == "held" and verdict("table11_taft_beats_lora", rec) == "held"
    assert verdict("table11_composition_is_the_ensemble", rec) == "held"
    assert rec["composed_minus_ensemble"]["LoRA"] == pytest.approx(0.03)
    assert set(rec["cells_vs"]["Adapter"]) == {"letters N=10", "letters N=25", "letters N=50"}
    tie = shards.table11_peft(table11_runs({"Adapter": {10: 0.1, 25: 0.1, 50: 0.0}, "LoRA": 0.2, "Soup": 0.1},
                                      diff={m: 1e-3 for m in ("TAFT", "Adapter", "LoRA", "Soup")}))
    assert verdict("table11_taft_beats_adapter", tie) == "inconclusive"  # N = 50: a tie on noisy seeds
    assert verdict("table11_taft_beats_lora", tie) == "held"
    assert verdict("table11_composition_is_the_ensemble", tie) == "contradicted"
    one_seed = shards.table11_peft(table11_runs({"Adapter": 0.1, "LoRA": 0.2}).query("seed == 0"))
    assert verdict("table11_taft_beats_lora", one_seed) == "not judged"  # one seed: no interval


def test_forgetting_claims_use_intervals_within_the_margin():
    rec = shards.forgetting(*forgetting_frames(), n_shards=50, subtraction_error=1e-7)
    assert verdict("fig1_forgetting_costs_little", rec) == "held"
    assert rec["half_minus_full_mean"]["mean"] == pytest.approx(-0.01)
    assert verdict("fig1_taft_beats_sisa", rec) == "held"
    assert set(rec["taft_minus_sisa_by_count"]["digits"]) == {"removed=0", "removed=25", "removed=45"}
    assert verdict("fig1_subtraction_is_exact", rec) == "held"
    assert verdict("fig3_retraining_near_paragon", rec) == "held"
    assert rec["speedup_mean"] == pytest.approx(100.0)
    big = shards.forgetting(*forgetting_frames(drop_at_half=0.10, paragon_gap=0.2), n_shards=50, subtraction_error=1e-7)
    assert verdict("fig1_forgetting_costs_little", big) == "contradicted"
    assert verdict("fig3_retraining_near_paragon", big) == "contradicted"


def test_fig1c_retraining_drop_and_speedup():
    """Figure 1(c): the drop after forgetting half the data with the hit shards retrained (within the
    paper's 6.2 plus one point) and the paragon's time over one shard's (at least half the paper's 50×)."""
    curves, retrain = forgetting_frames(paragon_gap=0.02)  # 2 points below before-forgetting at fraction 0.5
    rec = shards.forgetting(curves, retrain, n_shards=50, subtraction_error=1e-7)
    assert rec["retrained_minus_full_mean"]["mean"] == pytest.approx(-0.02)
    assert verdict("fig1c_retraining_drop_small", rec) == "held"
    assert verdict("fig1c_retraining_speedup", rec) == "held"  # 10 s / 0.1 s = 100×
    curves, retrain = forgetting_frames(paragon_gap=0.12)
    retrain["shard_seconds"] = retrain.shard_seconds.map(lambda v: None if v is None else 1.0)  # 10×
    rec = shards.forgetting(curves, retrain, n_shards=50, subtraction_error=1e-7)
    assert verdict("fig1c_retraining_drop_small", rec) == "contradicted"  # 12 points, on every seed
    assert verdict("fig1c_retraining_speedup", rec) == "contradicted"
    assert rec["speedup_mean"] == pytest.approx(10.0)
    smaller = retrain[retrain.fraction < 0.5]  # the largest fraction forgotten is not the paper's 50 %
    r = row("fig1c_retraining_drop_small", shards.forgetting(curves, smaller, n_shards=50, subtraction_error=1e-7))
    assert r["verdict"] == "not judged" and "50 %" in r["reason"]


def test_taft_beats_sisa_is_judged_at_every_removal_count():
    """Ahead on the mean over the counts but behind at one count: the paper's 'at every count' fails."""
    curves, retrain = forgetting_frames(sisa_gap={0: 0.10, 25: 0.10, 45: -0.03})
    rec = shards.forgetting(curves, retrain, n_shards=50, subtraction_error=1e-7)
    assert all(v["lo"] > 0 for v in rec["taft_minus_sisa"].values())  # the mean over the counts clears zero
    assert verdict("fig1_taft_beats_sisa", rec) == "contradicted"


@pytest.mark.parametrize("tasks,ids", [(("digits", "letters"), ["table2_taft_beats_soup", "table2_gap_grows_with_n"]),
                                       (("textures",), ["table10_taft_beats_soup_textures", "table10_gap_grows_with_n"])])
def test_null_composition(tasks, ids):
    rng = np.random.default_rng(2)
    runs = pd.DataFrame([{"task": t, "shards": n, "method": m, "seed": s, "accuracy": 0.8 - 0.001 * n + _noise(rng)}
                         for t in tasks for n in (10, 25, 50) for m in ("TAFT", "Soup") for s in NULL_SEEDS])
    _not_held(ids, shards.composition(runs, max_abs_diff=1e-6))


def test_null_forgetting():
    rng = np.random.default_rng(3)
    curves = pd.DataFrame([{"task": t, "seed": s, "removed": r, "method": m, "accuracy": 0.9 - 0.002 * r + _noise(rng)}
                           for t in ("digits", "letters") for s in NULL_SEEDS for r in (0, 25, 45)
                           for m in ("TAFT", "SISA")])
    _not_held(["fig1_taft_beats_sisa"], shards.forgetting(curves, None, n_shards=50, subtraction_error=1e-7))


def test_null_table7():
    rng = np.random.default_rng(5)
    runs = pd.DataFrame([{"task": t, "setting": st, "method": m, "seed": s, "accuracy": 0.8 + _noise(rng)}
                         for t in ("digits", "letters") for st in ("full", "shards") for m in ("TAFT", "L-CNN")
                         for s in NULL_SEEDS])
    _not_held(["table7_taft_beats_linearised_cnn", "table7_taft_beats_linearised_cnn_composed"],
              shards.table7_linearised_cnn(runs, 0.98, 0.94))


def test_null_table11():
    rng = np.random.default_rng(6)
    runs = pd.DataFrame([{"task": "letters", "shards": n, "method": m, "seed": s, "composed_minus_ensemble": 1e-6,
                          "accuracy": 0.6 + _noise(rng)}
                         for n in (10, 25, 50) for m in ("TAFT", "Adapter", "LoRA", "Soup") for s in NULL_SEEDS])
    _not_held(["table11_taft_beats_adapter", "table11_taft_beats_lora"], shards.table11_peft(runs))


def test_null_retraining_speedup():
    """The paragon takes exactly 25× one shard's time, give or take timing noise: 'at least 25×' is not held."""
    rng = np.random.default_rng(7)
    curves, retrain = forgetting_frames()
    seeds = list(range(6))
    retrain = pd.DataFrame([{"task": t, "seed": s, "fraction": f, "method": m, "accuracy": 0.9,
                             "seconds": 2.5 * math.exp(rng.normal(0, 0.1)) if m[0] == "P" else 1.0,
                             "shard_seconds": None if m[0] == "P" else 0.1 * math.exp(rng.normal(0, 0.1))}
                            for t in ("digits", "letters") for s in seeds for f in (0.0, 0.5)
                            for m in ("TAFT shard retraining", "Paragon NLFT-1")])
    _not_held(["fig1c_retraining_speedup"], shards.forgetting(curves, retrain, n_shards=50, subtraction_error=1e-7))
