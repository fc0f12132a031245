"""privtrans.merge.readouts.missing: an absent result raises, naming what is missing; a share of
nothing is None, never 0."""

import pytest

from privtrans.merge.readouts import missing


def test_an_absent_result_raises_naming_it_and_what_there_is():
    missing._need(["a", "b"], ["a"], "runs")  # all there: nothing raised
    with pytest.raises(missing.MissingResult, match=r"runs: nothing for \['c'\] \(have \['a', 'b'\]\)"):
        missing._need(["b", "a"], ["a", "c"], "runs")
    assert issubclass(missing.MissingResult, LookupError)


def test_the_share_cut_is_one_minus_the_ratio_and_none_over_zero():
    assert missing._cut(25.0, 100.0) == pytest.approx(0.75)
    assert missing._cut(100.0, 100.0) == 0.0
    assert missing._cut(1.0, 0.0) is None
