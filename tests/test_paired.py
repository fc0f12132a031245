"""privtrans.book.paired: the interval is scipy's paired t interval, ties and single seeds never hold."""

import math

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
