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


def test_phantom_fits_about_three_quarters_of_opacus_ghosts_batch():
    """The chapter's memory model at the paper's vocabularies (L = 50, 16 GB): Phantom's tied model keeps
    one extra logit-sized buffer, so it fits about 0.74× the batch of opacus's ghost clipping of the untied
    d/2 model (which pays no B·M² term), while hundreds of times the paper-style Ghost's at M = 23,715."""
    t = eff.modelled_max_batch_table(eff.METHODS, [3416, 23715], 50, 16, 64)
    assert (t.loc[3416, "phantom"], t.loc[3416, "opacus_ghost"]) == (4730, 6375)
    assert (t.loc[23715, "phantom"], t.loc[23715, "opacus_ghost"]) == (814, 1088)
    assert t["Phantom / opacus ghost"].tolist() == pytest.approx([4730 / 6375, 814 / 1088])
    assert "Phantom / opacus ghost" not in eff.modelled_max_batch_table(["nonprivate", "phantom", "paper_ghost"],
                                                                        [3416], 50, 16, 64)
