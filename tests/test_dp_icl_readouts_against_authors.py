"""privtrans.dp_icl.readouts.against_authors: our values beside the authors' on the settings both ran,
labelled per setting, and None (never 0) where nothing overlaps."""

import math

import pandas as pd
import pytest

from privtrans.dp_icl.readouts import against_authors

CMP = pd.DataFrame({"N": [1000, 2000], "eps": [0.2, 0.4], "authors": [4.0, 0.5], "ratio": [0.5, 2.0]})


def test_ratios_are_labelled_per_setting_and_rounded_on_request():
    assert against_authors._authors_ratios(CMP, ["N", "eps"]) == {"N=1000 ε=0.2": 0.5, "N=2000 ε=0.4": 2.0}
    third = CMP.assign(ratio=[1 / 3, 2.0])
    assert against_authors._authors_ratios(third, ["N", "eps"], digits=2)["N=1000 ε=0.2"] == 0.33
    assert against_authors._max_abs_log(CMP) == pytest.approx(math.log(2.0))


def test_our_repetitions_over_the_authors_value_is_an_interval_per_setting():
    x = {(1000, 0.2): [2.0, 2.2, 1.8], (2000, 0.4): [1.0, 1.1, 0.9]}
    out = against_authors._against(CMP, x)
    assert set(out) == {"N=1000 ε=0.2", "N=2000 ε=0.4"}
    assert out["N=1000 ε=0.2"]["mean"] == pytest.approx(0.5) and out["N=2000 ε=0.4"]["mean"] == pytest.approx(2.0)


def test_nothing_overlapping_is_none_never_zero():
    empty = CMP.iloc[:0]
    assert against_authors._authors_ratios(empty, ["N", "eps"]) is None
    assert against_authors._against(empty, {}) is None
    assert against_authors._max_abs_log(empty) is None
