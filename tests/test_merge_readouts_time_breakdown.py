"""privtrans.merge.readouts.time_breakdown (Figure 1) on hand-made time shares and timing rounds: the
values, the claims' verdicts, a null at the thresholds, and a missing run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privtrans.merge import cost_experiments
from privtrans.merge.readouts import missing, time_breakdown

from merge_readout_inputs import (
    CONTRADICTED,
    ENC,
    GEN,
    HELD,
    LINK,
    NOT_HELD,
    ROUNDS5,
    fig1,
    fig1_runs,
    interval_verdict,
    verdict,
)


def test_fig1_shares_and_claim():
    out = time_breakdown.fig1_time_breakdown(cost_experiments.fig1_shares(fig1_runs()))
    assert out["enc_time_share_softmax_act_norm"] == pytest.approx(7.5 / 10)
    assert out["gen_byte_share_embed_gen"] == pytest.approx(1000 / 1500)
    assert out["enc_byte_share_embed_gen"] == pytest.approx(100 / 1000)  # the encoder has no Gen group
    assert sum(out["gen_time_shares"].values()) == pytest.approx(1.0)
    # the encoder's largest group is Softmax (6 of 10 s), generation's is Gen (5 of 10 s)
    assert out["enc_time_share_largest"] == pytest.approx(0.6) and out["enc_time_largest_group"] == "Softmax"
    assert out["gen_time_share_largest"] == pytest.approx(0.5) and out["gen_time_largest_group"] == "Gen"
    assert verdict("fig1_generator_embed_gen_bytes", out)[0] == HELD


def test_fig1_time_claims_are_judged_across_timing_rounds():
    out = fig1()
    assert out["timing_rounds"] == 5
    assert out["enc_time_share_softmax_act_norm_by_round"][1] == pytest.approx(7.8 / 10.3)
    cell = out["enc_nonlinear_time_share"]
    assert cell["n"] == 5 and cell["planned"] == 5
    assert cell["mean"] == pytest.approx(np.mean(out["enc_time_share_softmax_act_norm_by_round"]))
    gap = out["gen_time_balanced"]["largest share: encoder − generation"]
    assert gap["mean"] == pytest.approx(np.mean([e - g for e, g in zip(out["enc_time_share_largest_by_round"],
                                                                       out["gen_time_share_largest_by_round"])]))
    assert out["gen_time_balanced"]["Embed + Gen share − 0.25"]["mean"] == pytest.approx(
        np.mean(out["gen_time_share_embed_gen_by_round"]) - 0.25)
    assert interval_verdict("fig1_encoder_nonlinear_dominates", out) == HELD
    assert interval_verdict("fig1_generator_time_balanced", out) == HELD
    # an encoder dominated by its linear layers fails the encoder claim, and generation (largest
    # share ~0.5) is then no more balanced than the encoder (largest share ~2 / 4.1, Linear)
    low = fig1({r: (0.1 + i / 100, g) for i, (r, (_, g)) in enumerate(ROUNDS5.items())})
    assert interval_verdict("fig1_encoder_nonlinear_dominates", low) == CONTRADICTED
    assert interval_verdict("fig1_generator_time_balanced", low) == CONTRADICTED
    # Embed + Gen under a quarter of generation's time at every round: contradicted, whatever the balance
    thin = fig1({r: (e, 0.2 + i / 50, 0.1) for i, (r, (e, _)) in enumerate(ROUNDS5.items())})
    assert max(thin["gen_time_share_embed_gen_by_round"]) < 0.25
    assert interval_verdict("fig1_generator_time_balanced", thin) == CONTRADICTED
    # one timing round decides nothing
    with pytest.raises(missing.MissingResult, match="two timing rounds"):
        fig1({0: (6.0, 5.0)})


def test_fig1_null_time_shares_at_the_thresholds_are_not_held():
    """The null: the encoder's nonlinear share at one half, give or take; generation's largest share
    as large as the encoder's and Embed + Gen at a quarter, give or take: judged, never held."""
    noise = (0.0, 0.01, -0.012, 0.008, -0.006)
    # encoder: Softmax s.t. (Softmax + 1.5) / (Softmax + 4) = 0.5 + e
    at_half = {r: ((0.5 + e) * 4 - 1.5) / (0.5 - e) for r, e in enumerate(noise)}
    out = fig1({r: (x, 5.0) for r, x in at_half.items()})
    assert out["enc_nonlinear_time_share"]["mean"] == pytest.approx(0.5, abs=0.01)
    assert interval_verdict("fig1_encoder_nonlinear_dominates", out) in NOT_HELD
    # generation: the shares set directly, the encoder's largest (Softmax) as large as generation's
    # and Embed + Gen at a quarter, each give or take the round's noise
    by_round = {}
    for r, e in enumerate(noise):
        enc = pd.Series({"Embed": 0.05, "Linear": 0.25, "Softmax": 0.4 + e, "Norm": 0.2 - e, "Act": 0.1})
        gen = pd.Series({"Embed": 0.05, "Gen": 0.2 + e, "Linear": 0.15, "Softmax": 0.4 - e / 2, "Norm": 0.2 - e / 2})
        by_round[r] = pd.DataFrame({cost_experiments.ENCODER: enc, cost_experiments.GENERATOR: gen}).T.fillna(0.0)
    out = time_breakdown.fig1_time_rounds(by_round)
    assert out["gen_time_balanced"]["Embed + Gen share − 0.25"]["mean"] == pytest.approx(0.0, abs=0.01)
    assert abs(out["gen_time_balanced"]["largest share: encoder − generation"]["mean"]) < 0.01
    assert interval_verdict("fig1_generator_time_balanced", out) in NOT_HELD


def test_fig1_missing_run_raises():
    shares = cost_experiments.fig1_shares(fig1_runs())
    with pytest.raises(missing.MissingResult, match="encoder"):
        time_breakdown.fig1_time_breakdown({k: t.drop(index=cost_experiments.ENCODER) for k, t in shares.items()})
    by_round = cost_experiments.fig1_round_shares(fig1_runs(rounds=ROUNDS5))
    with pytest.raises(missing.MissingResult, match="round 3"):
        time_breakdown.fig1_time_rounds({**by_round, 3: by_round[3].drop(index=cost_experiments.GENERATOR)})
    # runs made without timing rounds cannot be split into them
    with pytest.raises(ValueError, match="timing round"):
        cost_experiments.fig1_round_shares(fig1_runs().drop(columns="timing_round"))


def test_fig1a_substitutes_help_the_encoder_not_generation():
    out = time_breakdown.fig1a_speedups(ENC, GEN, LINK)
    assert out["mpcformer_min_speedup_encoder"] == 2.7 and out["mpcformer_max_speedup_generation"] == 1.1
    assert verdict("fig1a_substitutes_help_encoder_not_generation", out)[0] == HELD
    # one substitute below half the figure's 4x on the encoder fails; so does 2x or more on generation
    assert verdict("fig1a_substitutes_help_encoder_not_generation",
                   time_breakdown.fig1a_speedups({**ENC, "mpcformer_sf2relu": 1.9}, GEN, LINK))[0] == CONTRADICTED
    assert verdict("fig1a_substitutes_help_encoder_not_generation",
                   time_breakdown.fig1a_speedups(ENC, {**GEN, "mpcformer_sf2quad": 2.0}, LINK))[0] == CONTRADICTED
    # the same speed-up on both (what a substitute that changes nothing would give) fails
    assert verdict("fig1a_substitutes_help_encoder_not_generation", time_breakdown.fig1a_speedups(GEN, GEN, LINK))[0] == CONTRADICTED
    with pytest.raises(missing.MissingResult, match="sf2quad"):
        time_breakdown.fig1a_speedups({"mpcformer_sf2relu": 2.7}, GEN, LINK)
