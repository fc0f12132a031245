"""DP fine-tuning (Table 3, ``privtrans.taft.dp``): the step is the clipped, noised mean gradient, and
nothing computed from the private data besides the trained model comes back (no clipped fraction or
other statistic that the ε accounting does not cover)."""

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from privtrans.taft import dp


def _data(n=12, d=5, k=3):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, d, generator=g), torch.randint(0, k, (n,), generator=g)


def test_the_result_holds_nothing_of_the_private_data_but_the_model_s_accuracy():
    assert [f.name for f in dataclasses.fields(dp.DPResult)] == ["accuracy", "sigma", "seconds", "spec"]


def test_dp_fit_returns_sigma_only_and_steps_on_the_clipped_mean_gradient():
    x, y = _data()
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 3)
    ref = torch.nn.Linear(5, 3)
    ref.load_state_dict(model.state_dict())
    spec = dp.DPSpec(epsilon=1.0, steps=1, clip=1e6, lr=1e-2)  # no clipping at this norm
    out = dp.dp_fit(model, x, y, spec, seed=0, sigma=0.0)  # no noise: the plain mean gradient
    assert isinstance(out, float) and out == 0.0
    F.cross_entropy(ref(x), y).backward()
    torch.testing.assert_close(model.weight.grad, ref.weight.grad, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(model.bias.grad, ref.bias.grad, atol=1e-6, rtol=1e-5)


def test_dp_fit_takes_sigma_from_the_accountant():
    x, y = _data()
    spec = dp.DPSpec(epsilon=3.0, steps=2)
    assert dp.dp_fit(torch.nn.Linear(5, 3), x, y, spec, seed=0) == pytest.approx(spec.noise_multiplier())


@pytest.mark.usefixtures("float64")
@pytest.mark.parametrize("method,regime,cls", [("taft", "full", False), ("taft", "full", True), ("taft", "ln", False),
                                               ("taft", "bitfit", False), ("nlft", "full", False), ("nlft", "ln", False),
                                               ("nlft", "bitfit", False), ("fc", "head", False)])
def test_a_dp_step_is_the_clipped_sum_of_per_sample_gradients(method, regime, cls):
    """One step of ``dp_fit`` without noise, over several chunks, on Table 3's models: the gradient
    it steps on is Σ_i min(1, C/‖g_i‖) g_i / n with g_i from torch.func (vmap of grad), some samples
    clipped and some not."""
    from privtrans.shared.dp.brute_force import norms_of, per_sample_grads
    from privtrans.shared.dp.clipping import clip_factors
    from privtrans.taft import finetune
    from privtrans.taft.vit import ViT, ViTConfig

    torch.manual_seed(0)
    vit = ViT(ViTConfig(image=8, patch=4, dim=16, depth=2, heads=2, classes=5)).eval()
    spec = dp.fit_spec(method, regime).with_(cls=cls)
    model = finetune.make_model(vit, spec, 5, init_seed=1, output="jvp")
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():  # Δ away from zero, so that every tangent term carries a gradient
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.1 * torch.randn(p.shape, generator=g))
    x = finetune.features(vit, torch.randn(8, 1, 8, 8, generator=g), len(vit.blocks) - spec.tuned)
    y = torch.randint(0, 5, (8,), generator=g)

    per = per_sample_grads(model, lambda run, xb, yb: F.cross_entropy(run(xb), yb), x, y)
    norms = norms_of(per)
    clip = float(norms.median())
    coef = clip_factors(norms, clip, "abadi")
    assert 0 < int((coef < 1).sum()) < len(y)
    want = {k: torch.einsum("b,b...->...", coef, v) / len(y) for k, v in per.items()}

    dp.dp_fit(model, x, y, dp.DPSpec(epsilon=1.0, steps=1, clip=clip, chunk=3), seed=0, sigma=0.0)
    got = {k: p.grad for k, p in model.named_parameters() if p.requires_grad}
    assert got.keys() == want.keys()
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=1e-9, atol=1e-12, msg=k)


def test_privatised_parameters_count_the_block_and_head_a_regime_trains():
    """Full NLFT trains the last block, the final norm and the head: the block's weights counted by
    hand (qkv, proj, two MLP layers, two norms); LN trains the norms and the head only; FC the head."""
    from privtrans.taft.vit import ViT, ViTConfig

    d, classes = 16, 5
    vit = ViT(ViTConfig(image=8, patch=4, dim=d, depth=2, heads=2, classes=3))
    block = (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d) + 2 * 2 * d
    head, final_norm = d * classes + classes, 2 * d
    assert dp.privatised_parameters(vit, "nlft", "full", classes) == block + final_norm + head
    assert dp.privatised_parameters(vit, "nlft", "ln", classes) == 2 * 2 * d + final_norm + head
    assert dp.privatised_parameters(vit, "fc", "head", classes) == head
    assert dp.privatised_parameters(vit, "taft", "full", classes) >= block + head
