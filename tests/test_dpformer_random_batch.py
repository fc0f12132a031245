"""privtrans.dpformer.efficiency.random_batch refuses sizes it cannot draw a batch for, up front,
with a ValueError naming the argument, the value and the allowed range (before: torch's
"invalid multinomial distribution" for n_items=0, "random_ expects 'from' to be less than 'to'"
for length < 2, a silently empty batch for batch=0)."""

import numpy as np
import pytest
import torch

from privtrans.dpformer.efficiency import random_batch


@pytest.mark.parametrize("kw,msg", [
    (dict(n_items=0), "n_items must be an integer >= 1 (item ids 1..n_items; 0 is the pad), got 0"),
    (dict(n_items=-3), "n_items must be an integer >= 1 (item ids 1..n_items; 0 is the pad), got -3"),
    (dict(length=1), "length must be an integer >= 2 (inputs and next-item targets are length + 1 draws, "
                     "left padding up to length // 2 - 1), got 1"),
    (dict(length=0), "length must be an integer >= 2"),
    (dict(batch=0), "batch must be an integer >= 1, got 0"),
    (dict(batch=-1), "batch must be an integer >= 1, got -1"),
    (dict(n_items=5.0), "n_items must be an integer >= 1 (item ids 1..n_items; 0 is the pad), got 5.0"),
    (dict(length=True), "length must be an integer >= 2"),
    (dict(batch="4"), "batch must be an integer >= 1, got '4'"),
])
def test_bad_sizes_are_refused_by_name_value_and_range(kw, msg):
    args = dict(n_items=20, length=8, batch=4) | kw
    with pytest.raises(ValueError) as e:
        random_batch(**args)
    assert str(e.value).startswith(f"random_batch: {msg}")


def test_the_smallest_allowed_sizes_still_draw_a_batch():
    x, y = random_batch(n_items=1, length=2, batch=1)
    assert x.shape == y.shape == (1, 2) and torch.equal(x, torch.ones(1, 2, dtype=torch.int64))
    assert torch.equal(y, x)  # the only item follows itself; length 2 leaves no room for padding
    x, y = random_batch(np.int64(20), np.int64(8), np.int64(4), seed=3)  # numpy integers are integers
    assert (x.shape, y.shape) == ((4, 8), (4, 8))
    assert torch.equal(x, random_batch(20, 8, 4, seed=3)[0])
