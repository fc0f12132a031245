"""The TAFT chapter's loops under the dry run (``privtrans.book.dry``): in a dry run the fine-tuning
(``fit``, ``fit_together``), the backbones' pretraining (``pretrain.one_cycle``), DP-GD (``dp.dp_fit``)
and the timing repeats (``cost``) run their first epoch/step/batch only and ``dry.report`` books the
full lengths; outside one, every loop runs in full and the results are those of plain ``range`` loops
(the code before the loops were wrapped), bit for bit."""

import types

import torch
import torch.nn.functional as F

from privtrans.book import dry
from privtrans.taft import tangent_cost, dp, readouts
from privtrans.taft import finetune
from privtrans.taft import pretrain
from privtrans.taft.vit import ViT, ViTConfig

CFG = ViTConfig(image=8, patch=4, dim=16, depth=2, heads=2, classes=5)
N, BATCH, EPOCHS = 40, 16, 3  # 3 batches an epoch


def plain(iterable, what, total=None, keep=1):
    """What ``dry.loop`` replaced: the plain iteration."""
    return iter(iterable)


def tiny_vit():
    torch.manual_seed(0)
    return ViT(CFG).eval().requires_grad_(False)


def feats(vit):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, 1, CFG.image, CFG.image, generator=g)
    return finetune.features(vit, x, cut=1), torch.randint(0, 4, (N,), generator=g)


SPEC = finetune.FitSpec(method="taft", tuned=1, lr=1e-2, epochs=EPOCHS, batch=BATCH, decay_at=(2,))


def fit_once(seed=0):
    vit = tiny_vit()
    x, y = feats(vit)
    return finetune.fit(finetune.make_model(vit, SPEC, 4, init_seed=seed), x, y, SPEC, seed, classes=4)


def test_fit_runs_one_epoch_of_one_batch_and_books_the_full_run(dry_run):
    r = fit_once()
    assert len(r.history) == 1
    loops = dry.report(1.0)["loops"]
    assert loops["fine-tuning epochs"] == {"runs": 1, "kept": 1, "full": EPOCHS}
    assert loops["fine-tuning batches"] == {"runs": 1, "kept": 1, "full": 3}


def test_fit_together_runs_one_epoch_of_one_batch_per_seed_stack(dry_run):
    vit = tiny_vit()
    x, y = feats(vit)
    models = [finetune.make_model(vit, SPEC, 4, init_seed=s) for s in (0, 1)]
    rs = finetune.fit_together(models, x, y, SPEC, [0, 1], classes=4)
    assert [len(r.history) for r in rs] == [1, 1]
    loops = dry.report(1.0)["loops"]
    assert loops["fine-tuning epochs"]["full"] == EPOCHS and loops["fine-tuning batches"]["full"] == 3


def test_outside_a_dry_run_fit_is_the_plain_loop_bit_for_bit(monkeypatch):
    assert not dry.active()
    dry.reset()
    wrapped = fit_once(seed=3)
    assert len(wrapped.history) == EPOCHS
    with monkeypatch.context() as m:
        m.setattr(dry, "loop", plain)
        before = fit_once(seed=3)
    assert wrapped.history == before.history and wrapped.final_loss == before.final_loss
    for k in before.state:
        assert torch.equal(wrapped.state[k], before.state[k]), k
    assert dry.report(1.0)["loops"] == {}  # nothing booked outside a dry run


def _one_cycle():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(N, 6, generator=g), torch.randint(0, 3, (N,), generator=g)
    model = torch.nn.Linear(6, 3)
    spec = types.SimpleNamespace(lr=1e-2, weight_decay=0.0, epochs=EPOCHS, batch=BATCH)
    history, _ = pretrain.one_cycle(model, list(model.parameters()), N, spec, g,
                             lambda idx: F.cross_entropy(model(x[idx]), y[idx]), lambda: 0.5)
    return history, model.weight.detach().clone()


def test_pretraining_runs_one_epoch_in_a_dry_run_and_is_unchanged_outside(dry_run, monkeypatch):
    history, _ = _one_cycle()
    assert len(history) == 1
    assert dry.report(1.0)["loops"]["pretraining batches"] == {"runs": 1, "kept": 1, "full": 3}
    dry.activate(False)
    history, w = _one_cycle()
    assert len(history) == EPOCHS
    monkeypatch.setattr(dry, "loop", plain)
    before, w_before = _one_cycle()
    assert history == before and torch.equal(w, w_before)


def test_the_pretraining_gate_is_not_judged_in_a_dry_run(dry_run):
    b = types.SimpleNamespace(val_acc=0.1, seconds=1.0, history=[{}])
    assert readouts.pretraining(b, 0.9)["meets_target"] is None
    dry.activate(False)
    assert readouts.pretraining(b, 0.9)["meets_target"] is False


def test_dp_fit_takes_one_step_of_one_chunk(dry_run):
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(12, 5, generator=g), torch.randint(0, 3, (12,), generator=g)
    dp.dp_fit(torch.nn.Linear(5, 3), x, y, dp.DPSpec(epsilon=3.0, steps=4, chunk=5), seed=0)
    loops = dry.report(1.0)["loops"]
    assert loops["DP steps"] == {"runs": 1, "kept": 1, "full": 4}
    assert loops["DP chunks"] == {"runs": 1, "kept": 1, "full": 3}


def test_timing_repeats_are_cut_to_one_call(dry_run):
    calls = []
    tangent_cost._median_seconds(lambda: calls.append(1), repeats=20, warmup=2)
    assert len(calls) == 2  # one warm-up call, one timed call
    assert dry.report(1.0)["loops"]["timing repeats"] == {"runs": 1, "kept": 1, "full": 20}
