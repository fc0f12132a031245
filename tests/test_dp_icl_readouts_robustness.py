"""privtrans.dp_icl.readouts.robustness on small hand-made inputs (no Monte Carlo): the recorded values and
the verdicts data/dp_icl/claims.yaml gives on them"""

from __future__ import annotations

import numpy as np
import pytest

from privtrans.dp_icl import experiments
from privtrans.dp_icl.readouts import robustness

from dp_icl_readout_inputs import CS, PS, fig4_out, fig4_runs, judged_not_held, verdict, verdicts


def test_fig4_values_by_hand():
    out = fig4_out(fig4_runs())
    assert out["dp_below_ridge_everywhere"] is True and out["dp_below_direct_ridge_everywhere"] is True
    assert out["ridge_growth_min"] == pytest.approx(0.5 / 0.4) == out["ridge_growth_max"]
    assert out["max_dp_over_ridge"] == pytest.approx(0.01 / 0.8)           # c = 2, p = 2.0: ridge 0.8
    assert out["dp_flat"] == pytest.approx(1.0) and out["dp_crn_max"] == pytest.approx(1e-9)
    assert out["ridge_mean"] == pytest.approx(np.mean([c * (p - 1.6) for c in CS for p in PS]))
    assert set(out["ridge_minus_dp"]) == {f"c={c} p={p:g}" for c in CS for p in PS}
    assert out["ridge_minus_dp"]["c=2 p=2"]["mean"] == pytest.approx(0.8 - 0.01)
    assert out["ridge_minus_dp"]["c=2 p=2"]["n"] == 6
    assert out["ridge_growth_paired"]["c=4"]["mean"] == pytest.approx(4 * 0.1)
    rows = verdicts({"fig4_robustness": out})
    assert rows["fig4_dp_beats_ridge"]["verdict"] == "held"
    assert rows["fig4_ridge_grows_with_p"]["verdict"] == "held"


def test_fig4_saturating_ridge_contradicts_the_growth_claim():
    """Growth is judged for every c: a ridge flat in p at c = 4 contradicts it even if c = 2 grows."""
    out = fig4_out(fig4_runs(ridge=lambda c, p: (p - 1.6) if c == 2 else 1.0))
    assert out["ridge_growth_min"] == pytest.approx(1.0) and out["ridge_growth_max"] == pytest.approx(1.25)
    # exactly flat at every repetition: a tie on the margin, which decides nothing (and never holds)
    assert verdict({"fig4_robustness": out}, "fig4_ridge_grows_with_p") == "not judged"


def test_fig4_one_cell_where_dp_loses_contradicts_the_claim():
    out = fig4_out(fig4_runs(dp=lambda c, p: 5.0 if (c, p) == (4, 2.1) else 0.01))
    assert out["dp_below_ridge_everywhere"] is False
    assert out["ridge_minus_dp"]["c=4 p=2.1"]["hi"] < 0
    assert verdict({"fig4_robustness": out}, "fig4_dp_beats_ridge") == "contradicted"


def test_fig4_small_gap_in_wide_spread_is_inconclusive():
    """Ridge above NoisyHead on average, but by far less than the spread between repetitions."""
    runs = fig4_runs(ridge=lambda c, p: 0.011, dp=lambda c, p: 0.01, jitter=0.0)
    runs["ridge"] += 0.05 * (runs["rep"] - 2.5)       # a spread in the ridge that NoisyHead does not share
    row = verdicts({"fig4_robustness": fig4_out(runs)})["fig4_dp_beats_ridge"]
    assert row["verdict"] == "inconclusive" and "seeds" in row["reason"]


def test_fig4_null_ridge_equal_to_noisyhead_is_judged_and_never_held():
    for seed in range(5):
        out = fig4_out(fig4_runs(ridge=lambda c, p: 0.01, dp=lambda c, p: 0.01, noise=0.3, seed=seed))
        rows = verdicts({"fig4_robustness": out})
        assert judged_not_held(rows["fig4_dp_beats_ridge"]), seed
        assert judged_not_held(rows["fig4_ridge_grows_with_p"]), seed


def test_fig4_a_lost_repetition_is_counted_not_joined_away():
    """A repetition whose ridge gave no value stays in the cell's count (the pairing does not keep
    only the repetitions both sides have)."""
    runs = fig4_runs()
    runs.loc[(runs.rep == 2) & (runs.c == 2) & (runs.p == 2.0), "ridge"] = np.nan
    absent = runs[~((runs.rep == 4) & (runs.c == 4) & (runs.p == 2.1))]        # and one run with no row at all
    out = robustness.fig4_robustness(experiments.robustness_summary(absent), CS, PS, absent)
    assert out["ridge_minus_dp"]["c=2 p=2"]["n"] == 5 and out["ridge_minus_dp"]["c=2 p=2"]["planned"] == 6
    assert out["ridge_growth_paired"]["c=2"]["n"] == 5 and out["ridge_growth_paired"]["c=2"]["planned"] == 6
    assert out["ridge_minus_dp"]["c=4 p=2.1"]["planned"] == 6 and out["ridge_minus_dp"]["c=4 p=2.1"]["n"] == 5
    row = verdicts({"fig4_robustness": out})["fig4_dp_beats_ridge"]
    assert row["verdict"] == "held" and "n = 5 of 6" in row["reason"]


def test_fig4_growth_needs_two_powers_and_every_quantity():
    one_p = fig4_runs()
    one_p = one_p[one_p.p == 2.0]
    out = robustness.fig4_robustness(experiments.robustness_summary(one_p), CS, [2.0], one_p)
    assert out["ridge_growth_min"] is None and out["ridge_direct_growth_max"] is None
    assert out["ridge_growth_paired"] is None
    assert verdict({"fig4_robustness": out}, "fig4_ridge_grows_with_p") == "not judged"
    runs = fig4_runs()
    s = experiments.robustness_summary(runs)
    with pytest.raises(ValueError, match="common random numbers"):
        robustness.fig4_robustness(s[s.quantity != "dp_crn"], CS, PS, runs)
    with pytest.raises(ValueError, match="c = 4, p = 2.1"):
        robustness.fig4_robustness(s, CS, PS, runs[~((runs.c == 4) & (runs.p == 2.1))])
    with pytest.raises(ValueError, match="lack the column"):
        robustness.fig4_robustness(s, CS, PS, runs.drop(columns="dp"))
