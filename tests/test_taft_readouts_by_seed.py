"""privtrans.taft.readouts.by_seed: one value per planned seed, None where a seed has no run (never 0),
and the differences and averages of per-seed lists keep a missing seed missing."""

import pandas as pd
import pytest

from privtrans.taft.readouts import by_seed

RUNS = pd.DataFrame({"seed": [0, 0, 1, 2], "method": ["a", "b", "a", "a"], "accuracy": [0.5, 0.7, 0.6, float("nan")]})


def test_one_value_per_planned_seed_and_none_where_there_is_no_run():
    assert by_seed._seeds(RUNS) == [0, 1, 2]
    assert by_seed.per_seed(RUNS, [0, 1, 2, 3], method="a") == [0.5, 0.6, None, None]   # NaN and absent
    assert by_seed.per_seed(RUNS, [0, 1], method="b") == [0.7, None]


def test_differences_and_averages_keep_a_missing_seed_missing():
    assert by_seed._minus([0.5, None, 0.9], [0.25, 0.1, None]) == [0.25, None, None]
    avg = by_seed._avg([0.2, None], [0.4, 0.1])
    assert avg[0] == pytest.approx(0.3) and avg[1] is None
