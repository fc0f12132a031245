"""privtrans.merge.readouts.embedding_noise (Figure 5) on hand-made noise sweeps: the values and claim, a
null, and missing runs."""

from __future__ import annotations

import numpy as np
import pytest

from privtrans.merge.readouts import embedding_noise, missing

from merge_readout_inputs import FIG5, NOT_HELD, fig5_sweep, interval_verdict


def test_fig5_values_and_claim():
    # teacher drops 90 %, 80 %, 85 % at seeds 0-2; MERGE about a third, only-ER about a third
    ends = {("chat", "teacher"): [(40, 8), (40, 6)], ("chat", "merge"): [(30, 21), (32, 22)],
            ("chat", "only_er"): [(36, 25), (40, 28)]}
    out = embedding_noise.fig5_embedding_noise(fig5_sweep(FIG5, ends), ["chat"], ["teacher", "only_er", "merge"])
    t = out["readout"]["chat"]["teacher"]["chrF++"]
    assert t["rel_drop"] == pytest.approx(0.9) and t["drop"] == 36  # the figure's seed only
    assert t["mid_mean"] == pytest.approx(20.0)  # levels 0.5 and 1.0 lie in MID_MSE
    assert out["n_er_trained_more_robust"] == 2 and out["n_er_trained"] == 2
    assert out["only_er_mid_ge_teacher"] == {"chat": True}
    assert out["chrf_clean_and_noisiest"]["chat"] == {"teacher": [40, 4], "merge": [30, 20], "only_er": [38, 25]}
    assert out["rel_drop_by_seed"]["chat"]["seeds"] == [0, 1, 2]
    assert out["rel_drop_by_seed"]["chat"]["teacher"] == pytest.approx([0.9, 0.8, 0.85])
    cell = out["more_robust"]["chat / MERGE (ER+MM)"]
    assert cell["n"] == 3 and cell["mean"] == pytest.approx(np.mean([0.9 - 1 / 3, 0.8 - 0.3, 0.85 - 10 / 32]))
    assert out["n_seeds"] == 3 and out["seeds"] == [0, 1, 2]
    assert interval_verdict("fig5_er_training_resists_noise", out) == "held"


def test_fig5_null_less_robust_or_zero_clean_is_never_held():
    teacher = [(40, 8), (40, 6)]
    # the null: each re-trained model loses the teacher's share, give or take: never held
    same = {("chat", "teacher"): teacher, ("chat", "merge"): [(30, 5), (20, 4)], ("chat", "only_er"): [(50, 12), (10, 1)]}
    null = {**FIG5, ("chat", "merge"): [40, 30, 10, 5], ("chat", "only_er"): [40, 30, 10, 3]}
    out = embedding_noise.fig5_embedding_noise(fig5_sweep(null, same), ["chat"], ["teacher", "only_er", "merge"])
    assert abs(out["more_robust"]["chat / MERGE (ER+MM)"]["mean"]) < 0.05
    assert interval_verdict("fig5_er_training_resists_noise", out) in NOT_HELD
    # MERGE loses more at every seed: contradicted; only-ER at 0 has no relative drop, no pair, never robust
    worse = {**FIG5, ("chat", "teacher"): [40, 30, 20, 20], ("chat", "merge"): [30, 10, 5, 3],
             ("chat", "only_er"): [0, 0, 0, 0]}
    ends = {("chat", "teacher"): [(40, 22), (40, 18)], ("chat", "merge"): [(30, 2), (32, 4)],
            ("chat", "only_er"): [(0, 0), (0, 0)]}
    out = embedding_noise.fig5_embedding_noise(fig5_sweep(worse, ends), ["chat"], ["teacher", "only_er", "merge"])
    assert out["readout"]["chat"]["only_er"]["chrF++"]["rel_drop"] is None
    assert out["n_er_trained_more_robust"] == 0 and out["more_robust"]["chat / MERGE (only ER)"]["n"] == 0
    assert interval_verdict("fig5_er_training_resists_noise", out) == "contradicted"
    # the figure's seed alone: no interval, not judged
    out = embedding_noise.fig5_embedding_noise(fig5_sweep(FIG5), ["chat"], ["teacher", "only_er", "merge"])
    assert interval_verdict("fig5_er_training_resists_noise", out) == "not judged"


def test_fig5_missing_runs_raise():
    curves = {("chat", "teacher"): [40, 30, 20, 20], ("chat", "merge"): [30, 10, 5, 3]}
    with pytest.raises(missing.MissingResult, match="only_er"):
        embedding_noise.fig5_embedding_noise(fig5_sweep(curves), ["chat"], ["teacher", "only_er", "merge"])
    with pytest.raises(missing.MissingResult, match="teacher"):
        embedding_noise.fig5_embedding_noise(fig5_sweep(curves), ["chat"], ["merge"])
    noisy_only = fig5_sweep(curves)
    with pytest.raises(missing.MissingResult, match="noise-free"):
        embedding_noise.fig5_embedding_noise(noisy_only[noisy_only.noise > 0], ["chat"], ["teacher", "merge"])
