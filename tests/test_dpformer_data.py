"""privtrans.dpformer.data: k-core filtering, sequences in chronological order, leave-one-out, long-tail
statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privtrans.dpformer import data, train
from privtrans.shared.datasets import movielens


def test_k_core_is_a_fixed_point_and_keeps_known_counts():
    df = movielens.read_ml100k()
    core = data.k_core(df, 5)
    assert core.groupby("user").size().min() >= 5
    assert core.groupby("item").size().min() >= 5
    assert len(data.k_core(core, 5)) == len(core)  # iterated to the fixed point
    assert (core.user.nunique(), core.item.nunique(), len(core)) == (943, 1349, 99287)


def test_k_core_iterates():
    # item 9 has one user; dropping it leaves user 2 with one item, who must then go too
    df = pd.DataFrame({"user": [1, 1, 2, 2, 3, 3], "item": [5, 6, 5, 9, 5, 6], "timestamp": range(6)})
    out = data.k_core(df, 2)
    assert set(out.user) == {1, 3} and set(out.item) == {5, 6}


def test_stable_tie_break_and_reindexing():
    df = pd.DataFrame({"user": [7, 7, 7, 7], "item": [30, 10, 20, 40],
                       "timestamp": [2, 1, 1, 0], "row": [0, 1, 2, 3]})
    d = data.to_sequences(df, "toy")
    # chronological; the two events at t=1 keep their file order (10 before 20); ids by sorted raw id
    assert d.seqs[0].tolist() == [4, 1, 2, 3] and d.n_items == 4


def test_movielens_sequences_are_deterministic():
    a, b = data.load_movielens(), data.load_movielens()
    assert a.fingerprint() == b.fingerprint() and a.n_users == 943 and a.n_items == 1349


# ----------------------------------------------------------------------------------- split
def test_leave_one_out_invariants():
    d = data.SeqData("toy", [np.array([1, 2, 3, 4, 5]), np.array([3, 1]), np.array([2, 2, 4])], 5)
    s = data.leave_one_out(d, max_len=3)
    assert s.test_target.tolist() == [5, 1, 4]
    assert s.test_input.tolist() == [[2, 3, 4], [0, 0, 3], [0, 2, 2]]
    assert s.train.tolist() == [[1, 2, 3, 4], [0, 0, 0, 3], [0, 0, 2, 2]]
    # the held-out item never appears in what training sees at its position
    for row, tgt, seq in zip(s.train, s.test_target, d.seqs):
        assert row[-1] == seq[-2] and tgt == seq[-1]
    x, y = train.inputs_targets(s.train)
    assert (y[x == 0] == 0).all() and y[0].tolist() == [2, 3, 4]


def test_leave_one_out_rejects_short_sequences():
    with pytest.raises(ValueError, match="fewer than 2"):
        data.leave_one_out(data.SeqData("toy", [np.array([1])], 1), 3)


def test_long_tail_stats_on_movielens():
    st = data.long_tail_stats(data.load_movielens())
    assert st["top20_share"] > 0.5 and abs(st["density"] - 99287 / (943 * 1349)) < 1e-12
