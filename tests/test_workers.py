"""Filling the run cache on every core: calls really run in other processes, their cache entries
are what a sequential run stores, a failing call fails the caller, bad settings are named."""

import os

import pytest
import torch

from privtrans.book import workers
from privtrans.book.runcache import RunCache


def _entry(cache: RunCache, i: int):
    def make():
        g = torch.Generator().manual_seed(i)
        return {"pid": os.getpid(), "x": torch.randn(4, generator=g)}

    return cache.get_or_make("job", {"i": i}, make)[0]


def _square_and_pid(i: int):
    return i * i, os.getpid()


def test_values_come_back_from_the_workers_in_call_order(monkeypatch):
    monkeypatch.setenv("PRIVTRANS_DEVICE", "cpu")
    calls = [lambda i=i: _square_and_pid(i) for i in range(7)]
    par = workers.values_in_parallel(calls, workers=2)
    assert [v for v, _ in par] == [i * i for i in range(7)]  # in the calls' order, whatever finished first
    assert os.getpid() not in {pid for _, pid in par}  # computed in worker processes
    seq = workers.values_in_parallel(calls, workers=1)
    assert [v for v, _ in seq] == [i * i for i in range(7)] and {pid for _, pid in seq} == {os.getpid()}
    assert workers.values_in_parallel([], workers=2) == []


def test_calls_run_in_worker_processes_and_fill_the_cache_as_a_sequential_run(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVTRANS_DEVICE", "cpu")  # runs on a GPU stay in this process (below)
    par, seq = RunCache("t", tmp_path / "par"), RunCache("t", tmp_path / "seq")
    seen = []
    workers.in_parallel([lambda i=i: _entry(par, i) for i in range(6)], workers=2,
                        progress=lambda it: (seen.append(len(it)), it)[1])
    workers.in_parallel([lambda i=i: _entry(seq, i) for i in range(6)], workers=1)
    assert seen == [6]  # the progress bar knows the total
    got = [_entry(par, i) for i in range(6)]  # cache hits now
    assert par.hits == 6 and par.misses == 0
    assert {g["pid"] for g in got} - {os.getpid()}, "no call ran in a worker process"
    assert all(g["pid"] == os.getpid() for g in (_entry(seq, i) for i in range(6)))
    assert all(torch.equal(g["x"], _entry(seq, i)["x"]) for i, g in enumerate(got))


def test_runs_that_train_on_a_gpu_stay_in_this_process(tmp_path, monkeypatch):
    """CUDA cannot be used in a child forked after the parent used it (a notebook that trained one
    model on the GPU and then fills the cache in parallel would fail in every worker)."""
    monkeypatch.setenv("PRIVTRANS_DEVICE", "cuda")  # only the device's name is read: no GPU needed
    cache = RunCache("t", tmp_path)
    workers.in_parallel([lambda i=i: _entry(cache, i) for i in range(4)], workers=2)
    assert all(_entry(cache, i)["pid"] == os.getpid() for i in range(4))


def _boom():
    raise ArithmeticError("job 3 failed")


def test_a_failing_call_fails_the_caller():
    with pytest.raises(ArithmeticError, match="job 3 failed"):
        workers.in_parallel([lambda: None, _boom, lambda: None], workers=2)


def test_bad_worker_counts_are_named(monkeypatch):
    monkeypatch.setenv(workers.WORKERS_ENV, "two")
    with pytest.raises(ValueError, match="PRIVTRANS_WORKERS must be a positive integer, got 'two'"):
        workers.default_workers()
    monkeypatch.setenv(workers.WORKERS_ENV, "3")
    assert workers.default_workers() == 3
    monkeypatch.delenv(workers.WORKERS_ENV)
    assert 1 <= workers.default_workers() <= workers.MAX_DEFAULT
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        workers.in_parallel([lambda: None], workers=0)


_SEEN_IN_WORKER = """
import sys, torch
from pathlib import Path
from privtrans.book import workers
assert "torch._dynamo" not in sys.modules, "importing torch alone imported its compiler front end"
out = Path(sys.argv[1])
def seen(i):
    (out / f"{i}.txt").write_text(str("torch._dynamo" in sys.modules))
workers.in_parallel([lambda i=i: seen(i) for i in range(2)], workers=2)
"""


def test_workers_are_forked_with_torchs_compiler_front_end_already_imported(tmp_path):
    """Each worker's first optimizer would otherwise import torch._dynamo itself (about 2 s each)."""
    import subprocess
    import sys

    env = dict(os.environ, PRIVTRANS_DEVICE="cpu")
    subprocess.run([sys.executable, "-c", _SEEN_IN_WORKER, str(tmp_path)], check=True, env=env, timeout=120)
    assert sorted(p.read_text() for p in tmp_path.glob("*.txt")) == ["True", "True"]
