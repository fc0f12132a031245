"""privtrans.dpformer.runs: a trained run through the run cache, keyed by spec, data and every module
training loads."""

from __future__ import annotations

import pytest
import torch

from privtrans.dpformer import data, runs, synthetic, train


@pytest.fixture(scope="module")
def tiny():
    d, _ = synthetic.amazon_like(n_users=300, n_items=200, seed=0)
    return d, data.leave_one_out(d, 6)


# ----------------------------------------------------------------------------------- cache
def test_cache_hit_returns_the_stored_run(tiny, tmp_path, monkeypatch):
    d, s = tiny
    cache = runs.run_cache(tmp_path)
    spec = train.RunSpec(method="transformer", epsilon=8.0, epochs=1, batch_size=64, d=8, max_len=6, eval_every=1)
    calls = []
    real = train.train_run
    monkeypatch.setattr(train, "train_run", lambda *a, **k: calls.append(1) or real(*a, **k))
    r1 = runs.cached_run(cache, spec, s, d)
    r2 = runs.cached_run(cache, spec, s, d)
    assert len(calls) == 1 and (cache.misses, cache.hits) == (1, 1)
    assert not r1["cached"] and r2["cached"] and r2["ndcg@10"] == r1["ndcg@10"]
    assert r2["data"] == d.fingerprint()
    for k, v in r1["state_dict"].items():
        assert torch.equal(v, r2["state_dict"][k])
    runs.cached_run(cache, spec.with_(seed=1), s, d)  # another seed is another run
    assert len(calls) == 2
    runs.cached_run(cache, spec, s, "other-data")  # other data, other key
    assert len(calls) == 3
    assert (cache.misses, cache.hits) == (3, 1)
    model = train.load_model(r2, s.n_items)
    assert model.tied


def test_training_modules_cover_every_module_a_run_loads():
    """Every chapter or shared-DP module that training imports is in the cache key's code."""
    import subprocess
    import sys

    code = """
import sys
from privtrans.dpformer import data, synthetic
d, _ = synthetic.amazon_like(n_users=200, n_items=150, seed=0)
split = data.leave_one_out(d, 5)
before = set(sys.modules)
from privtrans.dpformer import runs, train
for method, engine in (("dpformer", "phantom"), ("gru", "opacus")):
    train.train_run(train.RunSpec(method=method, epsilon=8.0, epochs=1, batch_size=64, d=8, max_len=5,
                                  eval_every=1, engine=engine), split, device="cpu")
new = {m for m in set(sys.modules) - before | {"privtrans.dpformer.data"}
       if m.startswith(("privtrans.dpformer.", "privtrans.shared.dp."))}
from privtrans.book.runcache import code_modules
print(sorted(new - set(code_modules(runs.TRAINING_MODULES))))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_train_missing_searches_each_privacy_plan_once_for_all_its_workers(tiny, tmp_path, monkeypatch):
    """The accountant's search (seconds) runs in the notebook's process, before the workers fork: two
    seeds of one DP spec train in two workers and search once between them."""
    from privtrans.shared.dp import accounting

    d, s = tiny
    log = tmp_path / "searches"
    real = accounting.noise_for_epsilon

    def counted(*a, **k):
        with open(log, "a") as f:  # a worker's call is in its own process: counted in a file
            f.write("1")
        return real(*a, **k)

    monkeypatch.setattr(accounting, "noise_for_epsilon", counted)
    monkeypatch.setenv("PRIVTRANS_WORKERS", "2")
    train.privacy_plan.cache_clear()
    spec = train.RunSpec(method="transformer", epsilon=7.0, epochs=1, batch_size=64, d=8, max_len=6, eval_every=1)
    cache = runs.run_cache(tmp_path / "cache")
    assert runs.train_missing(cache, [spec, spec.with_(seed=1)], s, d) == 2
    assert log.read_text() == "1"
