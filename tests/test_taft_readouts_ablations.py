"""privtrans.taft.readouts.ablations on small hand-made inputs (no training)"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privtrans.taft.readouts import ablations

from taft_readout_inputs import NULL_SEEDS, _noise, _not_held


def test_null_fig2_table12_table9():
    rng = np.random.default_rng(8)
    fig2 = pd.DataFrame([{"task": t, "variant": v, "seed": s, "accuracy": 0.7 + _noise(rng)}
                         for t in ("digits", "letters") for v in ("RSL", "CE", "MSE", "PT=T", "CLS=T") for s in NULL_SEEDS])
    _not_held(["fig2a_rsl_beats_ce", "fig2a_rsl_beats_mse"], ablations.fig2a_losses(fig2[fig2.variant.isin(["RSL", "CE", "MSE"])]))
    _not_held(["fig2b_reset_last_block_helps", "fig2c_cls_helps_far_task"],
              ablations.fig2bc_linearisation(fig2[fig2.variant.isin(["RSL", "PT=T", "CLS=T"])]))
    pgd = pd.DataFrame([{"task": t, "variant": v, "seed": s, "accuracy": 0.7 + _noise(rng), "delta_norm": 1.0}
                        for t in ("digits", "letters") for v in (ablations.pgd_variant(loss, r) for r in (10, 1) for loss in ("rsl", "ce"))
                        for s in NULL_SEEDS])
    out = ablations.table12_pgd(pgd, [10, 1])
    assert out["radii"] == [1.0, 10.0] and set(out["delta_norm"]) == {"RSL R=1", "CE R=1", "RSL R=10", "CE R=10"}
    _not_held(["table12_rsl_better_in_small_ball", "table12_ce_better_in_large_ball"], out)
    assert "learning_rates" not in out  # no lr column, nothing recorded
    rated = ablations.table12_pgd(pgd.assign(lr=[0.01 if v.startswith("CE") else 0.03 for v in pgd.variant]), [10, 1])
    assert rated["learning_rates"]["CE R=1"] == {"digits": 0.01, "letters": 0.01}
    assert rated["learning_rates"]["RSL R=10"]["letters"] == 0.03
    t9 = pd.DataFrame([{"backbone": b, "task": t, "seed": s, "accuracy": 0.7 + _noise(rng)}
                       for b in ("CLS", "CLS-small", "MAE", "CLS+") for t in ("digits", "letters") for s in NULL_SEEDS])
    _not_held(["table9_cls_beats_mae", "table9_small_cls_beats_large_mae", "table9_larger_is_better",
               "table9_more_pretraining_data_helps"], ablations.table9_pretraining(t9))


def test_fig2_records_each_variants_learning_rate_and_refuses_a_mixed_one():
    rows = [{"task": t, "variant": v, "seed": s, "accuracy": 0.7 + 0.01 * s, "lr": lr}
            for t in ("digits", "letters") for v, lr in (("RSL", 0.03), ("CE", 0.03), ("MSE", 0.01)) for s in range(3)]
    out = ablations.fig2a_losses(pd.DataFrame(rows))
    assert out["learning_rates"]["MSE"] == {"digits": 0.01, "letters": 0.01}
    assert out["learning_rates"]["RSL"] == {"digits": 0.03, "letters": 0.03}
    assert out["rsl_minus_ce"]["mean"] == pytest.approx(0.0) and out["seeds"] == [0, 1, 2]
    assert "learning_rates" not in ablations.fig2a_losses(pd.DataFrame(rows).drop(columns="lr"))
    rows[0]["lr"] = 0.001  # one seed of digits' RSL at another rate
    with pytest.raises(ValueError, match="variant 'RSL' on 'digits' ran at several learning rates"):
        ablations.fig2a_losses(pd.DataFrame(rows))
    lin = pd.DataFrame([{"task": t, "variant": v, "seed": s, "accuracy": 0.7 + (0.05 if v == "CLS=T" and t == "letters"
                                                                               else 0.0) + 0.01 * s, "lr": 0.03}
                        for t in ("digits", "letters") for v in ("RSL", "PT=T", "CLS=T") for s in range(3)])
    out = ablations.fig2bc_linearisation(lin)
    assert out["cls_minus_plain_far"]["mean"] == pytest.approx(0.05)  # the far task only
    assert out["reset_minus_pretrained"]["mean"] == pytest.approx(0.0)
    assert set(out["learning_rates"]) == {"RSL", "PT=T", "CLS=T"}
