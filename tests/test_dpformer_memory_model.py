"""privtrans.dpformer.efficiency.memory_model counts exactly the parameters of the model each
method trains: its ``fixed_bytes`` (parameters and their gradients) equal 2 · 4 bytes · the torch
model's ``sum(p.numel())``, and opacus hooks' per-sample gradients equal B · the parameters of
every module (the tied item table twice), for several sizes and depths. Before, each block was
counted with 12·d bias and LayerNorm entries against the model's 10·d and the final LayerNorm
(2·d) was left out: 2·d·(n_blocks - 1) too many, 2·d at the book's 2 blocks."""

import pytest

from privtrans.dpformer import efficiency as eff
from privtrans.dpformer.ghost_baseline import paper_ghost_model
from privtrans.dpformer.sasrec import SASRec

CONFIGS = [  # (n_items, length, d, n_blocks)
    (9, 4, 8, 2), (50, 6, 8, 2), (200, 10, 64, 2), (3416, 50, 64, 2), (30, 5, 16, 1), (30, 5, 16, 3),
    (12, 3, 32, 0),
]


def _model(method, n_items, length, d, n_blocks):
    """The model make_step builds for `method` (d/2 and untied for the two ghost baselines)."""
    if method == "paper_ghost":
        return paper_ghost_model(n_items, length, d=d, n_blocks=n_blocks)
    return SASRec(n_items, length, d=d // 2 if method == "opacus_ghost" else d, n_blocks=n_blocks,
                  tied=method != "opacus_ghost")


@pytest.mark.parametrize("n_items,length,d,n_blocks", CONFIGS)
@pytest.mark.parametrize("method", eff.METHODS)
def test_parameters_equal_the_torch_models_count(method, n_items, length, d, n_blocks):
    model = _model(method, n_items, length, d, n_blocks)
    brute = sum(p.numel() for p in model.parameters())  # a tied Parameter counts once
    for bytes_per in (4, 8):
        mm = eff.memory_model(method, n_items, length, 3, d, n_blocks=n_blocks, bytes_per=bytes_per)
        assert mm["fixed_bytes"] == 2 * bytes_per * brute, (method, mm["fixed_bytes"] / (2 * bytes_per), brute)


@pytest.mark.parametrize("n_items,length,d,n_blocks", CONFIGS)
def test_opacus_hooks_per_sample_grads_are_every_modules_parameters(n_items, length, d, n_blocks):
    """opacus' hooks keep a (B, ...) gradient for each parameter of each module: the tied item table
    once for the lookup and once for the head."""
    model = _model("opacus_hooks", n_items, length, d, n_blocks)
    per_module = sum(p.numel() for mod in model.modules() for p in mod.parameters(recurse=False))
    assert per_module == sum(p.numel() for p in model.parameters()) + (n_items + 1) * d
    batch = 5
    mm = eff.memory_model("opacus_hooks", n_items, length, batch, d, n_blocks=n_blocks)
    assert mm["clip_bytes"] == 4 * batch * per_module
