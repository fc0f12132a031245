"""k seeds of one DPFormer-chapter run trained together (train.train_together) equal k runs apart
(train.train_run), and the runner stores each seed under the single run's cache key (issue 21)."""

import pytest
import torch

from privtrans.book.runcache import code_modules
from privtrans.dpformer import data, experiments, reattention, runs, synthetic, train

SEEDS = [0, 1, 2]


@pytest.fixture(scope="module")
def tiny():
    d, _ = synthetic.amazon_like(n_users=300, n_items=200, seed=0)
    return d, data.leave_one_out(d, 6)


def small_spec(method, epsilon, **kw):
    kw = {"epochs": 2, "batch_size": 64, "d": 8, "max_len": 6, "eval_every": 1, "dropout": 0.2, **kw}
    return train.RunSpec(method=method, epsilon=epsilon, **kw)


def assert_same_run(a, b, atol=5e-5):
    """Two results of one spec and seed agree to float tolerance: weights, losses, curve, budget."""
    assert a["spec"] == b["spec"]
    assert a["state_dict"].keys() == b["state_dict"].keys()
    for k in a["state_dict"]:
        torch.testing.assert_close(a["state_dict"][k], b["state_dict"][k], atol=atol, rtol=1e-4, msg=k)
    assert len(a["train_loss"]) == len(b["train_loss"])  # the same Poisson batches were empty
    assert a["train_loss"] == pytest.approx(b["train_loss"], abs=1e-5)
    assert [(c["epoch"], c["step"]) for c in a["curve"]] == [(c["epoch"], c["step"]) for c in b["curve"]]
    for ca, cb in zip(a["curve"], b["curve"]):
        for key in ("ndcg@10", "hit@10", "ce"):
            assert ca[key] == pytest.approx(cb[key], abs=1e-5), key
    assert a["privacy"] == b["privacy"] and a["privacy_label"] == b["privacy_label"]
    assert a["engine"] == b["engine"] and a["n_params"] == b["n_params"]


@pytest.mark.parametrize("epsilon", [None, 8.0])
@pytest.mark.parametrize("method", ["transformer", "dpformer"])
def test_seeds_together_equal_runs_apart(tiny, method, epsilon):
    """Same samples (Poisson, per-seed rng), same dropout masks, same per-seed noise, same schedule."""
    _, s = tiny
    spec = small_spec(method, epsilon)
    apart = [train.train_run(spec.with_(seed=x), s, device="cpu") for x in SEEDS]
    together = train.train_together(spec, s, SEEDS, device="cpu")
    assert [r["spec"]["seed"] for r in together] == SEEDS
    for a, b in zip(apart, together):
        assert_same_run(a, b)
        assert b["seeds_together"] == 3
    # the seeds did differ (the comparison is not vacuous)
    w = [r["state_dict"]["item_emb.weight"] for r in together]
    assert not torch.allclose(w[0], w[1]) and not torch.allclose(w[1], w[2])


@pytest.mark.parametrize("method", ["gru", "transformer_untied"])
def test_other_methods_together_equal_apart_under_dp(tiny, method):
    _, s = tiny
    spec = small_spec(method, 8.0, epochs=1)
    apart = [train.train_run(spec.with_(seed=x), s, device="cpu") for x in SEEDS[:2]]
    for a, b in zip(apart, train.train_together(spec, s, SEEDS[:2], device="cpu")):
        assert_same_run(a, b)


def test_dropout_elsewhere_than_the_cpu_is_refused():
    spec = small_spec("transformer", 8.0)
    assert train.together_supported(spec, "cpu")
    assert not train.together_supported(spec, "cuda")  # its fused dropout cannot be replayed
    assert train.together_supported(spec.with_(dropout=0.0), "cuda")
    with pytest.raises(ValueError, match="apart"):
        train.train_together(spec, None, SEEDS, device="cuda")


def test_runner_trains_missing_seeds_together_under_the_single_run_key(tiny, tmp_path, monkeypatch):
    d, s = tiny
    cache = runs.run_cache(tmp_path)
    spec = small_spec("dpformer", 8.0, epochs=1)
    one = runs.cached_run(cache, spec.with_(seed=1), s, d)  # seed 1 is already stored
    assert (cache.misses, cache.hits) == (1, 0)

    groups, singles = [], []
    real_together, real_run = train.train_together, train.train_run
    monkeypatch.setattr(train, "train_together", lambda sp, sl, seeds, **k: groups.append(list(seeds))
                        or real_together(sp, sl, seeds, **k))
    monkeypatch.setattr(train, "train_run", lambda *a, **k: singles.append(1) or real_run(*a, **k))
    # on the CPU (as on cuda without dropout): cuda's dropout cannot be replayed (together_supported)
    got = runs.cached_runs(cache, spec, SEEDS, s, d, device="cpu", together=True)
    assert groups == [[0, 2]] and singles == []
    assert [r["spec"]["seed"] for r in got] == SEEDS
    assert [r["cached"] for r in got] == [False, True, False]
    assert (cache.misses, cache.hits) == (3, 1)
    assert got[1]["ndcg@10"] == one["ndcg@10"]

    # a later single call of any seed is a hit, and returns what the group stored
    for r in got:
        again = runs.cached_run(cache, spec.with_(seed=r["spec"]["seed"]), s, d)
        assert again["cached"] and again["data"] == d.fingerprint()
        for k, v in r["state_dict"].items():
            assert torch.equal(v, again["state_dict"][k])
    assert singles == [] and (cache.misses, cache.hits) == (3, 4)

    # and what the group stored is what the single run would have made
    assert_same_run(real_run(spec.with_(seed=2), s, device="cpu"), got[2])
    assert "privtrans.shared.seeds_together" in code_modules(runs.TRAINING_MODULES)


def test_runner_with_one_missing_seed_trains_it_apart(tiny, tmp_path, monkeypatch):
    d, s = tiny
    cache = runs.run_cache(tmp_path)
    spec = small_spec("transformer", None, epochs=1)
    runs.cached_run(cache, spec.with_(seed=0), s, d)
    groups = []
    monkeypatch.setattr(train, "train_together", lambda *a, **k: groups.append(1))
    got = runs.cached_runs(cache, spec, [0, 1], s, d, together=True)
    assert groups == [] and [r["cached"] for r in got] == [True, False]
    # and, off by default (slower on the CPU, see runs.TOGETHER_BY_DEFAULT), every seed runs apart
    got = runs.cached_runs(cache, spec, [0, 2, 3], s, d)
    assert groups == [] and [r["cached"] for r in got] == [True, False, False]


@pytest.mark.parametrize("n_workers", ["2", "1"])
def test_missing_runs_are_trained_on_every_core_first_and_counted_as_trained(tiny, tmp_path, monkeypatch, n_workers):
    """runs.train_missing (the default path of experiments.run_grid): each missing run once, in a
    worker process (or in this one, with one worker), stored under its single-run key and counted
    once; a stored one is not trained again."""
    monkeypatch.setenv("PRIVTRANS_WORKERS", n_workers)
    d, s = tiny
    cache = runs.run_cache(tmp_path)
    spec = small_spec("transformer", None, epochs=1)
    stored = runs.cached_run(cache, spec.with_(seed=0), s, d)
    specs = [spec.with_(seed=x) for x in (0, 1, 2, 1)]  # seed 1 asked twice: trained once
    assert runs.train_missing(cache, specs, s, d, device="cpu") == 2
    assert (cache.misses, cache.hits) == (3, -2)  # the reads below bring hits back to what they were
    got = [runs.cached_run(cache, x, s, d) for x in specs]
    assert all(r["cached"] for r in got) and (cache.misses, cache.hits) == (3, 2)
    assert torch.equal(got[0]["state_dict"]["item_emb.weight"], stored["state_dict"]["item_emb.weight"])
    assert_same_run(train.train_run(spec.with_(seed=2), s, device="cpu"), got[2])
    assert runs.train_missing(cache, specs, s, d, device="cpu") == 0  # all stored now


def test_figure9_models_are_the_single_runs_the_missing_ones_trained_on_every_core_first(tiny, tmp_path, monkeypatch):
    """experiments.trained_models (Figure 9): each (method, ε, seed) is the run ``trained_model`` reads,
    a missing one trained once on the workers and counted once."""
    monkeypatch.setenv("PRIVTRANS_WORKERS", "2")
    d, s = tiny
    b = experiments.Bundle(d, s)
    cfg = {"epochs": 1, "batch_size": 64, "d": 8, "max_len": 6, "eval_every": 1, "dropout": 0.0}
    freq = reattention.item_frequencies(torch.as_tensor(s.train), s.n_items)
    cache = runs.run_cache(tmp_path)
    keys = [("non-private", None), ("transformer", 8.0), ("dpformer", 8.0)]
    got = experiments.trained_models(cache, b, cfg, keys, [0, 1], freq)
    assert list(got) == [(m, e, sd) for sd in (0, 1) for m, e in keys]
    assert cache.misses == 6 and cache.hits == 0  # each trained once (on the workers), counted once
    again = runs.run_cache(tmp_path)
    for (m, e, sd), (res, model) in got.items():
        alone, _ = experiments.trained_model(again, b, cfg, m, e, sd, freq)
        assert res["cached"] and res["spec"] == alone["spec"] and res["spec"]["seed"] == sd
        assert res["spec"]["epsilon"] == e and res["spec"]["method"] == ("transformer" if m == "non-private" else m)
        for k, v in alone["state_dict"].items():
            assert torch.equal(model.state_dict()[k], v), (m, e, sd, k)
    assert again.misses == 0
    assert_same_run(train.train_run(train.spec_from_cfg(cfg, "dpformer", 8.0, 1), s, device="cpu"),
                    got["dpformer", 8.0, 1][0])
