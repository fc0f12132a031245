"""privtrans.merge.data: the synthetic tasks are deterministic by seed, the vocabulary round-trips, and the
chatterbot task splits by source."""

import importlib.util

import pytest

from privtrans.merge import data
from privtrans.shared.datasets import chatterbot


def test_generators_deterministic_by_seed():
    for name in ("acts", "concepts"):
        a, b = data.synthetic(name, 50, 10, seed=3), data.synthetic(name, 50, 10, seed=3)
        c = data.synthetic(name, 50, 10, seed=4)
        key = lambda t: [(e.source, e.refs) for e in t.train + t.test]  # noqa: E731
        assert key(a) == key(b)
        assert key(a) != key(c)
    with pytest.raises(ValueError):
        data.synthetic("nope", 5, 5, 0)


def test_concept_references_cover_all_concepts():
    task = data.synthetic("concepts", 10, 30, seed=0)
    assert data.concept_coverage([e.refs[0] for e in task.test], task.test) == 1.0
    assert data.concept_coverage(["nothing here"] * 30, task.test) == 0.0


def test_vocab_and_sequences():
    task = data.synthetic("acts", 40, 5, seed=0)
    vocab = data.Vocab.build(task)
    ex = task.train[0]
    assert vocab.decode(vocab.encode(ex.refs[0]) + [vocab.eos, 7]) == ex.refs[0]
    ids, is_tgt = data.encode_pairs(vocab, task.train[:3], 48, 20)
    p = data.prompt_ids(vocab, ex.source, 20)
    n_tgt = len(ex.refs[0].split()) + 1  # response + <eos>
    assert ids[0, len(p) - 1].item() == vocab.sep
    assert is_tgt[0].sum().item() == n_tgt and is_tgt[0, len(p) - 1]


@pytest.mark.skipif(importlib.util.find_spec("chatterbot_corpus") is None, reason="chatterbot-corpus not installed")
def test_chatterbot_reader():
    convs = chatterbot.conversations()
    assert len(convs) > 100 and all(isinstance(t, str) and t for c in convs for t in c)
    task = data.chat(n_test=20, seed=0)
    assert len(task.train) > 300 and len(task.test) == 20
    assert set(e.source for e in task.train).isdisjoint(e.source for e in task.test)
    assert all(e.refs for e in task.test)
