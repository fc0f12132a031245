"""The dry run (privtrans.book.dry) in the DPFormer chapter: the training loop (train_run) and the
timing loops (efficiency) run their first step(s) only and book the full
length; outside a dry run they run in full, unchanged."""

import pytest

from privtrans.book import dry
from privtrans.dpformer import data, efficiency, synthetic, train


@pytest.fixture(scope="module")
def tiny():
    d, _ = synthetic.amazon_like(n_users=300, n_items=200, seed=0)
    return data.leave_one_out(d, 6)


def _spec(method="transformer", epsilon=None):
    return train.RunSpec(method=method, epsilon=epsilon, epochs=2, batch_size=128, d=8, max_len=6, eval_every=1)


def _total(split, spec):
    n = len(split.train)
    return max(1, int(round(spec.epochs * n / spec.batch_size)))


@pytest.fixture(scope="module")
def whole(tiny):
    assert not dry.active()
    return train.train_run(_spec(), tiny, device="cpu")


def test_train_run_outside_a_dry_run_runs_every_step(tiny, whole):
    r = whole
    assert len(r["train_loss"]) == _total(tiny, _spec()) > 1
    assert [c["epoch"] for c in r["curve"]] == [1, 2]


def test_train_run_in_a_dry_run_runs_one_step_and_books_all(tiny, whole, dry_run):
    spec = _spec()
    full = _total(tiny, spec)
    r = train.train_run(spec, tiny, device="cpu")
    assert len(r["train_loss"]) == 1 and len(r["curve"]) == 1  # one step, evaluated once
    assert r["curve"][0]["step"] == 1 and 0 <= r["ndcg@10"] <= r["hit@10"] <= 1
    rep = dry.report(1.0)
    assert rep["loops"]["train steps"] == {"runs": 1, "kept": 1, "full": full}
    assert rep["loops_full_seconds"] >= rep["loops_seconds"] > 0
    assert r["train_loss"][0] == whole["train_loss"][0]  # the same first step: same RNG draws, same order


def test_timing_loops_keep_two_repeats_and_one_step_in_a_dry_run(dry_run):
    calls = []
    steps = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    out = efficiency.time_interleaved(steps, repeats=6, steps_per_repeat=3, warmup=1)
    assert {m: len(t) for m, t in out["times"].items()} == {"a": 2, "b": 2}  # a paired interval still forms
    assert out["order"] == [["a", "b"], ["b", "a"]]  # the rounds that ran
    assert calls == ["a", "b", "a", "b", "b", "a"]  # warm-ups, then (a, b), (b, a): one step each
    loops = dry.report(1.0)["loops"]
    assert loops["speed repeats"] == {"runs": 1, "kept": 2, "full": 6}
    assert loops["speed steps per repeat"] == {"runs": 4, "kept": 4, "full": 12}


def test_timing_loops_outside_a_dry_run_are_unchanged():
    calls = []
    steps = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    out = efficiency.time_interleaved(steps, repeats=4, steps_per_repeat=2, warmup=1)
    assert {m: len(t) for m, t in out["times"].items()} == {"a": 4, "b": 4}
    assert len(calls) == 2 + 4 * 2 * 2


def test_speed_processes_in_a_dry_run_keep_two_and_book_the_childrens_cut_rounds(dry_run):
    """Each timing process is a child interpreter: it keeps two rounds of one step and hands its tally
    to the parent (efficiency._child absorbs it), inside the parent's cut loop over the processes."""
    runs = efficiency.speed_processes(30, 6, 4, 8, processes=5, repeats=4, steps_per_repeat=3, parallel=2)
    assert len(runs) == 2 and all("dry_booking" not in r for r in runs)
    assert all(len(r["times"][m]) == 2 for r in runs for m in efficiency.SPEED_PAIR)
    rep = dry.report(1.0)
    assert rep["loops"]["speed processes"] == {"runs": 1, "kept": 2, "full": 5}
    assert rep["loops"]["speed repeats"] == {"runs": 2, "kept": 4, "full": 8}   # two children's tallies
    assert rep["loops_full_seconds"] > rep["loops_seconds"] > 0
