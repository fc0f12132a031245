"""Issue 21: k seeds of one mpc_attention configuration trained together (one vectorised model)
equal k single runs (``train_teacher`` / ``distill``), and ``experiments.converted`` stores each
seed under the key of the single run."""

from dataclasses import replace

import pytest
import torch

from privtrans.book import profiles
from privtrans.book.runcache import RunCache
from privtrans.mpc_attention import data, experiments as X, train

S = profiles.settings("mpc_attention", "tables2_6_schemes", "smoke")["tasks"]
SEEDS = [0, 1, 2]


def assert_state_close(a, b, atol=1e-5):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for n in sa:
        torch.testing.assert_close(sa[n], sb[n], atol=atol, rtol=1e-4, msg=n)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tasks():
    return [X.load_task("mr2", S, sd) for sd in SEEDS]


def test_every_seed_has_one_vocabulary_size():
    """Each seed's own words, as many as the reference draw's (seed 0's vocabulary is as before)."""
    vocabs = [X.load_task("mr2", S, sd).vocab for sd in range(5)]
    assert len({len(v) for v in vocabs}) == 1
    tr, _ = data._items("mr2", 0)
    assert vocabs[0].itos == data.Vocab(data._texts(tr[:S["n_train"]]), size=S["vocab_size"]).itos
    assert any(w.startswith("[unused") for w in vocabs[4].itos)  # seed 4's split has fewer words: padded
    cut = data.Vocab(["a a a b b c c d d"], rows=6)
    assert cut.itos[4:] == ["a", "b"]
    padded = data.Vocab(["a a"], rows=7)
    assert padded.itos[4:] == ["a", "[unused0]", "[unused1]"]
    assert data.UNK in padded.ids("[unused0]") and 5 not in padded.ids("[unused0] a")


def _teachers_apart(tasks, cfg, epochs=1, batch=64):
    return [train.train_teacher(t, cfg, epochs, lr=S["teacher_lr"], batch=batch, seed=sd)[0]
            for t, sd in zip(tasks, SEEDS)]


def test_teachers_together_equal_runs_apart(tasks):
    cfg = X.model_config(tasks[0], S)
    apart = _teachers_apart(tasks, cfg)
    together, _ = train.train_teachers_together(tasks, cfg, S["teacher_epochs"], lr=S["teacher_lr"], seeds=SEEDS)
    for a, b, t in zip(apart, together, tasks):
        assert_state_close(a, b)
        assert train.metric(a, t.dev) == train.metric(b, t.dev)
    assert not torch.allclose(together[0].head.weight, together[1].head.weight)


def _shortened(tasks, lengths):
    """Training splits of different lengths (as the pair task's seeds have at ci)."""
    def cut(sp, n):
        return data.Split(sp.ids[:n], sp.mask[:n], sp.types[:n], sp.y[:n])
    return [replace(t, train=cut(t.train, n)) for t, n in zip(tasks, lengths)]


def test_unequal_training_splits_equal_runs_apart(tasks):
    """Seeds with different numbers of steps (and last batches) over two epochs."""
    short = _shortened(tasks, [256, 200, 130])
    cfg = X.model_config(tasks[0], S)
    apart = _teachers_apart(short, cfg, epochs=2)
    together, _ = train.train_teachers_together(short, cfg, 2, lr=S["teacher_lr"], seeds=SEEDS)
    for a, b in zip(apart, together):
        assert_state_close(a, b)


def _consts(teachers, attention, per_head):
    """Each seed's own f(n) constants (different per seed, so a stack that shared seed 0's would fail)."""
    if attention not in ("softmax_freediv", "2quad_freediv"):
        return [None] * len(teachers)
    L, H = teachers[0].cfg.n_layers, teachers[0].cfg.n_heads
    out = []
    for i in range(len(teachers)):
        a, b = 1.0 + 0.3 * i, 0.3 + 0.05 * i
        out.append(([[a + 0.1 * h for h in range(H)]] * L, [[b] * H] * L) if per_head else (a, b))
    return out


@pytest.mark.parametrize("attention,activation,per_head,lengths", [
    ("2quad_freediv", "quad", False, None), ("softmax", "quad", False, None),
    ("2quad_freediv", "quad", True, [256, 200, 130])])
def test_distill_together_equals_runs_apart(tasks, attention, activation, per_head, lengths):
    ts = tasks if lengths is None else _shortened(tasks, lengths)
    cfg = X.model_config(tasks[0], S)
    teachers = _teachers_apart(ts, cfg)
    consts = _consts(teachers, attention, per_head)
    kw = dict(epochs1=S["epochs1"], epochs2=S["epochs2"] + (lengths is not None), lr1=S["lr1"], lr2=S["lr2"])
    apart = [t.converted(attention, activation, c) for t, c in zip(teachers, consts)]
    r_apart = [train.distill(t, st, task, seed=sd, **kw) for t, st, task, sd in zip(teachers, apart, ts, SEEDS)]
    together = [t.converted(attention, activation, c) for t, c in zip(teachers, consts)]
    r_together = train.distill_together(teachers, together, ts, seeds=SEEDS, **kw)
    for a, b, ra, rb in zip(apart, together, r_apart, r_together):
        assert_state_close(a, b)
        assert (ra["after_stage1"], ra["after_stage2"]) == (rb["after_stage1"], rb["after_stage2"])
        assert ra["examples_x_epochs"] == rb["examples_x_epochs"] and rb["seeds_together"] == 3
    assert not torch.allclose(together[0].head.weight, together[1].head.weight)


def test_converted_stores_each_seed_under_the_single_run_key(tmp_path, monkeypatch):
    """Seed 1 is cached first by a single call; converted trains seeds 0 and 2 together and stores
    them where ``teacher`` / ``student`` look, so the single calls afterwards train nothing."""
    monkeypatch.setenv("PRIVTRANS_WORKERS", "1")
    monkeypatch.setattr(X, "TOGETHER", True)  # off by default: no gain at ci (see experiments.TOGETHER)
    monkeypatch.setattr(X, "RunCache", lambda ns: RunCache(ns, root=tmp_path / "together"))
    combo = ("2quad_freediv", "quad")
    X.student("mr2", S, 1, *combo)
    n_files = len(list((tmp_path / "together").glob("*.pt")))
    runs = X.converted(["mr2"], S, SEEDS, [combo])["mr2"]
    assert len(list((tmp_path / "together").glob("*.pt"))) == n_files + 4  # 2 teachers + 2 students
    assert [t["seeds_together"] for t in runs["teachers"][::2]] == [2, 2]
    assert "seeds_together" not in runs["teachers"][1]

    def no_training(*a, **k):
        raise AssertionError("a single call after converted must be a cache hit")

    with monkeypatch.context() as m:
        for name in ("train_teacher", "distill", "train_teachers_together", "distill_together"):
            m.setattr(train, name, no_training)
        cached_t = [X.teacher("mr2", S, sd) for sd in SEEDS]
        cached_s = [X.student("mr2", S, sd, *combo) for sd in SEEDS]
    # and what was stored is what single runs make (in a fresh cache)
    monkeypatch.setattr(X, "RunCache", lambda ns: RunCache(ns, root=tmp_path / "apart"))
    for sd in (0, 2):
        t, s = X.teacher("mr2", S, sd), X.student("mr2", S, sd, *combo)
        for n in t["state"]:
            torch.testing.assert_close(t["state"][n], cached_t[sd]["state"][n], atol=1e-5, rtol=1e-4)
        for n in s["state"]:
            torch.testing.assert_close(s["state"][n], cached_s[sd]["state"][n], atol=1e-5, rtol=1e-4)
        for kind in ("softmax", "2quad"):
            assert t["const"][kind] == pytest.approx(cached_t[sd]["const"][kind], rel=1e-4)
        assert (t["metric"], s["before"], s["after_stage2"]) == (
            cached_t[sd]["metric"], cached_s[sd]["before"], cached_s[sd]["after_stage2"])
