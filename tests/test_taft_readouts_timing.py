"""privtrans.taft.readouts.timing on small hand-made inputs (no training)"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privtrans.taft.readouts import shards, timing

from taft_readout_inputs import NOISE, SEEDS, row, verdict


# ------------------------------------------------------------------------------------ Table 7, Figure 4, Table 8
def test_table7_and_fig4_and_cost():
    runs = pd.DataFrame([{"task": t, "setting": st, "method": m, "seed": s, "accuracy": a + e}
                         for t in ("digits", "letters") for st in ("full", "shards")
                         for m, a in (("TAFT", 0.7), ("L-CNN", 0.9)) for s, e in zip(SEEDS, NOISE)])
    rec = shards.table7_linearised_cnn(runs, 0.98, 0.94)
    assert verdict("table7_taft_beats_linearised_cnn", rec) == "contradicted"  # the CNN is 20 points ahead
    r = row("table7_taft_beats_linearised_cnn", rec)
    assert r["reading_value"] == {"CNN": 0.98, "ViT": 0.94}
    n = np.arange(1, 50)
    assert verdict("fig4_change_decays_like_one_over_n", shards.fig4_weight_change({"digits": list(3.0 / (n + 1))}, 2.0)) == "held"
    assert verdict("fig4_change_decays_like_one_over_n", shards.fig4_weight_change({"digits": list(np.ones(49))}, 2.0)) \
        == "contradicted"
    def times(taft_over_nlft, jitter=0.05):
        rng = np.random.default_rng(0)
        return pd.DataFrame([{"round": r, "batch": b, "feed": f, "phase": p, "method": m,
                              "seconds": (taft_over_nlft if m == "TAFT" else 1.0) / b * math.exp(rng.normal(0, jitter))}
                             for r in range(8) for b in (1, 32) for f in ("images", "cached")
                             for p in ("train", "inference") for m in ("NLFT", "TAFT")])

    rec = timing.cost(times(2.0))
    assert rec["train_ratio_b1_images"] == pytest.approx(2.0, rel=0.05) and rec["cached_speedup"] == pytest.approx(32.0, rel=0.1)
    assert rec["rounds"] == 8 and rec["train_log_nlft_over_taft_b1_images"]["n"] == 8
    assert verdict("table8_train_cost_about_twice", rec) == "held"
    assert verdict("table8_inference_cost", rec) == "held"
    assert verdict("table8_caching_and_batching_help", rec) == "held"
    slow = timing.cost(times(4.0))  # 4x: beyond the train bound (2.5x) on every round, within an order of magnitude
    assert verdict("table8_train_cost_about_twice", slow) == "contradicted"
    assert verdict("table8_inference_cost", slow) == "held"
    assert verdict("table8_inference_cost", timing.cost(times(12.0))) == "contradicted"  # beyond 10x on every round
    assert verdict("table8_train_cost_about_twice", timing.cost(times(2.5, jitter=0.3))) == "inconclusive"
