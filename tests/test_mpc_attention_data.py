"""The mpc_attention stand-in tasks: the pair task's labels and its train/dev separation."""

from collections import Counter

import numpy as np

from privtrans.mpc_attention import data


def test_pair_task_labels_say_which_snippet_is_more_positive():
    ratings = {}
    for r, t in data.snippets("amazon"):
        ratings.setdefault(t, set()).add(r)
    rating = {t: next(iter(r)) for t, r in ratings.items() if len(r) == 1}  # a few sentences repeat
    task = data.load("pair", seed=3)
    for split in (task.train, task.dev):
        assert 0.4 < split.y.float().mean() < 0.6  # both orders occur about equally
    # the raw pairs behind the splits: rebuild them with the same generator
    rng = np.random.default_rng(3)
    amazon = data.snippets("amazon")
    rows = [amazon[i] for i in rng.permutation(len(amazon))]
    n = len(rows)
    tr, dv = data._pairs(rows[: int(0.8 * n)], rng), data._pairs(rows[int(0.8 * n): int(0.9 * n)], rng)
    assert len(tr) == len(task.train) and len(dv) == len(task.dev)
    checked = 0
    for (a, b), y in tr + dv:
        if a not in rating or b not in rating:
            continue
        checked += 1
        assert abs(rating[a] - rating[b]) >= data.MIN_GAP
        assert y == int(rating[b] > rating[a])
    assert checked > 0.9 * len(tr + dv)
    # no snippet is in both splits, and none is used more than PAIRS_PER_SNIPPET times
    train_snips = [s for (a, b), _ in tr for s in (a, b)]
    repeated = {t for t, c in Counter(t for _, t in amazon).items() if c > 1}  # e.g. "!" (rows of the file)
    assert not (set(train_snips) & {s for (a, b), _ in dv for s in (a, b)}) - repeated
    assert max(train_snips.count(s) for s in set(train_snips[:200]) - repeated) <= data.PAIRS_PER_SNIPPET


def test_batches_know_their_count_and_cover_the_split_once():
    import torch

    n = 10
    split = data.Split(torch.arange(n)[:, None], torch.ones(n, 1), torch.zeros(n, 1, dtype=torch.long),
                       torch.arange(n))
    for size, shuffle in ((3, False), (5, True), (20, False)):
        b = split.batches(size, shuffle=shuffle, seed=1)
        ys = [y for *_, y in b]
        assert len(b) == len(ys) == -(-n // size)  # the count a dry run books is the count it yields
        assert sorted(torch.cat(ys).tolist()) == list(range(n))
    assert torch.cat([y for *_, y in split.batches(3)]).tolist() == list(range(n))  # unshuffled: in order
