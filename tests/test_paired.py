"""privtrans.book.paired: the interval is scipy's paired t interval, ties and single seeds never hold."""

import math

import numpy as np

import pytest
from scipy import stats

from privtrans.book.paired import paired_difference


def test_matches_scipy_paired_t_interval():
    a, b = [0.31, 0.35, 0.29, 0.40, 0.33], [0.27, 0.30, 0.26, 0.35, 0.30]
    p = paired_difference(a, b)
    d = [x - y for x, y in zip(a, b)]
    lo, hi = stats.t.interval(0.95, len(d) - 1, loc=sum(d) / len(d), scale=stats.sem(d))
    assert p.n == 5 and math.isclose(p.lo, lo) and math.isclose(p.hi, hi)
    assert p.held is True and "clears" in p.reason
    # the one-sample t test on the differences agrees with the interval's verdict
    assert stats.ttest_rel(a, b, alternative="greater").pvalue < 0.025


def test_margin_and_ties():
    assert paired_difference([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]).held is False  # an exact tie never holds
    p = paired_difference([0.5, 0.75, 0.625], [0.25, 0.5, 0.375])  # differences all 0.25: zero width
    assert p.held is True
    assert paired_difference([0.5, 0.75, 0.625], [0.25, 0.5, 0.375], margin=0.25).held is False
    noisy = paired_difference([0.5, 0.2, 0.9], [0.4, 0.5, 0.45])
    assert noisy.lo < 0 < noisy.hi and noisy.held is False


def test_missing_values_and_one_seed_are_not_judged():
    p = paired_difference([0.5, None, float("nan")], [0.4, 0.3, 0.2])
    assert p.n == 1 and p.held is None and "not judged" in p.reason
    assert paired_difference([None], [1.0]).held is None


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="one value per seed"):
        paired_difference([1, 2], [1])
    with pytest.raises(ValueError, match="confidence"):
        paired_difference([1, 2], [1, 2], confidence=95)
    with pytest.raises(TypeError, match="sequence"):
        paired_difference("abc", [1, 2, 3])


def test_seeds_are_the_notebooks_seed_and_those_after_it():
    from privtrans.book.paired import seeds

    assert seeds(3, 2) == [3, 4] and seeds(0, 1) == [0]
    with pytest.raises(ValueError, match="positive integer"):
        seeds(0, 0)


# ------------------------------------------------------------------------------------ quantised readings
def test_ties_of_quantised_readings_are_not_certainty():
    """(a) Identical readings at every seed, quantised in steps of q: the interval contains 0 and is
    wider than [0, 0], so the verdict is "cannot tell", not "contradicted"."""
    from privtrans.book.verdicts import INCONCLUSIVE, cell_verdict

    epochs = [6.0, 6.0, 6.0, 8.0, 8.0, 8.0]
    flat = paired_difference(epochs, epochs)
    assert (flat.lo, flat.hi) == (0.0, 0.0)   # without the resolution: the zero-width interval that called a tie contradicted
    p = paired_difference(epochs, epochs, resolution=2.0)
    assert p.mean == 0 and p.lo < 0 < p.hi and p.hi - p.lo > 0
    assert p.held is False and p.resolution == 2.0 and "quantised in steps of 2" in p.reason
    assert cell_verdict(p.as_dict(), 0.0) == INCONCLUSIVE
    hits = [38 / 943, 25 / 943, 39 / 943]   # HIT@10 over 943 users, the same for both methods
    h = paired_difference(hits, hits, resolution=1 / 943)
    assert h.lo < 0 < h.hi and cell_verdict(h.as_dict(), 0.0) == INCONCLUSIVE


def test_zero_resolution_leaves_the_interval_bit_for_bit():
    """(b) q = 0 (the default) gives exactly what the code gave before the resolution existed."""
    a, b = [0.31, 0.35, 0.29, 0.40, 0.33], [0.27, 0.30, 0.26, 0.35, 0.30]
    d = [x - y for x, y in zip(a, b)]
    n, mean = len(d), sum(d) / len(d)
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))   # the former code, by hand
    half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    for p in (paired_difference(a, b), paired_difference(a, b, resolution=0.0), paired_difference(a, b, resolution=0)):
        assert (p.mean, p.lo, p.hi) == (mean, float(mean - half), float(mean + half))   # ==, not isclose
        assert p.resolution == 0.0 and "quantised" not in p.reason
        assert p.reason == (f"mean difference {mean:+.4g}, 95% t interval [{mean - half:+.4g}, {mean + half:+.4g}] "
                            f"over 5 pairs clears the margin +0")
    lo, hi = stats.t.interval(0.95, n - 1, loc=mean, scale=stats.sem(d))
    assert math.isclose(p.lo, lo) and math.isclose(p.hi, hi)
    tie = paired_difference([1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    assert (tie.lo, tie.hi, tie.held) == (0.0, 0.0, False)   # exact ties of continuous readings: as before
    assert paired_difference([0.5, None], [0.4, 0.3]).as_dict() == {
        "mean": 0.09999999999999998, "lo": None, "hi": None, "n": 1, "confidence": 0.95, "margin": 0.0, "held": None,
        "reason": "one seed of 2: no interval, not judged", "resolution": 0.0, "planned": 2,
        "diffs": (0.09999999999999998, None)}


def test_a_one_step_effect_at_every_seed_still_holds():
    """(c) Every difference exactly +q (one evaluation sooner at every seed) at n = 6: held at margin 0.
    With three seeds the same one-step effect is too small to clear the resolution (t(0.975, 2) = 4.3)."""
    q = 2.0
    p = paired_difference([4.0] * 6, [2.0] * 6, resolution=q)
    assert p.mean == q and p.lo > 0 and p.held is True
    half = stats.t.ppf(0.975, 5) * (q / math.sqrt(6)) / math.sqrt(6)
    assert math.isclose(p.lo, q - half) and math.isclose(p.hi, q + half)
    assert paired_difference([4.0] * 3, [2.0] * 3, resolution=q).held is False


def test_effective_sd_is_the_quadrature_sum():
    """(d) The half-width uses sqrt(sd² + q²/6): the sample variance plus two readings' q²/12."""
    from privtrans.book.paired import effective_sd

    a, b, q = [8.0, 6.0, 8.0, 4.0, 6.0], [6.0, 6.0, 4.0, 4.0, 6.0], 2.0
    d = [x - y for x, y in zip(a, b)]
    n, sd = len(d), stats.tstd(d)
    p = paired_difference(a, b, resolution=q)
    t = stats.t.ppf(0.975, n - 1)
    assert math.isclose((p.hi - p.lo) / 2 * math.sqrt(n) / t, math.sqrt(sd ** 2 + q ** 2 / 6))
    assert math.isclose(effective_sd(sd, q), math.sqrt(sd ** 2 + 2 * (q / math.sqrt(12)) ** 2))
    assert math.isclose(effective_sd(0.0, q), q / math.sqrt(6)) and effective_sd(0.3, 0) == 0.3
    assert p.mean == sum(d) / n   # the resolution widens the interval, it does not move it


@pytest.mark.parametrize("bad", [-1.0, -1e-12, float("nan"), float("inf"), "0.5", None, True])
def test_bad_resolution_is_named(bad):
    """(e) The resolution must be a finite number >= 0; the message says so."""
    with pytest.raises(ValueError, match="resolution must be a finite number >= 0"):
        paired_difference([1.0, 2.0], [1.0, 2.0], resolution=bad)


def test_frame_shows_each_cells_interval_in_order():
    from privtrans.book.paired import frame

    cells = {"acts": paired_difference([3.0, 4.0, 5.0], [1.0, 1.0, 1.0]).as_dict(),
             "chat": paired_difference([1.0], [1.0]).as_dict()}
    df = frame(cells, "task")
    assert list(df.columns) == ["task", "mean", "lo", "hi", "n"] and list(df.task) == ["acts", "chat"]
    assert df.iloc[0]["mean"] == pytest.approx(3.0) and df.iloc[0]["lo"] == pytest.approx(cells["acts"]["lo"])
    assert df.iloc[1]["n"] == 1 and math.isnan(df.iloc[1]["lo"])  # one seed: no interval, shown as missing
    assert list(frame({}, "task").columns) == ["task", "mean", "lo", "hi", "n"]


def test_a_lost_seed_is_kept_in_the_count():
    """A failed run (None or NaN) leaves its pair out of the interval but not out of the record:
    ``planned`` keeps N and the reason says n of N, so the verdict can count it (verdicts.lost)."""
    from privtrans.book.verdicts import lost

    p = paired_difference([0.5, float("nan"), 0.7, 0.6], [0.4, 0.3, 0.5, 0.5])
    assert (p.n, p.planned) == (3, 4) and "over 3 of 4 pairs" in p.reason and lost(p.as_dict()) == 1
    full = paired_difference([0.5, 0.6, 0.7, 0.6], [0.4, 0.3, 0.5, 0.5])
    assert (full.n, full.planned) == (4, 4) and " of 4" not in full.reason and lost(full.as_dict()) == 0


def test_the_vectorised_interval_is_the_one_paired_difference_uses():
    from privtrans.book.paired import t_interval

    rng = np.random.default_rng(1)
    d = rng.normal(size=(50, 6))
    mean, lo, hi = t_interval(d)
    for i in (0, 17, 49):
        p = paired_difference(list(d[i]), [0.0] * 6)
        assert (p.mean, p.lo, p.hi) == pytest.approx((mean[i], lo[i], hi[i]), rel=1e-12)
