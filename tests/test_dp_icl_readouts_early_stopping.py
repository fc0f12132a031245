"""privtrans.dp_icl.readouts.early_stopping on small hand-made inputs (no Monte Carlo): the recorded values
and the verdicts data/dp_icl/claims.yaml gives on them"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privtrans.dp_icl.readouts import early_stopping

from dp_icl_readout_inputs import TS, TS13, U, _u_legs_held, fig3, t_runs, verdict, verdicts


def test_fig3_u_shape_by_hand():
    out = fig3()
    cells = out.pop("privacy_u_shape")
    steps = out.pop("descent_step_cells")
    assert out["t_star_split"] == "T* = 50 chosen on repetitions 0–4 (5), tested on repetitions 5–9 (5)"
    assert {k: v for k, v in out.items() if k != "t_star_split"} == pytest.approx(
        {"t_argmin_privacy": 50, "interior_minimum": True, "rise_after_min": 4.0, "drop_before_min": 8.0,
         "descent_frac_decreasing": 1.0, "min_privacy_cost": 1.0, "t_star_privacy": 50})
    # log differences, paired within each tested repetition (five of them)
    assert cells["falls to the minimum"]["mean"] == pytest.approx(math.log(8))
    assert cells["rises after it"]["mean"] == pytest.approx(math.log(4))
    assert cells["rises after it"]["n"] == cells["rises after it"]["planned"] == 5
    assert set(steps) == {"T 1→50", "T 50→100", "T 100→200"}
    assert steps["T 1→50"]["mean"] == pytest.approx(math.log(50)) and steps["T 1→50"]["n"] == 10
    rows = verdicts({"fig3_early_stopping": {**out, "privacy_u_shape": cells, "descent_step_cells": steps}})
    assert rows["fig3_u_shape"]["verdict"] == "held" and rows["fig3_descent_falls"]["verdict"] == "held"


def test_u_shape_chooses_t_star_on_one_half_and_tests_the_other():
    """A bottom that only the choosing half shows: T* is where they put it, and the tested half,
    which is flat, does not confirm it."""
    runs = t_runs({"privacy": lambda t: 1.0}, noise=0.3, seed=4)
    choose, test = early_stopping.halves(sorted(runs.rep.unique()))
    assert choose == [0, 1, 2, 3, 4] and test == [5, 6, 7, 8, 9]
    assert early_stopping.halves([0, 1, 2]) == ([0], [1, 2])
    runs.loc[runs.rep.isin(choose) & (runs["T"] == 100), "privacy"] = 1e-3   # a deep dip the tested half lacks
    u = early_stopping.u_shape_cells(runs, "privacy", TS, "cost")
    assert u["t_star"] == 100 and u["chosen_on"] == choose and u["tested_on"] == test
    assert all(c["n"] == 5 for c in u["cells"].values())
    assert verdict({"fig3_early_stopping": {**fig3(), "privacy_u_shape": u["cells"]}}, "fig3_u_shape") != "held"


def test_u_shape_flat_null_is_held_at_most_its_level_per_leg():
    """A flat cost (the same at every T, independent noise per run) at the ci grid and repetitions:
    with T* chosen on the other half each leg clears zero at most ~2.5 % of 400 draws (here within
    sampling error of it); chosen on the tested repetitions, it clears far more often."""
    rng = np.random.default_rng(20261201)
    split, same = np.zeros(2), np.zeros(2)
    draws = 400
    for _ in range(draws):
        runs = pd.DataFrame([dict(rep=r, T=t, privacy=math.exp(0.3 * rng.standard_normal()))
                             for r in range(20) for t in TS13])
        split += _u_legs_held(runs, split=True)
        same += _u_legs_held(runs, split=False)
    assert (split / draws <= 0.045).all(), split / draws
    assert (same / draws >= 0.08).all(), same / draws


def test_fig3_monotone_privacy_cost_contradicts_the_claim():
    out = fig3(privacy=lambda t: 1 / t)
    assert out["interior_minimum"] is False and out["t_argmin_privacy"] == 200 and out["rise_after_min"] == 1.0
    assert out["t_star_privacy"] == 100                    # the interior T with the smallest mean
    assert out["privacy_u_shape"]["rises after it"]["hi"] < 0
    assert verdict({"fig3_early_stopping": out}, "fig3_u_shape") == "contradicted"
    rising_descent = fig3(descent={1: 1.0, 50: 0.5, 100: 0.6, 200: 0.1}.get, noise=0.01)
    assert rising_descent["descent_frac_decreasing"] == pytest.approx(2 / 3)
    assert rising_descent["descent_step_cells"]["T 50→100"]["hi"] < 0
    rows = verdicts({"fig3_early_stopping": rising_descent})
    assert rows["fig3_descent_falls"]["verdict"] == "contradicted" and rows["fig3_u_shape"]["verdict"] == "held"


def test_fig3_missing_horizon_raises_and_two_horizons_cannot_show_a_minimum():
    runs = t_runs({"descent": lambda t: 1 / t, "privacy": U.get})
    with pytest.raises(ValueError, match="T=100"):
        early_stopping.fig3_early_stopping(runs[runs["T"] != 100], TS)
    two = early_stopping.fig3_early_stopping(t_runs({"descent": {1: 1.0, 50: 0.5}.get, "privacy": {1: 2.0, 50: 1.0}.get},
                                              Ts=[1, 50]), [1, 50])
    assert two["interior_minimum"] is None and two["privacy_u_shape"] is None
    assert verdict({"fig3_early_stopping": two}, "fig3_u_shape") == "not judged"


def test_fig3_one_run_per_horizon_is_not_judged():
    out = fig3(reps=1)
    assert out["privacy_u_shape"] is None
    rows = verdicts({"fig3_early_stopping": out})
    assert rows["fig3_u_shape"]["verdict"] == "not judged" and rows["fig3_descent_falls"]["verdict"] == "not judged"


def test_fig3_a_lost_repetition_is_counted_and_said():
    runs = t_runs({"descent": lambda t: 1 / t, "privacy": U.get}, noise=0.01)
    runs.loc[(runs.rep == 7) & (runs["T"] == 200), "privacy"] = np.nan
    runs.loc[(runs.rep == 2) & (runs["T"] == 50), "descent"] = np.nan
    out = early_stopping.fig3_early_stopping(runs, TS)
    rises = out["privacy_u_shape"]["rises after it"]
    assert rises["n"] == 4 and rises["planned"] == 5
    assert out["descent_step_cells"]["T 1→50"]["n"] == 9
    rows = verdicts({"fig3_early_stopping": out})
    assert rows["fig3_u_shape"]["verdict"] == "held" and "n = 4 of 5" in rows["fig3_u_shape"]["reason"]
