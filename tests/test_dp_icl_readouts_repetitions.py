"""privtrans.dp_icl.readouts.repetitions on small hand-made inputs (no Monte Carlo): the recorded values
and the verdicts data/dp_icl/claims.yaml gives on them"""

from __future__ import annotations

import pytest

from privtrans.dp_icl.readouts import excess_risk, repetitions


# ------------------------------------------------------------------------------------ helpers
def test_frac_decreasing_and_slope():
    assert repetitions.frac_decreasing([3, 2, 1]) == 1.0
    assert repetitions.frac_decreasing([3, 4, 1]) == 0.5
    assert repetitions.frac_decreasing([3]) is None                   # nothing to compare, not 0
    assert excess_risk.loglog_slope([1, 2, 4], [1, 0.25, 1 / 16]) == pytest.approx(-2.0)
    assert excess_risk.loglog_slope([1, 2], [1, 0.5]) is None           # two points fit any line


def test_paired_and_mean_over_keep_lost_repetitions():
    p = repetitions.paired([2.0, 3.0, None, 5.0], [1.0, 1.0, 1.0, float("nan")])
    assert p["n"] == 2 and p["planned"] == 4 and p["mean"] == pytest.approx(1.5)
    m = repetitions.mean_over([2.0, 4.0, None], 2.0)
    assert m["mean"] == pytest.approx(1.5) and m["n"] == 2 and m["planned"] == 3
    with pytest.raises(ValueError, match="reference value"):
        repetitions.mean_over([1.0, 2.0], 0.0)
