"""k seeds of one fine-tuning configuration trained together (``finetune.fit_together``, one vmapped
stack) equal k ``fit`` runs apart: parameters, loss history, final loss and ‖Δw‖, for every method,
with the TAFT regulariser and with PGD (both per seed); and the runner stores each seed's result
under the key of a single ``fit_run``, so a later single run is a cache hit.

Compared in float64: Adam divides by √v, so float32 rounding differences of ~1e-7 in a gradient that
is zero in exact arithmetic (the key bias of attention: softmax ignores a shift shared by all keys)
could grow to a step of size lr; in float64 they stay below Adam's ε. For the same reason the
regulariser case uses the 'ln' regime (no parameter in such a null direction): in the 'full' regime
the regulariser's pull on the key bias, a parameter the loss cannot see, is driven by the sign of
rounding noise, in a run apart as much as together; there the predictions and the loss history
still agree (tested)."""

import pytest
import torch

from privtrans.book.runcache import RunCache, code_modules
from privtrans.taft import data
from privtrans.taft import experiments
from privtrans.taft import finetune
from privtrans.taft.pretrain import PretrainSpec
from privtrans.taft.vit import ViT, ViTConfig

CFG = ViTConfig(image=8, patch=4, dim=16, depth=2, heads=2, classes=5)
SEEDS = [0, 1, 2]


def tiny_vit():
    torch.manual_seed(0)
    return ViT(CFG).eval().requires_grad_(False)


def feats(vit, n=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, CFG.image, CFG.image, generator=g)
    return finetune.features(vit, x, cut=1), torch.randint(0, 4, (n,), generator=g)


def spec(method, **kw):
    base = dict(method=method, tuned=1, lr=1e-2, epochs=3, batch=16, decay_at=(2,), wd=0.0, rank=3)
    return finetune.FitSpec(**{**base, **kw})


def apart_and_together(vit, s, seeds=SEEDS):
    x, y = feats(vit)
    apart = [finetune.fit(finetune.make_model(vit, s, 4, init_seed=i), x, y, s, i, classes=4) for i in seeds]
    models = [finetune.make_model(vit, s, 4, init_seed=i) for i in seeds]
    together = finetune.fit_together(models, x, y, s, seeds, classes=4)
    return apart, together, models, x


def assert_equal_runs(apart, together, params=True, rel=1e-9):
    assert len(apart) == len(together)
    for a, b in zip(apart, together):
        if params:
            assert a.state.keys() == b.state.keys()
            for n in a.state:
                torch.testing.assert_close(b.state[n], a.state[n], atol=1e-9, rtol=1e-9, msg=n)
            assert b.delta_norm == pytest.approx(a.delta_norm, rel=1e-9)
        assert len(b.history) == len(a.history)
        assert b.history == pytest.approx(a.history, rel=rel, abs=1e-12)
        assert b.final_loss == pytest.approx(a.final_loss, rel=rel, abs=1e-12)
    # not vacuous: the seeds trained, and differ from one another
    assert all(r.delta_norm > 0 for r in together)
    assert together[0].final_loss != pytest.approx(together[1].final_loss)


CASES = {
    "taft": dict(),
    "taft-cls-ptF": dict(cls=True, pt=False, loss="rsl", kappa=5.0),
    "nlft": dict(loss="ce"),
    "fc": dict(loss="ce"),
    "lora": dict(loss="ce"),
    "adapter": dict(loss="mse"),
    "taft-pgd": dict(radius=0.05),  # the projection binds: ‖Δw_i‖ = R for every seed
    "taft-wd": dict(wd=0.1, regime="ln"),  # the regulariser wd·‖Δw_i‖₂, per seed
}


@pytest.mark.parametrize("case", list(CASES))
def test_fit_together_equals_fits_apart(float64, case):
    method = case.split("-")[0]
    apart, together, _, _ = apart_and_together(tiny_vit(), spec(method, **CASES[case]))
    assert_equal_runs(apart, together)
    if case == "taft-pgd":
        assert all(r.delta_norm == pytest.approx(0.05, rel=1e-9) for r in together)


def test_regulariser_in_the_full_regime_gives_the_same_predictions(float64):
    """wd > 0 on every tuned weight: the key bias (a null direction of the loss) follows rounding
    noise (its ~lr-sized entries enter the loss only through wd·‖Δw‖, ~1e-8 of it), so compare
    what barely depends on it: each seed's loss history and its logits."""
    vit = tiny_vit()
    s = spec("taft", wd=0.1)
    apart, together, models, x = apart_and_together(vit, s)
    assert_equal_runs(apart, together, params=False, rel=1e-6)
    for i, (a, m) in enumerate(zip(apart, models)):
        ref = finetune.load_trainable(finetune.make_model(vit, s, 4, init_seed=SEEDS[i]), a.state)
        torch.testing.assert_close(finetune.logits(m, x), finetune.logits(ref, x), atol=1e-6, rtol=1e-6)


def test_one_seed_and_bad_input(float64):
    vit = tiny_vit()
    x, y = feats(vit)
    s = spec("taft")
    (one,) = finetune.fit_together([finetune.make_model(vit, s, 4, init_seed=3)], x, y, s, [3], classes=4)
    ref = finetune.fit(finetune.make_model(vit, s, 4, init_seed=3), x, y, s, 3, classes=4)
    assert one.history == ref.history
    with pytest.raises(ValueError, match="one model per seed"):
        finetune.fit_together([finetune.make_model(vit, s, 4, init_seed=0)], x, y, s, [0, 1])


def test_seconds_are_the_together_time_shared():
    vit = tiny_vit()
    x, y = feats(vit)
    s = spec("fc", epochs=1)
    rs = finetune.fit_together([finetune.make_model(vit, s, 4, init_seed=i) for i in SEEDS], x, y, s, SEEDS, classes=4)
    assert len({r.seconds for r in rs}) == 1 and rs[0].seconds > 0


class TinyBench(experiments.Bench):
    """A Bench on the tiny ViT and a random 4-class task (no pretraining, no dataset)."""

    def __post_init__(self):
        self.spec = PretrainSpec(dim=CFG.dim, depth=CFG.depth, heads=CFG.heads, patch=CFG.patch)
        self.vit = tiny_vit()
        g = torch.Generator().manual_seed(5)
        x = torch.randn(56, 1, CFG.image, CFG.image, generator=g)
        y = torch.randint(0, 4, (56,), generator=g)
        task = data.Task("toy", x[:40], y[:40], x[40:], y[40:], 4, "noise")
        self._tasks, self._feats = (lambda name: task), {}


def test_runner_stores_each_seed_under_the_single_run_key(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVTRANS_WORKERS", "1")
    assert "privtrans.shared.seeds_together" in code_modules(experiments.CODE)
    s = spec("taft", lr=1e-3, epochs=2)
    bench = TinyBench({}, 0, {}, None, cache=RunCache("taft", root=tmp_path / "together"))
    calls = []
    together = finetune.fit_together
    monkeypatch.setattr(finetune, "fit_together", lambda *a, **kw: calls.append(a[4]) or together(*a, **kw))
    runs = experiments.fit_runs(bench, [("toy", s, i, "test") for i in SEEDS] + [("toy", s, 0, "val")])
    assert calls == [SEEDS]  # the three test-split seeds in one stack; the val run alone
    assert len(list((tmp_path / "together").glob("fit-*.pt"))) == 4

    def no_training(*a, **kw):
        raise AssertionError("a single fit_run after the together run must be a cache hit")

    monkeypatch.setattr(finetune, "fit", no_training)
    monkeypatch.setattr(finetune, "fit_together", no_training)
    hits = bench.cache.hits
    for i, r in zip(SEEDS, runs):
        assert bench.fit_run("toy", s, i) == r
    assert bench.cache.hits == hits + len(SEEDS)
    assert bench.missing_seeds("toy", s, SEEDS + [7]) == [7]
    assert experiments.fit_runs(bench, [("toy", s, 1, "test")]) == [runs[1]]
    monkeypatch.undo()

    # the same runs made one by one (another cache) agree with what the together run stored
    apart = TinyBench({}, 0, {}, None, cache=RunCache("taft", root=tmp_path / "apart"))
    for i, r in zip(SEEDS, runs):
        a = apart.fit_run("toy", s, i)
        assert a["accuracy"] == pytest.approx(r["accuracy"], abs=1 / 16 + 1e-9)  # at most one test image flips
        assert a["final_loss"] == pytest.approx(r["final_loss"], rel=1e-4)
        assert a["delta_norm"] == pytest.approx(r["delta_norm"], rel=1e-4)
        assert a["n_train"] == r["n_train"]


@pytest.mark.parametrize("loss", ["rsl", "ce", "mse"])
def test_batched_loss_is_each_seeds_loss(loss):
    g = torch.Generator().manual_seed(0)
    out, y = torch.randn(3, 7, 5, generator=g, dtype=torch.float64), torch.randint(0, 5, (3, 7), generator=g)
    s = finetune.FitSpec(loss=loss, kappa=4.0, alpha=2.5)
    want = torch.stack([finetune.loss_fn(out[i], y[i], loss, 5, s.kappa, s.alpha) for i in range(3)])
    torch.testing.assert_close(finetune.per_seed_loss(out, y, s, 5), want, atol=1e-12, rtol=1e-12)
