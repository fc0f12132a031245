"""privtrans.book.trials: each claim's own test run where the truth is known; broken tests are caught."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from privtrans.book import trials
from privtrans.book import verdicts


def cell(mean, sd, n=5):
    half = 2.776 * sd / n ** 0.5 if n == 5 else verdicts._t(0.975, n - 1) * sd / n ** 0.5
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "n": n, "planned": n, "confidence": 0.95}


def claim(**kw):
    return {"id": "x", "interval": "nb.d", "margin": 0.0, **kw}


def test_a_sound_claim_passes_and_reports_its_power():
    rec = {f"c{i}": cell(0.02, 0.01) for i in range(3)}
    r = trials.interval_trials(claim(effect=0.02), rec, "dp_icl")
    assert r.passed, r.failures
    assert r.null_held <= trials.NOMINAL and r.cells == 3 and r.n == 5
    assert 0.3 < r.paper_held <= 1.0 and r.effect_from == "effect"
    assert r.reversal_held == 0.0 and r.reversal_contradicted > 0.3
    big = trials.interval_trials(claim(effect=0.05), rec, "dp_icl")
    assert big.paper_held > r.paper_held  # power grows with the effect


def test_many_cells_without_family_control_are_caught(monkeypatch):
    """'any' of 18 cells, each at 2.5 %: a null is held about 1 - 0.975**18 = 37 % of the time."""
    rec = {f"c{i}": cell(0.0, 1.0) for i in range(18)}
    c = claim(need="any", effect=1.0)
    assert trials.interval_trials(c, rec, "dp_icl").passed
    monkeypatch.setattr(verdicts, "family_levels", lambda k, n: (verdicts.ALPHA, verdicts.ALPHA))  # the old, uncorrected rule
    broken = trials.interval_trials(c, rec, "dp_icl")
    assert not broken.passed and broken.null_held > 0.2 and "null: held" in broken.failures[0]


def test_all_cells_contradicted_by_one_cell_is_family_controlled():
    """'all' of 18 cells at the paper's effect just above the margin: without Bonferroni on the
    contradicted side one cell would contradict a true claim often; with it, rarely."""
    rec = {f"c{i}": cell(0.0, 1.0) for i in range(18)}
    truth = [0.0] * 18
    rates = trials._rates(claim(), list(rec), [5] * 18, [1.0] * 18, truth, __import__("numpy").random.default_rng(0), 400)
    assert rates[verdicts.CONTRADICTED] <= 0.05


def test_a_test_that_holds_anything_fails_every_trial(monkeypatch):
    monkeypatch.setattr(verdicts, "cell_codes", lambda mean, *a, **k: 0 * __import__("numpy").asarray(mean, int))
    r = trials.interval_trials(claim(effect=0.5), {"": cell(0.5, 0.2)}, "dp_icl")
    assert not r.passed
    assert any(f.startswith("null") for f in r.failures) and any(f.startswith("reversal") for f in r.failures)


def test_a_lost_seed_that_vanishes_is_caught(monkeypatch):
    c = claim(effect=1.0)
    rec = {"": cell(1.0, 0.1)}
    assert trials.interval_trials(c, rec, "dp_icl").passed
    monkeypatch.setattr(verdicts, "lost", lambda cell: 0)  # a lost run no longer counted
    r = trials.interval_trials(c, rec, "dp_icl")
    assert not r.passed and any("lost seed" in f for f in r.failures)


def test_dropped_seeds_are_said_n_of_n():
    r = trials.interval_trials(claim(effect=1.0, lost_seeds="drop"), {"": cell(1.0, 0.1)}, "dp_icl")
    assert r.passed, r.failures


def test_a_size_claim_is_contradicted_outside_its_band():
    c = {"id": "s", "interval": "nb.d", "band": [0.1, 0.3], "effect": 0.2}
    r = trials.interval_trials(c, {"": cell(0.2, 0.02)}, "dp_icl")
    assert r.passed, r.failures
    assert verdicts.judge_intervals(cell(0.05, 0.005), band=(0.1, 0.3))[0] == verdicts.CONTRADICTED  # a real gain, too small
    assert verdicts.judge_intervals(cell(0.2, 0.01), band=(0.1, 0.3))[0] == verdicts.HELD
    assert verdicts.judge_intervals(cell(0.12, 0.05), band=(0.1, 0.3))[0] == verdicts.INCONCLUSIVE


def test_a_deterministic_predicate_shows_its_threshold():
    env = {"nb": SimpleNamespace(ratio=2.6, ok=True)}
    c = {"id": "p", "predicate": "nb.ratio <= 3.5 and nb.ok"}
    r = trials.predicate_trials(c, env, "dp_icl")
    assert r.passed and r.paper_verdict == verdicts.HELD
    assert "`nb.ratio` moving from 2.6 to 3.5" in r.threshold or "`nb.ok`" in r.threshold
    vacuous = trials.predicate_trials({"id": "v", "predicate": "nb.ratio > 0 or True"}, env, "dp_icl")
    assert not vacuous.passed and "cannot be contradicted" in vacuous.failures[0]


def test_the_paper_inputs_run_through_the_claims_own_predicate(tmp_path):
    d = tmp_path / "data" / "dp_icl"
    d.mkdir(parents=True)
    (d / "paper_tables.csv").write_text("table,method,value\nT1,ours,80.0\nT1,theirs,81.0\n")
    c = {"id": "q", "predicate": "nb.ours > nb.theirs",
         "paper_inputs": {"nb.ours": "P('paper_tables', table='T1', method='ours')",
                          "nb.theirs": "P('paper_tables', table='T1', method='theirs')"}}
    r = trials.predicate_trials(c, None, "dp_icl", tmp_path)
    assert not r.passed and "the paper's own numbers do not pass" in r.failures[0]
    assert r.threshold.startswith("`nb.")
    # stated as an erratum of the paper, the failure is the paper's, shown, and no trial failure
    e = trials.predicate_trials(dict(c, erratum="its own table gives 80 < 81"), None, "dp_icl", tmp_path)
    assert e.passed and e.paper_verdict == verdicts.CONTRADICTED and "erratum" in e.notes[0]


def test_the_sentence_says_rates_and_seeds():
    r = trials.interval_trials(claim(effect=0.02), {"": cell(0.02, 0.01)}, "dp_icl").as_dict()
    text = trials.sentence(r)
    assert text.startswith("at its least-favourable null this test holds ") and "with 5 seeds" in text
    assert "across the paired sd's 95 % interval" in text
    assert "TRIAL FAILED" in trials.sentence({**r, "passed": False, "failures": ["x"]})


@pytest.mark.parametrize("need", ["all", "any", "all but 1", 2])
def test_no_rule_holds_a_null_beyond_the_nominal_rate(need):
    rec = {f"c{i}": cell(0.0, 1.0, n=3) for i in range(6)}
    r = trials.interval_trials(claim(need=need), rec, "dp_icl")
    assert trials.rate_passes(round(r.null_held * r.draws), r.draws) and r.passed, r.failures


def test_a_count_turns_at_a_whole_unit():
    env = {"nb": SimpleNamespace(failed=6, of=6)}
    r = trials.predicate_trials({"id": "n", "predicate": "nb.failed == nb.of"}, env, "dp_icl")
    assert r.passed and r.threshold in ("`nb.failed` moving from 6 to 5", "`nb.failed` moving from 6 to 7",
                                        "`nb.of` moving from 6 to 5", "`nb.of` moving from 6 to 7")


def test_a_claim_whose_notebook_did_not_run_gets_the_cells_its_need_asks():
    """Running one notebook of a chapter leaves the others' claims without cells: the trials shape
    them from ``need`` ('all but 1' needs two cells), never a shape the rule refuses."""
    r = trials.interval_trials(claim(need="all but 1", effect=1.0), None, "dp_icl")
    assert r.cells == 2 and r.passed, r.failures
    assert trials.interval_trials(claim(need=3, effect=1.0), None, "dp_icl").cells == 3


def test_kept_trials_are_the_trials_and_any_input_change_reruns_them(tmp_path, monkeypatch):
    """run_cached keeps each claim's trials in _build/cache/trials: a second build reads what the
    first computed; a change of the claim, its cells or its recorded values computes them again."""
    (tmp_path / "data" / "dp_icl").mkdir(parents=True)
    rec = {f"c{i}": cell(0.02, 0.01) for i in range(3)}
    c, row = claim(effect=0.02), {"cells": rec}
    first = trials.run_cached("dp_icl", c, row, None, tmp_path, draws=100)
    assert first == trials.run("dp_icl", c, row, None, tmp_path, draws=100).as_dict()
    assert len(list((tmp_path / "_build" / "cache" / "trials").glob("*.json"))) == 1

    ran = []
    real = trials.run
    monkeypatch.setattr(trials, "run", lambda *a, **k: ran.append(a) or real(*a, **k))
    assert trials.run_cached("dp_icl", c, row, None, tmp_path, draws=100) == first and not ran  # kept
    trials.run_cached("dp_icl", claim(effect=0.03), row, None, tmp_path, draws=100)
    trials.run_cached("dp_icl", c, {"cells": dict(rec, c0=cell(0.02, 0.02))}, None, tmp_path, draws=100)
    trials.run_cached("dp_icl", c, row, {"nb": SimpleNamespace(d=1.0)}, tmp_path, draws=100)
    assert len(ran) == 3


def test_a_lax_cell_level_fails_at_the_least_favourable_null(monkeypatch):
    """An engine judging each cell of an 18-cell 'all' claim at 30 %: with every cell on the margin
    it is held 0.3^18 of the time and passed the old trial; with one cell on the margin and the rest
    far beyond (the least-favourable point), 30 %."""
    rec = {f"c{i}": cell(0.0, 1.0) for i in range(18)}
    assert trials.interval_trials(claim(), rec, "dp_icl").passed
    monkeypatch.setattr(verdicts, "family_levels", lambda k, n: (0.3, verdicts.ALPHA / k))
    r = trials.interval_trials(claim(), rec, "dp_icl")
    assert not r.passed and r.null_held > 0.25 and r.failures[0].startswith("null")


def test_a_lax_contradiction_rule_is_caught(monkeypatch):
    """25 % a cell on the contradicted side: a true claim (every cell on its margin) is contradicted
    far more often than 2.5 %, which no trial measured before."""
    rec = {f"c{i}": cell(0.0, 1.0) for i in range(4)}
    monkeypatch.setattr(verdicts, "family_levels", lambda k, n: (verdicts.ALPHA, 0.25))
    r = trials.interval_trials(claim(), rec, "dp_icl")
    assert not r.passed and r.null_contradicted > 0.25 and any(f.startswith("boundary") for f in r.failures)


def test_five_percent_is_told_from_two_and_a_half(monkeypatch):
    """The pass line is the stated 2.5 %, read with a binomial test on 4000 draws: a one-cell engine
    at 5 % a side fails; at 2.5 % it passes."""
    assert trials.interval_trials(claim(), {"": cell(0.0, 1.0)}, "dp_icl").passed
    monkeypatch.setattr(verdicts, "family_levels", lambda k, n: (0.05, 0.05))
    r = trials.interval_trials(claim(), {"": cell(0.0, 1.0)}, "dp_icl")
    assert not r.passed and 0.04 < r.null_held < 0.06


def _with_diffs(diffs):
    from privtrans.book.paired import paired_difference

    return paired_difference(list(diffs), [0.0] * len(diffs)).as_dict()


def test_whole_seeds_are_resampled_and_a_collapsing_seed_shows():
    """Cells that kept their per-seed differences are drawn by resampling whole seeds: one seed in
    ten collapsing (DP training's real failure) holds the null far beyond 2.5 % at the least-favourable
    point, beyond what ten normal seeds resampled give 95 % of the time; normal cells at the same sd
    never show it, and ten calm seeds pass."""
    import numpy as np

    rng = np.random.default_rng(3)
    calm = rng.standard_normal(10)
    collapsed = np.r_[rng.standard_normal(9) * 0.2, -5.0]
    ok = trials.interval_trials(claim(), {"": _with_diffs(calm)}, "dp_icl")
    assert ok.passed and "resampled" in ok.spread_from
    bad = trials.interval_trials(claim(), {"": _with_diffs(collapsed)}, "dp_icl")
    rate, normal = bad.seed_shape["held"]
    assert not bad.passed and rate > 0.08 > normal and bad.failures[0].startswith("seeds"), bad.failures
    gaussian = trials.interval_trials(claim(), {"": {k: v for k, v in _with_diffs(collapsed).items() if k != "diffs"}},
                                      "dp_icl")
    assert gaussian.passed  # the same sd, drawn normal, hides it


def test_cells_that_share_seeds_are_drawn_together():
    """Two cells whose seeds move together (the same per-seed differences) stay together in every
    draw: both held or neither, never one alone."""
    import numpy as np

    d = _with_diffs(np.random.default_rng(0).standard_normal(5) + 1.0)
    cells = trials._spec({"a": d, "b": d}, [])
    mean, *_ = trials.draw(cells, np.array([0.5, 0.5]), np.random.default_rng(1), 500)
    assert np.corrcoef(mean[:, 0], mean[:, 1])[0, 1] > 0.6


def test_power_is_shown_with_its_uncertainty():
    r = trials.interval_trials(claim(effect=0.02), {f"c{i}": cell(0.02, 0.02) for i in range(3)}, "dp_icl")
    lo, hi = r.power_range
    assert lo < r.paper_held < hi and hi - lo > 0.2  # five seeds' sd leaves the power wide open
    assert r.paper_held_ci[0] <= r.paper_held <= r.paper_held_ci[1]


def test_the_sentence_names_every_control_of_the_whole_path():
    r = trials.interval_trials(claim(effect=0.02), {"": cell(0.02, 0.01)}, "dp_icl").as_dict()
    rates = [{"control": name, "expect": expect, "rate": 0.0, "lo": 0.0, "hi": 0.1, "draws": 20}
             for name, expect in (("null", "not held"), ("null", "not contradicted"), ("creep", "never held"),
                                  ("the paper's effect", "power"))]
    r["controls"] = {"ran": True, "rates": rates, "readouts": ["privtrans.x.readouts.f"], "notes": ["a note"]}
    text = trials.sentence(r)
    assert "Through its whole path" in text and "creep: held 0%" in text and "a note" in text
    r["controls"] = {"ran": False, "why_not": "no per-seed table"}
    assert "not run (no per-seed table)" in trials.sentence(r)


def test_a_failed_control_withdraws_the_verdict_it_undermines():
    t = {"failures": ["whole path: null: held 30 %"], "sides": ["held"]}
    v, r = trials.standing("held", "held: +0.1 [+0.05, +0.15]", t)
    assert v == "not judged" and r.startswith(trials.WITHDRAWN) and "it would read: held" in r
    assert trials.standing("contradicted", "contradicted: …", t) == ("contradicted", "contradicted: …")
    both = {"failures": ["whole path: the readout does not give the recorded cells"], "sides": ["both"]}
    assert trials.standing("contradicted", "contradicted: …", both)[0] == "not judged"


def test_a_gate_that_reads_a_compared_arm_excuses_nothing():
    """Its 'not judged' gives way to the interval's own verdict; a verdict it let through stands."""
    t = {"failures": ["whole path: the precondition turns True → False when …"], "sides": ["gate"],
         "controls": {"ungated": ["contradicted", "contradicted: -0.2 [-0.3, -0.1]"]}}
    v, r = trials.standing("not judged", "not judged: the setting cannot show the effect: …", t)
    assert v == "contradicted" and "judged without its precondition" in r
    assert trials.standing("held", "held: …", t) == ("held", "held: …")
