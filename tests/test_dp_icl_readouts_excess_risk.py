"""privtrans.dp_icl.readouts.excess_risk on small hand-made inputs (no Monte Carlo): the recorded values
and the verdicts data/dp_icl/claims.yaml gives on them"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privtrans.dp_icl import experiments
from privtrans.dp_icl.readouts import excess_risk

from dp_icl_readout_inputs import (
    EPS,
    FIG1_INTERVALS,
    JUDGED_NOT_HELD,
    NS,
    authors,
    elsewhere,
    fig1_runs,
    fig2_runs,
    grid,
    judged_not_held,
    pattern,
    power_law,
    verdict,
    verdicts,
)


def test_independent_difference_by_hand_keeps_lost_repetitions():
    """a − b of independent sets of repetitions: the two standard errors, t at the smaller count − 1."""
    from scipy import stats

    a, b = [3.0, 4.0, 5.0, 6.0], [1.0, 2.0, 2.0, None, 3.0]
    c = excess_risk.independent_difference(a, b)
    se = math.hypot(np.std(a, ddof=1) / 2, np.std([1, 2, 2, 3], ddof=1) / 2)
    h = stats.t.ppf(0.975, 3) * se
    assert c == pytest.approx({"mean": 4.5 - 2.0, "lo": 2.5 - h, "hi": 2.5 + h, "n": 4, "planned": 5,
                               "confidence": 0.95})
    one = excess_risk.independent_difference([3.0, None], [1.0, 2.0])   # one repetition ran: no interval
    assert one["lo"] is None and one["hi"] is None and one["n"] == 1 and one["planned"] == 2


def test_fig1_values_by_hand():
    ref = authors("fig1", {(N, e): 0.5 * power_law(N, e) for N in (1000, 2000) for e in EPS})
    out = excess_risk.fig1_low_dim(fig1_runs(), ref, NS, EPS)
    assert out["fall_ratio"] == pytest.approx({"0.2": 0.25, "0.4": 0.25, "0.6": 0.25, "0.8": 0.25})
    assert out["all_fall_with_n"] is True
    assert out["frac_consecutive_decreasing"] == 1.0 and out["frac_ordered_by_eps"] == 1.0
    # power laws fitted only from SLOPE_EPS_MIN up: three eps (0.4, 0.6, 0.8), three N
    assert set(out["slope_in_n"]) == {"0.4", "0.6", "0.8"}
    assert out["slope_in_n"]["0.4"] == pytest.approx(-1.0)
    assert out["slope_in_eps"] == pytest.approx({"1000": -2.0, "2000": -2.0, "4000": -2.0})
    # ours are twice the authors' at the 8 cells both have; N = 4000 is not in their frame
    assert out["median_ratio_to_authors"] == pytest.approx(2.0)
    assert out["max_abs_log_ratio_to_authors"] == pytest.approx(math.log(2))
    assert set(out["authors_ratio_cells"]) == {f"N={N} ε={e:g}" for N in (1000, 2000) for e in EPS}
    assert out["authors_ratio_cells"]["N=1000 ε=0.2"]["mean"] == pytest.approx(2.0)
    assert out["gd_floor"] == pytest.approx(1e-6)
    assert out["excess_at_min_eps"] == pytest.approx({"1000": 25.0, "2000": 12.5, "4000": 6.25})
    # the intervals the claims judge: the fall N = 1000 -> 4000 is 25 - 6.25 at eps = 0.2
    assert set(out["fall_first_to_last_n"]) == {"ε=0.2", "ε=0.4", "ε=0.6", "ε=0.8"}
    cell = out["fall_first_to_last_n"]["ε=0.2"]
    assert cell["mean"] == pytest.approx(25 - 6.25) and cell["n"] == cell["planned"] == 8
    assert len(out["rise_as_eps_falls"]) == 3 * 3                    # three N, three neighbouring eps
    assert out["rise_as_eps_falls"]["N=1000 ε 0.2→0.4"]["mean"] == pytest.approx(25 - 6.25)
    rows = verdicts({"fig1_low_dim": out})
    assert {cid: rows[cid]["verdict"] for cid in FIG1_INTERVALS} == dict.fromkeys(FIG1_INTERVALS, "held")
    assert rows["fig1_matches_authors_csv"]["verdict"] == "contradicted"      # twice the authors'


def test_fig1_eps_steps_are_paired_within_a_repetition():
    """Every eps of a repetition shares its luck: the paired interval sees through it, the two
    standard errors of independent repetitions would not."""
    out = excess_risk.fig1_low_dim(fig1_runs(spread=0.9, f=lambda N, e: power_law(N, e, b=-0.2)), elsewhere("fig1"),
                                NS, EPS)
    cell = out["rise_as_eps_falls"]["N=1000 ε 0.2→0.4"]
    x = lambda e: [power_law(1000, e, b=-0.2) * (1 + 0.9 * w) for w in pattern(8)]  # noqa: E731
    wider = excess_risk.independent_difference(x(0.2), x(0.4))
    assert cell["mean"] == pytest.approx(wider["mean"])
    assert cell["hi"] - cell["lo"] < (wider["hi"] - wider["lo"]) / 2 and cell["lo"] > 0 > wider["lo"]
    assert verdict({"fig1_low_dim": out}, "fig1_rises_as_eps_falls") == "held"


def test_fig1_authors_agreement_is_an_interval_on_our_repetitions():
    """Within 35 % of the authors' value when the interval of our mean over theirs lies inside the
    band; wholly outside it: contradicted; overlapping its edge: inconclusive."""
    near = authors("fig1", {(N, e): power_law(N, e) / 1.05 for N in NS for e in EPS})
    assert verdict({"fig1_low_dim": excess_risk.fig1_low_dim(fig1_runs(), near, NS, EPS)},
                   "fig1_matches_authors_csv") == "held"
    edge = authors("fig1", {(N, e): power_law(N, e) / 1.35 for N in NS for e in EPS})
    out = excess_risk.fig1_low_dim(fig1_runs(), edge, NS, EPS)
    assert out["authors_ratio_cells"]["N=1000 ε=0.2"]["mean"] == pytest.approx(1.35)
    assert verdict({"fig1_low_dim": out}, "fig1_matches_authors_csv") in JUDGED_NOT_HELD


def test_fig1_rise_with_n_at_one_eps_contradicts_the_claim():
    bump = lambda N, e: power_law(N, e) * (10 if (N == 4000 and e == 0.2) else 1)  # noqa: E731
    out = excess_risk.fig1_low_dim(fig1_runs(bump), elsewhere("fig1"), NS, EPS)
    assert out["fall_ratio"]["0.2"] > 1
    assert out["all_fall_with_n"] is False
    assert out["frac_consecutive_decreasing"] == pytest.approx(7 / 8)
    assert out["fall_first_to_last_n"]["ε=0.2"]["hi"] < 0
    assert verdict({"fig1_low_dim": out}, "fig1_falls_with_n") == "contradicted"


def test_fig1_falls_with_n_inconclusive_when_the_fall_is_within_the_noise():
    out = excess_risk.fig1_low_dim(fig1_runs(lambda N, e: power_law(N, e, a=-0.05), spread=0.9), elsewhere("fig1"),
                                NS, EPS)
    row = verdicts({"fig1_low_dim": out})["fig1_falls_with_n"]
    assert row["verdict"] == "inconclusive" and row["held"] is False
    assert "seeds" in row["reason"]


def test_fig1_consecutive_steps_need_their_interval_to_clear_zero():
    tight = excess_risk.fig1_low_dim(fig1_runs(), elsewhere("fig1"), NS, EPS)
    assert tight["consecutive_pairs"] == 2 * len(EPS) and tight["consecutive_falls"] == tight["consecutive_pairs"]
    assert verdict({"fig1_low_dim": tight}, "fig1_falls_between_consecutive_n") == "held"
    # one clear rise between neighbouring N: named, and allowed (the authors' own CSV has one)
    bump = lambda N, e: power_law(N, e) * (10 if (N == 4000 and e == 0.2) else 1)  # noqa: E731
    out = excess_risk.fig1_low_dim(fig1_runs(bump), elsewhere("fig1"), NS, EPS)
    assert out["consecutive_rises"] == 1 and out["consecutive_rise_at"] == ["ε=0.2: N 2000→4000"]
    assert verdict({"fig1_low_dim": out}, "fig1_falls_between_consecutive_n") == "held"
    # two clear rises: contradicted
    two = lambda N, e: power_law(N, e) * (10 if (N == 4000 and e in (0.2, 0.4)) else 1)  # noqa: E731
    out = excess_risk.fig1_low_dim(fig1_runs(two), elsewhere("fig1"), NS, EPS)
    assert out["consecutive_rises"] == 2
    assert verdict({"fig1_low_dim": out}, "fig1_falls_between_consecutive_n") == "contradicted"
    # a fall smaller than its noise: unresolved, so inconclusive rather than held
    noisy = excess_risk.fig1_low_dim(fig1_runs(lambda N, e: power_law(N, e, a=-0.05), spread=0.9), elsewhere("fig1"),
                                  NS, EPS)
    assert noisy["consecutive_unresolved"] > 0 and noisy["consecutive_rises"] == 0
    assert verdict({"fig1_low_dim": noisy}, "fig1_falls_between_consecutive_n") == "inconclusive"
    # a tie is never a fall
    flat = excess_risk.fig1_low_dim(fig1_runs(lambda N, e: 1.0), elsewhere("fig1"), NS, EPS)
    assert flat["consecutive_falls"] == 0


def test_fig1_eps_order_violated_contradicts_the_claim():
    flat = lambda N, e: power_law(N, e) if e != 0.8 else power_law(N, 0.4)  # noqa: E731  eps 0.8 above 0.6
    out = excess_risk.fig1_low_dim(fig1_runs(flat), elsewhere("fig1"), NS, EPS)
    assert out["frac_ordered_by_eps"] == pytest.approx(2 / 3)
    assert out["rise_as_eps_falls"]["N=1000 ε 0.6→0.8"]["hi"] < 0
    assert verdict({"fig1_low_dim": out}, "fig1_rises_as_eps_falls") == "contradicted"


def test_fig1_null_no_trend_is_judged_and_never_held():
    """The same excess risk at every N and eps, plus noise, over 8 repetitions: no claim of a trend
    holds, and each is judged (inconclusive or contradicted, not 'not judged'); our mean on the edge
    of the authors' band is not held either."""
    for seed in range(5):
        runs = fig1_runs(lambda N, e: 1.0, noise=0.3, seed=seed)
        out = excess_risk.fig1_low_dim(runs, authors("fig1", grid(lambda N, e: 1 / 1.35)), NS, EPS)
        rows = verdicts({"fig1_low_dim": out})
        for cid in (*FIG1_INTERVALS, "fig1_matches_authors_csv"):
            assert judged_not_held(rows[cid]), (seed, cid, rows[cid]["reason"])


def test_fig1_a_lost_repetition_is_counted_and_said():
    runs = fig1_runs()
    runs.loc[(runs.method == experiments.noisyhead()) & (runs.N == 1000) & (runs.eps == 0.2) & (runs.rep == 3), "excess"] = np.nan
    out = excess_risk.fig1_low_dim(runs, elsewhere("fig1"), NS, EPS)
    cell = out["fall_first_to_last_n"]["ε=0.2"]
    assert cell["n"] == 7 and cell["planned"] == 8
    assert out["rise_as_eps_falls"]["N=1000 ε 0.2→0.4"]["n"] == 7
    row = verdicts({"fig1_low_dim": out})["fig1_falls_with_n"]
    assert row["verdict"] == "held" and "n = 7 of 8" in row["reason"]       # lost_seeds: drop, and said


@pytest.mark.parametrize("broken", ["drop", "nan", "zero"])
def test_fig1_missing_cell_raises(broken):
    """An eps missing at one N, a NaN mean or a zero mean stops the readout: never a smaller grid."""
    if broken == "drop":
        runs = fig1_runs(drop=[(2000, 0.6)])
    else:
        runs = fig1_runs()
        runs.loc[(runs.N == 2000) & (runs.eps == 0.6), "excess"] = np.nan if broken == "nan" else 0.0
    with pytest.raises(ValueError, match="N=2000 eps=0.6"):
        excess_risk.fig1_low_dim(runs, elsewhere("fig1"), NS, EPS)


def test_fig1_eps_absent_everywhere_raises():
    with pytest.raises(ValueError, match="eps=1"):
        excess_risk.fig1_low_dim(fig1_runs(), elsewhere("fig1"), NS, EPS + [1.0])


def test_fig1_undefined_values_are_none():
    """One N: no trend in N; no setting shared with the authors: no ratio. None, never 0 or a pass."""
    runs = fig1_runs()
    out = excess_risk.fig1_low_dim(runs[runs.N == 1000], authors("fig1", {(3000, 0.2): 1.0}), [1000], EPS)
    for k in ("fall_ratio", "all_fall_with_n", "frac_consecutive_decreasing", "slope_in_n",
              "median_ratio_to_authors", "max_abs_log_ratio_to_authors", "fall_first_to_last_n",
              "authors_ratio_cells"):
        assert out[k] is None, k
    rows = verdicts({"fig1_low_dim": out})
    assert rows["fig1_matches_authors_csv"]["verdict"] == "not judged"
    assert "not computed" in rows["fig1_matches_authors_csv"]["reason"]
    assert rows["fig1_falls_with_n"]["verdict"] == "not judged"
    assert rows["fig1_falls_between_consecutive_n"]["verdict"] == "not judged"


def test_fig2_is_judged_at_the_given_delta():
    ref = authors("fig2", {(1000, 0.2): 50.0}, delta=1e-2)
    at_paper = excess_risk.fig2_high_dim(fig2_runs(), ref, NS, EPS, 1e-5)
    assert at_paper["delta_judged"] == 1e-5
    assert at_paper["frac_consecutive_decreasing_in_n"] == 1.0 and at_paper["frac_ordered_by_eps"] == 1.0
    assert at_paper["dp_over_gd_at_max_eps"] == pytest.approx(1.0)
    assert at_paper["dp_over_gd_at_min_eps"] == pytest.approx(16.0)
    # the authors' CSV is matched on delta too: only the delta = 1e-2 cell at N = 1000
    assert at_paper["ratio_to_authors"] == pytest.approx({"N=1000 δ=0.01 ε=0.2": power_law(1000, 0.2, a=1) / 50})
    cells = at_paper["falls_with_n_and_eps"]
    assert set(cells["with N"]) == {"ε=0.2", "ε=0.4", "ε=0.6", "ε=0.8"}
    assert set(cells["with ε"]) == {"N=1000", "N=2000", "N=4000"}
    assert cells["with ε"]["N=1000"]["mean"] == pytest.approx(25 - 25 / 16)
    assert verdict({"fig2_high_dim": at_paper}, "fig2_falls_with_n_and_eps") == "held"
    at_code = excess_risk.fig2_high_dim(fig2_runs(), ref, NS, EPS, 1e-2)       # rises with N there
    assert at_code["frac_consecutive_decreasing_in_n"] == 0.0
    assert verdict({"fig2_high_dim": at_code}, "fig2_falls_with_n_and_eps") == "contradicted"


def test_fig2_null_no_trend_is_judged_and_never_held():
    for seed in range(5):
        runs = fig2_runs(lambda N, e: 1e-4, noise=0.3, seed=seed)
        out = excess_risk.fig2_high_dim(runs, elsewhere("fig2", delta=1e-2), NS, EPS, 1e-5)
        assert judged_not_held(verdicts({"fig2_high_dim": out})["fig2_falls_with_n_and_eps"]), seed


def test_fig2_unknown_delta_raises_and_no_overlap_is_none():
    with pytest.raises(ValueError, match="δ = 0.001"):
        excess_risk.fig2_high_dim(fig2_runs(), elsewhere("fig2", delta=1e-2), NS, EPS, 1e-3)
    out = excess_risk.fig2_high_dim(fig2_runs(), authors("fig2", {(5000, 0.2): 1.0}, delta=1e-2), NS, EPS, 1e-5)
    assert out["ratio_to_authors"] is None
