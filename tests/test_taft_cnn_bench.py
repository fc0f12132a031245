"""The linearised CNN's bench of Table 7 (privtrans.taft.cnn_bench.CNNBench): the backbone comes from
the run cache under its own key, the stem features are computed once per task, the validation split
is the first 80 % of the training set, a run is cached under a key that changes with every setting
it reads, and the shard composition trains a partition of the training set from one initialisation
with the shard seeds of ``compose`` and predicts the mean of the shard models' outputs.

No pretraining and no dataset download: a tiny random CNN is put in a temporary run cache under the
backbone's key (so ``C.get_backbone`` finds it), and the task is the procedural textures at 5 + 2
images per class."""

from dataclasses import asdict

import numpy as np
import pytest
import torch

from privtrans.book.runcache import RunCache
from privtrans.taft import cnn as cnn
from privtrans.taft import cnn_bench
from privtrans.taft import compose, data
from privtrans.taft import experiments
from privtrans.taft import finetune

WIDTHS = (2, 3, 4)
CNN_CFG = {"widths": list(WIDTHS), "epochs": 1}
TASK_CFG = {"textures": {"train_per_class": 5, "test_per_class": 2}}  # 8 classes: 40 train, 16 test
N_TRAIN, N_TEST, CLASSES = 40, 16, 8
SPEC = finetune.FitSpec(method="taft", tuned=1, lr=0.03, loss="rsl", kappa=5.0, pt=True, epochs=2, batch=16,
                  decay_at=(1,))


def put_backbone(cache: RunCache, seed: int) -> dict:
    """A random tiny CNN (BatchNorm statistics not the defaults) stored as the pretrained backbone."""
    spec = cnn.CNNSpec.from_cfg(CNN_CFG)
    torch.manual_seed(100 + seed)
    net = cnn.CNN(spec.widths)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.3)
                m.running_var.uniform_(0.5, 2.0)
    state = {k: v.detach().clone() for k, v in net.state_dict().items()}
    backbone = cnn.CNNBackbone(state, asdict(spec), 0.5, 0.0, [])
    cache.put("cnn_backbone", cnn.backbone_key(spec, seed, cache), backbone)
    return state


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread, as the notebooks run the bench (experiments.set_threads): two threads on a
    shared 2-core machine made these tiny convolutions ten times slower."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVTRANS_WORKERS", "1")

    def no_pretraining(*a, **kw):
        raise AssertionError("the backbone is in the cache: nothing may be pretrained")

    monkeypatch.setattr(cnn, "pretrain", no_pretraining)
    c = RunCache("taft", root=tmp_path / "cache")
    put_backbone(c, 0)
    put_backbone(c, 1)
    return c


def bench(cache, **kw) -> cnn_bench.CNNBench:
    args = {"cnn_cfg": CNN_CFG, "cnn_seed": 0, "task_cfg": TASK_CFG, "train_per_class": None, **kw}
    return cnn_bench.CNNBench(cache=cache, **args)


class FitLog:
    """Wraps ``finetune.fit`` as cnn_bench calls it, recording what each run was given and returned."""

    def __init__(self, monkeypatch):
        self.calls = []
        real = finetune.fit

        def fit(model, x, y, spec, seed, classes=None):
            w0 = {k: v.clone() for k, v in model.named_buffers()}
            r = real(model, x, y, spec, seed, classes=classes)
            self.calls.append({"x": x, "y": y, "seed": seed, "classes": classes, "w0": w0, "result": r,
                               "model": model})
            return r

        monkeypatch.setattr(cnn_bench.finetune, "fit", fit)


def test_backbone_is_read_from_the_cache_under_its_key(cache):
    b = bench(cache)
    assert b.backbone_cached is True
    want = put_backbone(RunCache("taft", root=cache.dir.parent / "other"), 0)  # same seed: same weights
    for k, v in b.cnn.state_dict().items():
        torch.testing.assert_close(v, want[k], msg=k)
    assert not any(p.requires_grad for p in b.cnn.parameters()) and not b.cnn.training
    b1 = bench(cache, cnn_seed=1)
    assert b1.backbone_cached is True
    assert not torch.equal(b1.cnn.tail[0].weight, b.cnn.tail[0].weight)
    assert b._key("textures")["cnn_key"] == cnn.backbone_key(b.spec, 0, cache)
    assert b1._key("textures")["cnn_key"] != b._key("textures")["cnn_key"]


def test_splits_are_the_stem_features_and_computed_once(cache, monkeypatch):
    b = bench(cache)
    calls = []
    real = cnn.features
    monkeypatch.setattr(cnn_bench.cnn, "features", lambda cnn, x: calls.append(len(x)) or real(cnn, x))
    t = b.task("textures")
    assert (len(t.y_train), len(t.y_test), t.classes) == (N_TRAIN, N_TEST, CLASSES)
    x, y, xt, yt = b.split("textures", "test")
    # the stem: two conv stages with max-pooling, 28 -> 7, widths[1] channels
    assert x.shape == (N_TRAIN, WIDTHS[1], 7, 7) and xt.shape == (N_TEST, WIDTHS[1], 7, 7)
    torch.testing.assert_close(x, b.cnn.features(t.x_train))
    torch.testing.assert_close(xt, b.cnn.features(t.x_test))
    assert torch.equal(y, t.y_train) and torch.equal(yt, t.y_test)
    # validation: the first round(0.8 n) training images train, the last fifth evaluates; test unseen
    k = int(round(N_TRAIN * (1 - data.VAL_FRACTION)))
    assert k == 32
    xv, yv, xe, ye = b.split("textures", "val")
    assert torch.equal(xv, x[:32]) and torch.equal(xe, x[32:]) and torch.equal(yv, y[:32]) and torch.equal(ye, y[32:])
    b.prepare("textures", SPEC)
    b.split("textures", "val")
    assert calls == [N_TRAIN, N_TEST], "features are computed once per task, train and test"
    with pytest.raises(ValueError, match="split must be one of"):
        b.split("textures", "train")


def test_the_model_is_the_task_cnn_with_its_seeded_head_and_zero_delta(cache):
    b = bench(cache)
    x, *_ = b.split("textures", "test")
    m0, m0b, m1 = b.model("textures", 0), b.model("textures", 0), b.model("textures", 1)
    assert isinstance(m0, cnn.LinearisedCNN)
    assert m0.head.w0.shape == (CLASSES, WIDTHS[2])
    assert torch.equal(m0.head.w0, m0b.head.w0) and not torch.equal(m0.head.w0, m1.head.w0)
    # Δw = 0 at the start: the linearised model is the plain task CNN
    plain = cnn.task_cnn(b.cnn, CLASSES, 0)
    torch.testing.assert_close(m0(x), plain.from_features(x))
    # trainable: exactly the Δ of the tail's two conv-BN layers and of the head (closed form)
    c2, c3 = WIDTHS[1], WIDTHS[2]
    n = (c2 * c3 * 9 + c3) + 2 * c3 + (c3 * c3 * 9 + c3) + 2 * c3 + (c3 * CLASSES + CLASSES)
    assert sum(p.numel() for p in m0.parameters() if p.requires_grad) == n == 316


def test_fit_run_trains_on_the_split_and_is_cached_under_every_setting(cache, monkeypatch):
    log = FitLog(monkeypatch)
    b = bench(cache)
    val = b.fit_run("textures", SPEC, 0, "val")
    test = b.fit_run("textures", SPEC, 0, "test")
    assert set(val) == set(test) == {"accuracy", "seconds", "delta_norm"}
    assert [len(c["y"]) for c in log.calls] == [32, N_TRAIN]
    assert [c["seed"] for c in log.calls] == [0, 0] and {c["classes"] for c in log.calls} == {CLASSES}
    # accuracy on 8 validation images and on the 16 test images: multiples of 1/8 and 1/16
    assert val["accuracy"] * 8 == pytest.approx(round(val["accuracy"] * 8), abs=1e-6)
    assert test["accuracy"] * N_TEST == pytest.approx(round(test["accuracy"] * N_TEST), abs=1e-6)
    # the recorded accuracy is the trained model's on the evaluation split, and ‖Δw‖ its trained Δ
    _, _, xt, yt = b.split("textures", "test")
    m = log.calls[1]["model"]
    assert test["accuracy"] == finetune.accuracy(m, xt, yt)
    state = log.calls[1]["result"].state
    assert test["delta_norm"] == pytest.approx(float(torch.sqrt(sum((v * v).sum() for v in state.values()))))
    assert test["delta_norm"] > 0

    # the same settings, even from a new bench, are a cache hit; every changed setting is a miss
    again = bench(cache)
    hits = cache.hits
    assert again.fit_run("textures", SPEC, 0, "val") == val and again.fit_run("textures", SPEC, 0) == test
    assert cache.hits == hits + 2 and len(log.calls) == 2
    misses = cache.misses
    bench(cache).fit_run("textures", SPEC, 1)
    bench(cache).fit_run("textures", SPEC.with_(lr=0.01), 0)
    bench(cache, train_per_class=3).fit_run("textures", SPEC, 0)
    bench(cache, cnn_seed=1).fit_run("textures", SPEC, 0)
    bench(cache, task_cfg={"textures": {"train_per_class": 4, "test_per_class": 2}}).fit_run("textures", SPEC, 0)
    assert cache.misses == misses + 5 and len(log.calls) == 7
    assert [len(c["y"]) for c in log.calls[2:]] == [N_TRAIN, N_TRAIN, 3 * CLASSES, N_TRAIN, 4 * CLASSES]
    assert [c["seed"] for c in log.calls[2:]] == [1, 0, 0, 0, 0]

    # the runner the notebooks call: one run per job, the same cached results in order
    jobs = [("textures", SPEC, 0, "test"), ("textures", SPEC, 0, "val")]
    assert experiments.fit_runs(bench(cache), jobs) == [test, val]
    assert len(log.calls) == 7


def test_composed_trains_a_partition_from_one_init_and_predicts_the_mean_output(cache, monkeypatch):
    log = FitLog(monkeypatch)
    loaded = []
    real_load = finetune.load_trainable
    monkeypatch.setattr(cnn_bench.finetune, "load_trainable", lambda m, st: loaded.append(m) or real_load(m, st))
    b = bench(cache)
    spec = SPEC.with_(lr=0.3, epochs=3, decay_at=(3,))  # enough training for the shard models to disagree
    seed, n = 2, 3
    out = b.composed("textures", spec, n, seed)
    assert set(out) == {"accuracy", "seconds"}
    assert len(log.calls) == n and len(loaded) == 1
    x, y, xt, yt = b.split("textures", "test")
    # the shards: compose's partition of the whole training set (sizes 14, 13, 13), disjoint, complete
    parts = compose.shard_indices(N_TRAIN, n, seed)
    assert [len(p) for p in parts] == [14, 13, 13]
    assert sorted(np.concatenate(parts).tolist()) == list(range(N_TRAIN))
    for c, p in zip(log.calls, parts):
        assert torch.equal(c["x"], x[torch.as_tensor(p)]) and torch.equal(c["y"], y[torch.as_tensor(p)])
    # each shard's training seed is compose.shard_seed, and all start from model(task, seed)
    assert [c["seed"] for c in log.calls] == [100_003 * seed + i for i in range(n)]
    start = dict(b.model("textures", seed).named_buffers())
    for c in log.calls:
        assert c["w0"].keys() == start.keys()
        assert all(torch.equal(c["w0"][k], start[k]) for k in start)
    # the shards' training time, summed
    assert out["seconds"] == pytest.approx(sum(c["result"].seconds for c in log.calls))
    # linear in Δw: the composed model (mean Δw) outputs the mean of the shard models' outputs, and
    # the recorded accuracy is its accuracy on the test set
    shard_out = torch.stack([finetune.logits(c["model"], xt) for c in log.calls])
    preds = shard_out.argmax(2)
    assert not (torch.equal(preds[0], preds[1]) and torch.equal(preds[1], preds[2])), "shards should differ"
    composed = loaded[0]
    torch.testing.assert_close(finetune.logits(composed, xt), shard_out.mean(0), atol=1e-5, rtol=1e-5)
    assert out["accuracy"] == finetune.accuracy(composed, xt, yt)
    # cached: the same call trains nothing; another number of shards is another entry
    assert b.composed("textures", spec, n, seed) == out and len(log.calls) == n
    one = b.composed("textures", spec, 1, 0)
    assert len(log.calls) == n + 1 and log.calls[-1]["seed"] == 0 and len(log.calls[-1]["y"]) == N_TRAIN
    # one shard at seed 0 is the full-data run at seed 0 (shard_seed(0, 0) = 0, the same init)
    assert one["accuracy"] == b.fit_run("textures", spec, 0)["accuracy"]
    assert torch.equal(log.calls[-1]["result"].state["head.delta.weight"],
                       log.calls[-2]["result"].state["head.delta.weight"])
