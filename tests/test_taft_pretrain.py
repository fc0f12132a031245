"""``taft.pretrain``: the backbone's pretraining is a function of its spec and seed, records what the
readouts read, and a backbone's cache key changes with its spec (so fine-tunes keyed by it retrain).
Bit for bit on the CPU, where these run: cuda's kernels are not deterministic (on an H200 two runs
differed), and test_book_device bounds a cuda pretraining against the CPU's."""

import pytest
import torch

from privtrans.book.runcache import RunCache
from privtrans.taft import pretrain

TINY = dict(epochs=1, batch=1024, dim=8, depth=1, heads=2)


@pytest.fixture(scope="module")
def backbone():
    return pretrain.pretrain(pretrain.PretrainSpec(**TINY), seed=0, device="cpu")


def test_pretraining_records_its_spec_history_and_accuracy(backbone):
    assert backbone.spec == pretrain.PretrainSpec(**TINY).__dict__
    assert len(backbone.history) == TINY["epochs"] and backbone.history[-1]["val_acc"] == backbone.val_acc
    assert 0.0 <= backbone.val_acc <= 1.0 and backbone.seconds > 0
    assert all(v.device.type == "cpu" for v in backbone.state.values())
    vit = backbone.model()
    assert not any(p.requires_grad for p in vit.parameters()) and not vit.training


def test_pretraining_is_a_function_of_spec_and_seed(backbone):
    again = pretrain.pretrain(pretrain.PretrainSpec(**TINY), seed=0, device="cpu")
    assert all(torch.equal(again.state[k], v) for k, v in backbone.state.items())
    other = pretrain.pretrain(pretrain.PretrainSpec(**TINY), seed=1, device="cpu")
    assert not torch.equal(other.state["pos_embed"], backbone.state["pos_embed"])


def test_mae_pretraining_has_no_validation_accuracy():
    b = pretrain.pretrain(pretrain.PretrainSpec(**TINY, scheme="mae"), seed=0)
    assert b.val_acc is None and torch.isfinite(torch.tensor(b.history[-1]["train_loss"]))


def test_mae_loss_is_the_error_on_masked_patches_only():
    from privtrans.taft.vit import ViT

    spec = pretrain.PretrainSpec(**TINY)
    torch.manual_seed(0)
    vit, dec = ViT(spec.vit_config()), pretrain.MAEDecoder(spec.vit_config())
    x = torch.randn(3, 1, 28, 28)
    full = pretrain.mae_loss(vit, dec, x, 0.75, torch.Generator().manual_seed(0))
    assert full.ndim == 0 and full > 0
    # with every patch visible there is nothing masked to score: the mean over no patches
    assert torch.isnan(pretrain.mae_loss(vit, dec, x, 0.0, torch.Generator().manual_seed(0)))


def test_a_backbone_key_changes_with_its_spec_and_seed(tmp_path):
    cache = RunCache("taft", root=tmp_path)
    k = pretrain.backbone_key(pretrain.PretrainSpec(**TINY), 0, cache)
    assert k == pretrain.backbone_key(pretrain.PretrainSpec(**TINY), 0, cache)
    assert k != pretrain.backbone_key(pretrain.PretrainSpec(**TINY), 1, cache)
    assert k != pretrain.backbone_key(pretrain.PretrainSpec(**{**TINY, "epochs": 2}), 0, cache)


def test_a_bad_scheme_is_named_with_the_allowed_values():
    with pytest.raises(ValueError, match="scheme must be one of"):
        pretrain.PretrainSpec(scheme="simclr")
