"""privtrans.merge.readouts.retraining (Figure 6) on hand-made training histories: converged and stable,
unstable or diverged, every student seed asked."""

from __future__ import annotations

import pytest

from privtrans.merge import quality_experiments
from privtrans.merge.readouts import missing, retraining

from merge_readout_inputs import CONTRADICTED, HELD, trained, verdict


def test_fig6_values_and_claims():
    teacher = trained("teacher", [5.0, 2.0, 1.0])
    runs = {"merge": trained("merge", [3.0, 3.3, 2.0, 1.2], val_ce=[2.0, 2.2, 1.5, 1.0]),
            "only_er": trained("only_er", [2.0, 1.5, 1.0])}
    out = retraining.fig6_retraining(runs, teacher, "acts")
    m = out["runs"]["merge"]
    assert m["converged"] and m["stable"] and m["val_rises_initially"]
    assert out["merge_val_ratio"] == pytest.approx(0.4)
    assert out["swap_ce_jump"]["merge"] == pytest.approx(2.0)
    assert verdict("fig6_retraining_converges", out)[0] == HELD
    assert verdict("fig6_swap_raises_val_loss", out)[0] == HELD
    # a swap that costs nothing (step-0 CE at the teacher's) does not raise the loss
    flat = retraining.fig6_retraining({"merge": trained("merge", [3.0, 1.2], val_ce=[1.0, 0.9])}, teacher, "acts")
    assert verdict("fig6_swap_raises_val_loss", flat)[0] == CONTRADICTED


def test_fig6_unstable_or_diverged_fails():
    teacher = trained("teacher", [5.0, 2.0, 1.0])
    # a jump above STABLE_JUMP x the running minimum after the start
    jump = 1.01 * quality_experiments.STABLE_JUMP * 1.0
    out = retraining.fig6_retraining({"merge": trained("merge", [3.0, 1.0, jump, 0.9])}, teacher, "acts")
    assert out["merge_stable"] is False and verdict("fig6_retraining_converges", out)[0] == CONTRADICTED
    out = retraining.fig6_retraining({"merge": trained("merge", [3.0, 1.0, 0.9], diverged=True)}, teacher, "acts")
    assert out["merge_converged"] is False and verdict("fig6_retraining_converges", out)[0] == CONTRADICTED
    with pytest.raises(missing.MissingResult, match="merge"):
        retraining.fig6_retraining({"only_er": trained("only_er", [2.0, 1.0, 0.5])}, teacher, "acts")


def test_fig6_claims_ask_every_student_seed():
    teacher = trained("teacher", [5.0, 2.0, 1.0])
    good = trained("merge", [3.0, 3.3, 2.0, 1.2], val_ce=[2.0, 2.2, 1.5, 1.0])
    runs = {"merge": good}
    by_seed = {0: good, 1: trained("merge", [3.0, 2.0, 1.0], val_ce=[3.0, 2.0, 1.0]),
               2: trained("merge", [4.0, 2.0, 1.6], val_ce=[1.5, 1.2, 1.0])}
    out = retraining.fig6_retraining(runs, teacher, "acts", by_seed)
    assert out["n_merge_seeds"] == 3 and out["n_merge_converged_stably"] == 3 and out["seeds"] == [0, 1, 2]
    assert out["max_merge_val_ratio"] == pytest.approx(0.4)
    assert out["min_merge_swap_ce_jump"] == pytest.approx(1.5)
    assert out["merge_by_seed"]["1"]["swap_ce_jump"] == pytest.approx(3.0)
    assert verdict("fig6_retraining_converges", out)[0] == HELD
    assert verdict("fig6_swap_raises_val_loss", out)[0] == HELD
    # one seed of three ends at 0.6 of its start (not below half) and one has no jump: both contradicted
    # although the figure's seed alone would hold both
    slow = {**by_seed, 1: trained("merge", [3.0, 2.5, 1.8], val_ce=[3.0, 2.5, 1.8]),
            2: trained("merge", [4.0, 2.0, 1.6], val_ce=[0.9, 0.8, 0.7])}
    out = retraining.fig6_retraining(runs, teacher, "acts", slow)
    assert out["n_merge_converged_stably"] == 2 and out["merge_by_seed"]["1"]["converged_stably"] is False
    assert verdict("fig6_retraining_converges", out)[0] == CONTRADICTED
    assert verdict("fig6_swap_raises_val_loss", out)[0] == CONTRADICTED
    assert verdict("fig6_retraining_converges", retraining.fig6_retraining(runs, teacher, "acts"))[0] == HELD
