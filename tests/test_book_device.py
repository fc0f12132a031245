"""``privtrans.book.device``: which device the training functions use, and that a run on cuda lands
where the same run on the CPU lands (the cuda tests run only where a GPU is present: on a lent GPU
machine, ``pytest tests/test_book_device.py``).

What is compared: each chapter's training function with ``device="cuda"`` against ``device="cpu"``
from the same seed. Weights are initialised and randomness drawn on the CPU in both, so the runs
differ only by float rounding (cuda's kernels sum in another order): a few steps of a small model
agree to about 1e-4. Every function hands its model back on the CPU, so what the run cache stores
loads on any machine."""

import os

import pytest
import torch

from privtrans.book import device

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no cuda device here")


def test_pick_device_follows_the_environment(monkeypatch):
    monkeypatch.setenv("PRIVTRANS_DEVICE", "cpu")
    assert device.pick_device() == torch.device("cpu")
    monkeypatch.delenv("PRIVTRANS_DEVICE")
    assert device.pick_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_resolve_takes_the_given_device_else_the_picked_one(monkeypatch):
    monkeypatch.setenv("PRIVTRANS_DEVICE", "cpu")
    assert device.resolve(None) == torch.device("cpu")
    assert device.resolve("meta") == torch.device("meta")


@pytest.fixture
def kernels_restored():
    """torch's global kernel settings as they were, after a test that switches them."""
    old = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
           torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic)
    yield
    torch.use_deterministic_algorithms(old[0], warn_only=old[1])
    torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = old[2], old[3]


def test_a_session_on_a_gpu_asks_for_deterministic_kernels(monkeypatch, kernels_restored):
    """Only the device's name is read, so this runs without a GPU: the switches are torch's own."""
    from privtrans.book import session

    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setenv("PRIVTRANS_DEVICE", "cpu")
    torch.use_deterministic_algorithms(False)
    assert device.deterministic() is False and not torch.are_deterministic_algorithms_enabled()
    monkeypatch.setenv("PRIVTRANS_DEVICE", "cuda")
    session.seed_everything(0)
    assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
    assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == device.CUBLAS_WORKSPACE


def _close(a: dict, b: dict, atol=2e-4, rtol=2e-3):
    assert a.keys() == b.keys()
    for n in a:
        assert a[n].device.type == "cpu" and b[n].device.type == "cpu", f"{n} not handed back on the CPU"
        torch.testing.assert_close(a[n], b[n], atol=atol, rtol=rtol, msg=n)


def _mpc_task():
    from privtrans.book import profiles
    from privtrans.mpc_attention import experiments

    s = experiments.Settings.from_cfg(profiles.settings("mpc_attention", "tables2_6_schemes", "smoke")["tasks"])
    task = experiments.load_task("mr2", s.teacher, 0)
    return s, task, experiments.model_config(task, s.teacher)


@cuda
def test_mpc_attention_teacher_and_distillation_on_cuda_equal_the_cpu():
    from privtrans.mpc_attention import train

    s, task, cfg = _mpc_task()
    runs = {}
    for dev in ("cpu", "cuda"):
        t, _ = train.train_teacher(task, cfg, 1, lr=s.teacher.teacher_lr, seed=0, device=dev)
        # a per-head f(n) constant: (H,) tensors that must follow the scores to the device
        h = cfg.n_heads
        st = t.converted("2quad_freediv", "quad", ([1.2] * h, [0.4] * h))
        r = train.distill(t, st, task, 1, 1, lr1=s.lr1, lr2=s.lr2, seed=0, device=dev)
        runs[dev] = (t.state_dict(), st.state_dict(), r)
    _close(runs["cpu"][0], runs["cuda"][0])
    _close(runs["cpu"][1], runs["cuda"][1])
    assert runs["cuda"][2]["after_stage2"] == pytest.approx(runs["cpu"][2]["after_stage2"], abs=0.02)


def _taft():
    from privtrans.taft import finetune
    from privtrans.taft.vit import ViT, ViTConfig

    torch.manual_seed(0)
    vit = ViT(ViTConfig(image=8, patch=4, dim=16, depth=2, heads=2, classes=5)).eval().requires_grad_(False)
    g = torch.Generator().manual_seed(0)
    x = finetune.features(vit, torch.randn(40, 1, 8, 8, generator=g), cut=1)
    return finetune, vit, x, torch.randint(0, 4, (40,), generator=g)


@cuda
@pytest.mark.parametrize("together", [False, True])
def test_taft_fine_tunes_on_cuda_equal_the_cpu(together):
    """Compared by what the models predict, not parameter by parameter: the key bias of attention is
    a direction the loss cannot see (softmax ignores a shift shared by all keys), so its gradient is
    rounding noise, which Adam scales to steps of size lr on either device (measured on an H100:
    ``qkv.delta.bias`` differs while the predictions agree; tests/test_taft_finetune.py has the
    same note)."""
    finetune, vit, x, y = _taft()
    spec = finetune.FitSpec(method="taft", tuned=1, lr=1e-2, epochs=2, batch=16, decay_at=(1,), wd=0.0)
    out = {}
    for dev in ("cpu", "cuda"):
        models = [finetune.make_model(vit, spec, 4, init_seed=i) for i in (0, 1)]
        if together:
            res = finetune.fit_together(models, x, y, spec, [0, 1], classes=4, device=dev)
        else:
            res = [finetune.fit(m, x, y, spec, i, classes=4, device=dev) for i, m in enumerate(models)]
        assert all(p.device.type == "cpu" for m in models for p in m.parameters())
        out[dev] = ([finetune.logits(m, x) for m in models], [r.final_loss for r in res])
    for a, b in zip(out["cpu"][0], out["cuda"][0]):
        torch.testing.assert_close(a, b, atol=1e-3, rtol=1e-3)
    assert out["cuda"][1] == pytest.approx(out["cpu"][1], rel=1e-3)


@cuda
def test_taft_dp_fit_on_cuda_equals_the_cpu():
    from privtrans.taft import dp

    finetune, vit, x, y = _taft()
    spec = finetune.FitSpec(method="taft", tuned=1, loss="ce")
    states = {}
    for dev in ("cpu", "cuda"):
        model = finetune.make_model(vit, spec, 4, init_seed=0, output="jvp")
        dp.dp_fit(model, x, y, dp.DPSpec(epsilon=3.0, steps=2, chunk=16), seed=0, device=dev)
        states[dev] = finetune.trainable_state(model)
    _close(states["cpu"], states["cuda"])


@cuda
@pytest.mark.parametrize("scheme", ["cls", "mae"])
def test_taft_pretraining_on_cuda_equals_the_cpu(scheme, monkeypatch):
    from privtrans.taft import pretrain

    spec = pretrain.PretrainSpec(epochs=1, batch=1024, dim=8, depth=1, heads=2, scheme=scheme)
    got = {dev: pretrain.pretrain(spec, 0, device=dev) for dev in ("cpu", "cuda")}
    _close(got["cpu"].state, got["cuda"].state, atol=1e-3, rtol=1e-2)
