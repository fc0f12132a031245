"""``taft.experiments``. ``retraining`` (Figures 1(c) and 3): at fraction 0 the composed TAFT model as
it stands and nothing trained; above 0 exactly the shards that held a forgotten sample are retrained
on what is left of them, the paragon on everything left, and the result is cached.
``composition_runs`` (Tables 2, 10, 11): the same rows on two worker processes as on one, each the
composed model's accuracy, and the tangent composition equal to the ensemble; likewise
``forgetting_curves_runs`` (Figures 1(a-b)) equals ``forgetting_curves`` called job by job. A stub bench over a
tiny ViT and random features stands in for the pretrained backbone: nothing here pretrains."""

import numpy as np
import pytest
import torch

from privtrans.book.runcache import RunCache
from privtrans.taft import compose, finetune
from privtrans.taft import experiments
from privtrans.taft.vit import ViT, ViTConfig

CFG = ViTConfig(image=8, patch=4, dim=16, depth=2, heads=2, classes=4)
N, CLASSES = 24, 4
TAFT = finetune.spec_from({"method": "taft", "tuned": 1, "loss": "rsl", "kappa": 5, "lr": 0.01, "epochs": 1, "batch": 8})
PARAGON = finetune.spec_from({"method": "nlft", "tuned": 1, "loss": "ce", "lr": 0.001, "epochs": 1, "batch": 8})


class StubBench:
    """What ``retraining`` reads of a Bench: features after a cut, the task's class count, the cached
    shard models, the ViT, the run cache and the key parts."""

    def __init__(self, root):
        torch.manual_seed(0)
        self.vit = ViT(CFG).eval().requires_grad_(False)
        g = torch.Generator().manual_seed(1)
        self.images = torch.randn(N, 1, CFG.image, CFG.image, generator=g)
        self.labels = torch.randint(0, CLASSES, (N,), generator=g)
        self.cache = RunCache("taft", root=root)

    def cut(self, spec):
        return len(self.vit.blocks) - spec.tuned

    def features(self, task, cut):
        x = finetune.features(self.vit, self.images, cut)
        return x, self.labels, x, self.labels

    def task(self, name):
        return type("Task", (), {"classes": CLASSES})()

    def key_parts(self, task):
        return {"task": task, "stub": True}

    def prepare(self, task, spec):
        pass

    def shards(self, task, spec, n, seed):
        def make():
            x, y, _, _ = self.features(task, self.cut(spec))
            return compose.train_shards(self.vit, x, y, spec, CLASSES, n, seed)

        return self.cache.get_or_make("shards", {"spec": spec.as_dict(), "n": n, "seed": seed}, make)[0]


@pytest.fixture
def bench(tmp_path):
    return StubBench(tmp_path)


@pytest.fixture
def spies(monkeypatch):
    """Every ``compose.train_shard`` call's kept indices and every ``finetune.fit`` call's sample count."""
    shard_calls, fit_calls = [], []
    real_shard, real_fit = compose.train_shard, finetune.fit

    def train_shard(vit, x, y, idx, *a, **kw):
        shard_calls.append(list(idx))
        return real_shard(vit, x, y, idx, *a, **kw)

    def fit(model, x, y, *a, **kw):
        fit_calls.append(len(y))
        return real_fit(model, x, y, *a, **kw)

    monkeypatch.setattr(compose, "train_shard", train_shard)
    monkeypatch.setattr(finetune, "fit", fit)
    return shard_calls, fit_calls


def test_nothing_forgotten_is_the_composition_as_it_stands_and_trains_nothing(bench, spies):
    sset = bench.shards("t", TAFT, 2, 0)
    shard_calls, fit_calls = spies
    shard_calls.clear()  # the original shards' own training
    (row,) = experiments.retraining(bench, "t", TAFT, PARAGON, 2, 0, 0.0)
    assert shard_calls == [] and fit_calls == []  # no shard retrained, no paragon trained
    assert row["method"] == "TAFT shard retraining" and row["shards_retrained"] == 0 and row["seconds"] == 0.0
    x, y, xt, yt = bench.features("t", bench.cut(TAFT))
    composed = sset.model(bench.vit, compose.average(list(sset.states)))
    assert row["accuracy"] == finetune.accuracy(composed, xt, yt)


def test_forgetting_retrains_the_shards_that_held_a_sample_on_what_is_left_and_the_paragon(bench, spies):
    sset = bench.shards("t", TAFT, 2, 0)
    shard_calls, fit_calls = spies
    shard_calls.clear()  # the original shards' own training
    rows = experiments.retraining(bench, "t", TAFT, PARAGON, 2, 0, 0.5)
    assert [r["method"] for r in rows] == ["TAFT shard retraining", "Paragon NLFT-1"]
    taft, para = rows
    forgotten = N // 2
    assert fit_calls == [N - forgotten]  # the paragon trains on everything that is left
    assert taft["shards_retrained"] == len(shard_calls) == 2  # 12 of 24 forgotten: both shards lost some
    kept = [j for c in shard_calls for j in c]
    assert len(kept) == len(set(kept)) == N - forgotten  # the shards' leftovers: every kept sample, once
    for idx, left in zip(sset.indices, shard_calls):
        assert set(left) < set(np.asarray(idx).tolist())  # each shard retrained on part of its own samples
    assert all(0.0 <= r["accuracy"] <= 1.0 for r in rows) and taft["seconds"] > 0


def test_retraining_is_cached(bench, spies):
    shard_calls, fit_calls = spies
    first = experiments.retraining(bench, "t", TAFT, PARAGON, 2, 0, 0.25)
    n_shard, n_fit = len(shard_calls), len(fit_calls)
    again = experiments.retraining(bench, "t", TAFT, PARAGON, 2, 0, 0.25)
    assert again == first and (len(shard_calls), len(fit_calls)) == (n_shard, n_fit)
    other = experiments.retraining(bench, "t", TAFT, PARAGON, 2, 1, 0.25)  # another seed is another entry
    assert len(fit_calls) == n_fit + 1 and other != first


def test_composition_runs_on_two_workers_equal_one_and_compose_as_the_ensemble(bench, monkeypatch):
    specs = {"TAFT": TAFT, "Soup": PARAGON}
    monkeypatch.setenv("PRIVTRANS_WORKERS", "2")
    two, diff_two = experiments.composition_runs(bench, ["t"], specs, [2, 3], [0, 1])
    monkeypatch.setenv("PRIVTRANS_WORKERS", "1")
    one, diff_one = experiments.composition_runs(bench, ["t"], specs, [2, 3], [0, 1])
    assert two.equals(one) and diff_two == diff_one
    assert len(one) == 8 and one[one.method == "Soup"].composed_minus_ensemble.isna().all()
    assert diff_one == one[one.method == "TAFT"].composed_minus_ensemble.max() < 1e-4  # tangent: composed = ensemble
    sset = bench.shards("t", TAFT, 3, 1)
    _, _, xt, yt = bench.features("t", bench.cut(TAFT))
    want = compose.acc(compose.composed_logits(bench.vit, sset, xt).argmax(1), yt)
    assert one.query("method == 'TAFT' and shards == 3 and seed == 1").accuracy.item() == want


def test_forgetting_curves_runs_on_two_workers_equal_the_calls_one_by_one(bench, monkeypatch):
    specs = {"TAFT": TAFT, "SISA": PARAGON}
    jobs = [("t", 0), ("t", 1)]
    monkeypatch.setenv("PRIVTRANS_WORKERS", "2")
    rows, errors = experiments.forgetting_curves_runs(bench, jobs, specs, 3, [0, 1, 2], draws=2)
    want = [experiments.forgetting_curves(bench, t, specs, 3, s, [0, 1, 2], 2) for t, s in jobs]
    assert rows == [r for rs, _ in want for r in rs] and errors == [e for _, e in want]
    assert len(rows) == 2 * 3 * 2 and max(errors) < 1e-4  # forgetting by subtraction = composing the rest


def test_benches_pretrain_the_longest_backbone_first_and_keep_the_settings_order(monkeypatch):
    from privtrans.book import profiles

    cfg = profiles.settings("taft", "table9_pretraining", "ci")
    backbones = {name: {**cfg["backbone"], **over} for name, over in cfg["backbones"].items()}
    started = []
    monkeypatch.setattr(experiments, "get_backbone", lambda spec, seed, cache: started.append(spec))
    monkeypatch.setattr(experiments, "Bench", lambda b, *a: b)
    monkeypatch.setattr(experiments.workers, "default_workers", lambda: 1)  # in order, in this process
    out = experiments.benches(backbones, 0, {}, None)
    assert out == backbones
    # Table 9's backbones at `ci` took CLS+ 34 s, CLS 29 s, MAE 23 s, CLS-small 15 s (one cold build on 2 cores)
    names = [next(n for n, b in backbones.items() if experiments.PretrainSpec.from_cfg(b) == s) for s in started]
    assert names == ["CLS+", "CLS", "MAE", "CLS-small"]


def test_a_dp_cell_reads_the_features_its_model_starts_from(bench, monkeypatch):
    """Table 3 under DP: the last block and the head read the features after depth − 1 blocks; FC's
    head alone reads those after every block, as FC does without DP (it once read depth − 1 and so
    skipped the last block)."""
    from privtrans.taft import dp

    seen = {}

    def run(vit, x, y, xt, yt, classes, method, regime, spec, seed):
        seen[method] = x
        return dp.DPResult(0.5, 1.0, 0.0, {})

    monkeypatch.setattr(dp, "run", run)
    bench.split = lambda name, cut, split: bench.features(name, cut)  # the stub has one split
    for method, regime in (("taft", "full"), ("nlft", "ln"), ("fc", "head")):
        experiments.Bench.dp_run(bench, "t", method, regime, dp.DPSpec(epsilon=1.0, steps=1), 0)
    depth = len(bench.vit.blocks)
    for method, cut in (("taft", depth - 1), ("nlft", depth - 1), ("fc", depth)):
        torch.testing.assert_close(seen[method], bench.features("t", cut)[0], msg=method)
