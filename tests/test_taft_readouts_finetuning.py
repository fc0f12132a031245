"""privtrans.taft.readouts.finetuning on small hand-made inputs (no training)"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privtrans.taft.readouts import finetuning

from taft_readout_inputs import (
    NOISE,
    NULL_SEEDS,
    SEEDS,
    _noise,
    _not_held,
    dp_runs,
    row,
    table1_runs,
    verdict,
)


def test_table1_claims_follow_the_paired_intervals():
    rec = finetuning.table1_finetuning(table1_runs(), margin=0.02)
    assert verdict("table1_taft_near_within_few_points", rec) == "held"
    assert verdict("table1_taft_further_behind_far", rec) == "held"  # gap 0.05 far, 0 near
    assert verdict("table1_taft_beats_fc", rec) == "held"
    assert verdict("table1_taft_k_beats_fc", rec) == "held"
    assert verdict("table1_paper_setting_transfers", rec) == "contradicted"  # 6 points below NLFT-1
    r = row("table1_paper_setting_transfers", rec)
    assert r["reading_value"]["mean"] == pytest.approx(0.06)  # the tuned setting's advantage, shown beside
    bad = finetuning.table1_finetuning(table1_runs(taft_near=0.90), margin=0.02)
    assert verdict("table1_taft_near_within_few_points", bad) == "contradicted"  # 7 points below on every seed


def test_table1_taft_k_is_judged_against_nlft_k_on_the_average():
    """TAFT-2 − NLFT-2 on each seed's mean over the tasks, against the paper's 1.0 plus one point."""
    rec = finetuning.table1_finetuning(table1_runs(), margin=0.02)  # digits −0.00, letters −0.08: mean −0.04
    assert rec["taft_k_within"]["mean"] == pytest.approx(-0.04)
    assert verdict("table1_taft_k_within_nlft_k", rec) == "contradicted"
    close = table1_runs()
    close.loc[(close.task == "letters") & (close.method == "TAFT-2"), "accuracy"] += 0.075  # 0.5 points below
    r = row("table1_taft_k_within_nlft_k", finetuning.table1_finetuning(close, margin=0.02))
    assert r["verdict"] == "held" and r["value"]["mean"] == pytest.approx(-0.0025)
    one_seed = finetuning.table1_finetuning(table1_runs().query("seed == 0"), margin=0.02)
    assert verdict("table1_taft_k_within_nlft_k", one_seed) == "not judged"


def test_dp_claims_allow_one_cell_to_miss():
    one_tie = lambda t, e, r: 0.0 if (e, r) == (1, "ln") else 0.05  # noqa: E731
    ci = finetuning.dp_finetuning(dp_runs(one_tie))
    assert ci["cells_total"] == 6
    assert verdict("table3_dp_tangent_beats_nonlinear", ci, profile="ci") == "held"  # 5 of 6: all but one
    two_ties = lambda t, e, r: 0.0 if r == "ln" and e < 8 else 0.05  # noqa: E731
    assert verdict("table3_dp_tangent_beats_nonlinear", finetuning.dp_finetuning(dp_runs(two_ties)), profile="ci") != "held"
    grid = finetuning.dp_finetuning(dp_runs(lambda t, e, r: 0.0 if (t, e, r) == ("letters", 1, "ln") else 0.05,
                                   tasks=("digits", "letters"), regimes=("full", "bitfit", "ln")))
    assert grid["cells_total"] == 18
    assert verdict("table3_dp_tangent_beats_nonlinear", grid, profile="paper") == "held"  # 17 of 18, as the paper
    behind = finetuning.dp_finetuning(dp_runs(lambda t, e, r: -0.05))
    assert verdict("table3_dp_tangent_beats_nonlinear", behind, profile="ci") == "contradicted"


def test_dp_full_nlft_below_fc_in_every_cell():
    """FC − Full NLFT per (task, ε): held only when the head alone beats the whole block's NLFT at every ε."""
    def runs(fc_minus_full):
        d = dp_runs(lambda t, e, r: 0.0, seeds=SEEDS, noise=[0.0, 0.0, 0.0])
        fc = d.method == "FC"
        d.loc[fc, "accuracy"] += d[fc].epsilon.map(fc_minus_full) + d[fc].seed.map(dict(zip(SEEDS, NOISE)))
        return d
    rec = finetuning.dp_finetuning(runs(lambda e: 0.10 / e))
    assert set(rec["fc_minus_full_nlft"]) == {"digits eps=1", "digits eps=3", "digits eps=8"}
    assert rec["fc_minus_full_nlft"]["digits eps=1"]["mean"] == pytest.approx(0.10 + sum(NOISE) / 3)
    assert verdict("table3_dp_full_nlft_below_fc", rec) == "held" and rec["fc_beats_full_nlft_cells"] == 3
    one_cell = finetuning.dp_finetuning(runs(lambda e: 0.10 if e == 1 else -0.05))
    assert verdict("table3_dp_full_nlft_below_fc", one_cell) == "contradicted"  # behind at ε = 3 and 8
    no_fc = finetuning.dp_finetuning(runs(lambda e: 0.1).query("method != 'FC'"))
    assert no_fc["fc_minus_full_nlft"] == {}
    assert verdict("table3_dp_full_nlft_below_fc", no_fc) == "not judged"


def test_null_table1():
    rng = np.random.default_rng(1)
    runs = pd.DataFrame([{"task": t, "method": m, "seed": s, "accuracy": 0.8 + 0.01 * s + _noise(rng)}
                         for t in ("digits", "letters")
                         for m in ("FC", "NLFT-1", "TAFT-1", "NLFT-2", "TAFT-2", "TAFT-1 (paper setting)")
                         for s in NULL_SEEDS])
    _not_held(["table1_taft_further_behind_far", "table1_taft_beats_fc", "table1_taft_k_beats_fc"],
              finetuning.table1_finetuning(runs, margin=0.02))


def test_null_dp():
    rng = np.random.default_rng(4)

    def runs(tasks, regimes):
        return pd.DataFrame([{"task": t, "epsilon": e, "regime": r if m != "FC" else "head", "method": m, "seed": s,
                              "accuracy": 0.3 + 0.02 * e + _noise(rng)}
                             for t in tasks for e in (1, 3, 8) for r in regimes for m in ("Ours", "NLFT", "FC")
                             for s in NULL_SEEDS])
    _not_held(["table3_dp_tangent_beats_nonlinear", "table3_dp_full_nlft_below_fc"],
              finetuning.dp_finetuning(runs(("digits",), ("full", "ln"))))
    _not_held(["table3_dp_tangent_beats_nonlinear", "table3_dp_full_nlft_below_fc"],
              finetuning.dp_finetuning(runs(("digits", "letters"), ("full", "bitfit", "ln"))), profile="paper")


def test_pretraining_readout_meets_its_target_only_when_measured():
    from types import SimpleNamespace

    b = SimpleNamespace(val_acc=0.93, seconds=12.0, history=[{}, {}, {}])
    assert finetuning.pretraining(b, 0.9) == {"val_acc": 0.93, "seconds": 12.0, "epochs": 3, "meets_target": True,
                                     "min_val_acc": 0.9}
    assert finetuning.pretraining(SimpleNamespace(val_acc=0.85, seconds=1.0, history=[{}]), 0.9)["meets_target"] is False
    # an MAE backbone has no classifier to measure: no verdict, not a failure
    assert finetuning.pretraining(SimpleNamespace(val_acc=None, seconds=1.0, history=[{}]), 0.9)["meets_target"] is None


def test_a_lost_seed_is_counted_not_dropped():
    """TAFT-1 clearly beats FC on every seed, but one TAFT-1 run gave no accuracy (NaN: diverged): the
    cell keeps N = 3 seeds, and a training claim is not held on the two that survived."""
    runs = pd.DataFrame([{"task": t, "method": m, "seed": s,
                          "accuracy": (float("nan") if (m, s) == ("TAFT-1", 2) else 0.9 if m == "TAFT-1" else 0.7)
                          + 0.001 * s}
                         for t in ("digits", "letters")
                         for m in ("FC", "NLFT-1", "TAFT-1", "NLFT-2", "TAFT-2", "TAFT-1 (paper setting)")
                         for s in SEEDS])
    rec = finetuning.table1_finetuning(runs, margin=0.02)
    assert (rec["taft_beats_fc"]["n"], rec["taft_beats_fc"]["planned"]) == (2, 3)
    r = row("table1_taft_beats_fc", rec)
    assert r["verdict"] == "inconclusive" and "n = 2 of 3" in r["reason"] and "failed run" in r["reason"]
