"""privtrans.book.verdicts: four verdicts whose reasons come from the numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privtrans.book import verdicts
from privtrans.book.paired import paired_difference


def iv(a, b):
    return paired_difference(list(a), list(b)).as_dict()


def test_a_null_effect_is_never_held():
    rng = np.random.default_rng(0)
    held = 0
    for _ in range(400):  # A = B plus noise: held only by the test's 2.5 % upper-tail error
        b = rng.normal(size=5)
        held += verdicts.judge_intervals(iv(b + rng.normal(0, 0.1, 5), b), 0.0)[0] == verdicts.HELD
    assert held <= 400 * 0.06
    # an exactly null, symmetric difference is never held, at any seed count
    for n in (2, 3, 5, 10):
        d = np.linspace(-1, 1, n)
        assert verdicts.judge_intervals(iv(d, np.zeros(n)), 0.0)[0] == verdicts.INCONCLUSIVE


def test_held_contradicted_inconclusive_and_not_judged():
    up, down = iv([1, 2, 3, 4, 5], [0, 1, 2, 3, 4.2]), iv([1, 2, 3, 4, 5], [2, 3, 4, 5, 6.1])
    wide = iv([1, 2, 3], [0.5, 2.2, 1])
    assert verdicts.judge_intervals(up, 0.0)[0] == verdicts.HELD
    assert verdicts.judge_intervals(down, 0.0)[0] == verdicts.CONTRADICTED
    assert verdicts.judge_intervals(wide, 0.0)[0] == verdicts.INCONCLUSIVE
    assert verdicts.judge_intervals(iv([1], [0]), 0.0)[0] == verdicts.NOT_JUDGED
    # the margin decides, not the readout's own flag: +0.96 clears -0.5 and 0 but not 2
    assert verdicts.judge_intervals(up, 2.0)[0] == verdicts.CONTRADICTED
    # "every cell" is contradicted by one contradicted cell, held only when all clear
    assert verdicts.judge_intervals({"x": up, "y": down}, 0.0)[0] == verdicts.CONTRADICTED
    assert verdicts.judge_intervals({"x": up, "y": wide}, 0.0)[0] == verdicts.INCONCLUSIVE
    assert verdicts.judge_intervals({"x": up, "y": down}, 0.0, need=1)[0] == verdicts.HELD
    # a partial rule reads as the rule, then the count that met it: not "1 of the 2" as if a tally
    reason = verdicts.judge_intervals({"x": up, "y": up, "z": down}, 0.0, need=1)[1]
    assert reason.startswith("held: at least 1 of the 3 cells' intervals clear the margin (2 clear the margin 0")
    assert verdicts.judge_intervals({"x": up, "y": up}, 0.0)[1].startswith("held: all of the 2 cells' intervals clear")
    assert verdicts.judge_intervals({"x": up, "y": wide, "z": down}, 0.0, need=2)[0] == verdicts.INCONCLUSIVE
    assert verdicts.judge_intervals({"x": down, "y": down, "z": wide}, 0.0, need=2)[0] == verdicts.CONTRADICTED
    assert verdicts.judge_intervals({"t": {"a": up, "b": up}}, 0.0)[0] == verdicts.HELD  # nested cells
    # the paper's "almost all": one cell may miss, at any grid size
    assert verdicts.judge_intervals({"x": up, "y": up, "z": wide}, 0.0, need="all but 1")[0] == verdicts.HELD
    assert verdicts.judge_intervals({"x": up, "y": down, "z": down}, 0.0, need="all but 1")[0] == verdicts.CONTRADICTED


def test_a_huge_effect_against_a_tiny_spread_needs_two_seeds():
    assert verdicts.seeds_needed(1e-6, 1.0) == 2 and verdicts.seeds_needed(0.0, 1.0) == 2
    wide = iv([1, 2, 3], [0.5, 2.2, 1])
    assert "2 paired seeds would resolve" in verdicts.judge_intervals(wide, 0.0, effect=1e6)[1]


def test_the_reason_is_built_from_the_interval():
    wide = iv([1, 2, 3], [0.5, 2.2, 1])
    verdict, reason = verdicts.judge_intervals(wide, 0.0)
    assert f"{wide['mean']:+.3g} [{wide['lo']:+.3g}, {wide['hi']:+.3g}]" in reason and "n = 3" in reason
    assert "contains the margin 0" in reason
    n = verdicts.joint_seeds([wide["mean"] / verdicts.sd_of(wide)], verdicts.ALPHA)
    assert f"about {n} paired seeds would resolve the observed difference ({wide['mean']:+.3g} beyond" in reason
    # the paper's difference inside the interval: neither shown nor excluded, never "well short"
    _, inside = verdicts.judge_intervals(wide, 0.0, effect=3.0)
    assert "lies inside the interval" in inside and "well short" not in inside
    _, with_paper = verdicts.judge_intervals(wide, 0.0, effect=0.5)
    assert "would resolve the paper's difference (+0.5 beyond the margin)" in with_paper
    _, short = verdicts.judge_intervals(wide, 0.0, effect=50.0)  # three seeds would have resolved the paper's size
    assert "more seeds are not what is missing" in short and "well short of the paper's" in short
    _, against = verdicts.judge_intervals(iv([1, 2, 3], [1.5, 2.2, 3.4]), 0.0)
    assert "points against the paper" in against


def test_seeds_needed_is_for_every_open_cell_at_once():
    """Two open cells at the same effect need more seeds together than either alone."""
    one = verdicts.joint_seeds([0.8], verdicts.ALPHA)
    two = verdicts.joint_seeds([0.8, 0.8], verdicts.ALPHA)
    assert two > one and verdicts._power(0.8, two, verdicts.ALPHA) ** 2 >= verdicts.POWER
    assert verdicts._power(0.8, two - 1, verdicts.ALPHA) ** 2 < verdicts.POWER


def test_sd_is_recovered_from_the_interval():
    a, b = [1.0, 2.5, 3.0, 4.2, 5.0], [0.2, 1.0, 2.9, 3.0, 4.8]
    d = np.subtract(a, b)
    assert verdicts.sd_of(iv(a, b)) == pytest.approx(np.std(d, ddof=1), rel=1e-9)


@pytest.mark.parametrize("d", [0.3, 0.8, 1.5])
def test_seeds_needed_is_the_smallest_n_with_80_percent_power(d):
    """Against the non-central t directly: power(n) >= 0.8 > power(n - 1)."""
    def power(n):
        crit = stats.t.ppf(0.975, n - 1)
        nc = d * math.sqrt(n)
        p = stats.nct.sf(crit, n - 1, nc) + stats.nct.cdf(-crit, n - 1, nc)
        return 1.0 if math.isnan(p) and nc > 8 else p  # the far tail, where scipy's nct gives NaN

    n = verdicts.seeds_needed(1.0, d)
    assert power(n) >= 0.8 - 1e-6 and (n == 2 or power(n - 1) < 0.8)


def test_the_paper_values_are_judged_as_exact_points():
    assert verdicts.judge_points(2.7, 0.0)[0] == verdicts.HELD
    assert verdicts.judge_points({"a": 1.0, "b": -1.0}, 0.0)[0] == verdicts.CONTRADICTED
    assert verdicts.judge_points([1.0] * 17 + [-1.0], 0.0, need=17)[0] == verdicts.HELD
    with pytest.raises(verdicts.ClaimShapeError, match="need must be"):
        verdicts.judge_points([1.0], 0.0, need=3)


def test_predicate_reasons_name_the_compared_values():
    env = {"x": 1.5, "y": 0.0, "n": 3}
    ev = lambda t: eval(t, {}, env)  # noqa: E731 (plain eval of test-only literals)
    assert verdicts.predicate_reason("x > 2 and y < 1", False, ev) == "contradicted: x = 1.5 > 2 (false)"
    assert verdicts.predicate_reason("x > 1 and y < 1", True, ev) == "held: x = 1.5 > 1 (true); y = 0 < 1 (true)"
    assert verdicts.predicate_reason("n == 3 and ok", True, lambda t: eval(t, {}, dict(env, ok=True))) == \
        "held: n = 3 == 3 (true); ok is True"


def test_bad_interval_shapes_are_named():
    with pytest.raises(verdicts.ClaimShapeError, match="paired interval"):
        verdicts.cells(0.5)
    with pytest.raises(verdicts.ClaimShapeError, match="cell 'a'"):
        verdicts.cells({"a": 1.0})


def test_identical_quantised_readings_are_inconclusive_and_the_reason_names_the_step():
    """Ties at every seed of a measure read in steps of 2 (epochs): not an exclusion of the claim."""
    tie = paired_difference([4, 4, 6, 2, 4, 6], [4, 4, 6, 2, 4, 6], resolution=2).as_dict()
    verdict, reason = verdicts.judge_intervals(tie, 0.0)
    assert verdict == verdicts.INCONCLUSIVE and "readings in steps of 2" in reason and "n = 6" in reason
    # a continuous measure exactly at the margin at every seed (every fall-back share 0): [0, 0] is a tie,
    # which the measure gives when it cannot tell, never a contradiction (nor a hold, at a margin below it)
    exact = paired_difference([4, 4, 6], [4, 4, 6]).as_dict()
    verdict, reason = verdicts.judge_intervals(exact, 0.0)
    assert verdict == verdicts.NOT_JUDGED and "a tie" in reason and "steps of" not in reason
    assert verdicts.judge_intervals(exact, -0.1)[0] == verdicts.HELD  # a margin below the tie: cleared
    assert verdicts.judge_intervals({"a": exact, "b": paired_difference([1, 1.01, 0.99], [0, 0, 0]).as_dict()}, 0.0)[0] == \
        verdicts.NOT_JUDGED  # the tie could decide the family either way


# ---------------------------------------------------------------------------------- against statsmodels
def _cells(rng, m, n=6, shift=0.0):
    diffs = [rng.normal(shift + rng.normal(0, 0.6), 1.0, n) for _ in range(m)]
    return diffs, {f"c{i}": paired_difference(list(d), [0.0] * n).as_dict() for i, d in enumerate(diffs)}


def _p_above(d, margin=0.0):
    """One-sided p of 'mean > margin' (small: the data say above) and of 'mean < margin'."""
    from scipy import stats

    t = (np.mean(d) - margin) / (np.std(d, ddof=1) / np.sqrt(len(d)))
    return float(stats.t.sf(t, len(d) - 1)), float(stats.t.cdf(t, len(d) - 1))


def test_the_interval_is_statsmodels_tconfint_mean():
    from statsmodels.stats.weightstats import DescrStatsW

    rng = np.random.default_rng(0)
    for n in (2, 3, 5, 10):
        d = rng.normal(0.3, 1.0, n)
        p = paired_difference(list(d), [0.0] * n)
        lo, hi = DescrStatsW(d).tconfint_mean(alpha=0.05)
        assert p.lo == pytest.approx(lo, rel=1e-12) and p.hi == pytest.approx(hi, rel=1e-12)


def test_a_size_band_is_statsmodels_tost():
    """Held inside a band exactly when statsmodels' paired TOST rejects both sides at 2.5 %."""
    from statsmodels.stats.weightstats import ttost_paired

    rng = np.random.default_rng(1)
    agree = 0
    for _ in range(300):
        n = int(rng.integers(3, 9))
        b = rng.normal(1.0, 0.1, n)
        a = b + rng.normal(rng.uniform(-0.3, 0.3), 0.1, n)
        held = verdicts.judge_intervals(paired_difference(list(a), list(b)).as_dict(), band=(-0.2, 0.2))[0] == \
            verdicts.HELD
        p, _, _ = ttost_paired(a, b, -0.2, 0.2)
        agree += held == (p < verdicts.ALPHA)
    assert agree == 300


@pytest.mark.parametrize("need", ["all", "any", 2, "all but 1"])
def test_the_family_levels_are_the_bonferroni_partial_conjunction(need):
    """Held when the k-th smallest one-sided p (mean above the margin) times m − k + 1 is at most
    2.5 %; contradicted when the (m − k + 1)-th smallest p of the other side times k is (statsmodels'
    Bonferroni, ``multipletests``, on the tightest m − k + 1 or k cells)."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(2)
    m = 4
    for trial in range(200):
        diffs, cells = _cells(rng, m, shift=rng.normal(0, 1))
        k = verdicts.required(need, m)
        verdict = verdicts.family_verdict(cells, 0.0, need)[0]
        up, down = zip(*(_p_above(d) for d in diffs))
        # the k-th most significant "above": Bonferroni over the m − k + 1 cells it could be among
        held = multipletests(sorted(up)[k - 1:], alpha=verdicts.ALPHA, method="bonferroni")[0][0]
        contra = multipletests(sorted(down)[m - k:], alpha=verdicts.ALPHA, method="bonferroni")[0][0] \
            if k > 0 else False
        expect = verdicts.HELD if held else verdicts.CONTRADICTED if contra else verdicts.INCONCLUSIVE
        assert verdict == expect, (trial, need, up, down)


def test_few_seeds_over_many_cells_say_they_can_hardly_contradict():
    """Six cells at n = 3: a cell is contradicted at 2.5 %/6 only 6.3 paired sd below the margin."""
    six = {f"c{i}": paired_difference([0.1, -0.2, 0.3], [0, 0, 0]).as_dict() for i in range(6)}
    _, reason = verdicts.judge_intervals(six, 0.0)
    assert "contradicted only when its mean lies 6.3 paired sd" in reason
    one = paired_difference([0.1, -0.2, 0.3, 0.0, 0.1, -0.1, 0.2, 0.05], [0] * 8).as_dict()
    assert "can hardly contradict" not in verdicts.judge_intervals(one, 0.0)[1]  # eight seeds, one cell: 0.8 sd
