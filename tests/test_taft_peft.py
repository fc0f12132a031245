"""Table 11's baselines: a fresh Adapter or LoRA is the frozen block; LoRA equals its merged weight;
only their own tensors and the head train; every shard starts from one initialisation; and their
weight average is *not* the ensemble of the shard models (the contrast with TAFT that Table 11 is
about)."""

import pytest
import torch

from privtrans.taft import compose
from privtrans.taft import finetune
from privtrans.taft import peft
from privtrans.taft.vit import ViT, ViTConfig

CFG = ViTConfig(image=8, patch=4, dim=16, depth=2, heads=2, classes=5)


@pytest.fixture(scope="module")
def vit():
    torch.manual_seed(0)
    return ViT(CFG).eval().requires_grad_(False)


def feats(vit, n=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, CFG.image, CFG.image, generator=g)
    return finetune.features(vit, x, cut=1), torch.randint(0, 4, (n,), generator=g)


def spec(method, **kw):
    return finetune.FitSpec(method=method, tuned=1, loss="ce", rank=3, epochs=2, decay_at=(1,), **kw)


@pytest.mark.parametrize("method", peft.METHODS)
def test_fresh_peft_model_is_the_plain_tail_with_the_same_new_head(vit, method):
    x, _ = feats(vit)
    plain = finetune.make_model(vit, spec("nlft"), 4, init_seed=3)
    model = finetune.make_model(vit, spec(method), 4, init_seed=3)
    assert torch.equal(finetune.logits(plain, x), finetune.logits(model, x))


@pytest.mark.parametrize("method", peft.METHODS)
def test_only_the_methods_own_tensors_and_the_head_train(vit, method):
    model = finetune.make_model(vit, spec(method), 4, init_seed=0)
    d, r = CFG.dim, 3
    own = {"adapter": 2 * (d * r + r + r * d + d),  # down and up after proj and after fc2
           "lora": (r * d + 3 * d * r) + (r * d + d * r)}  # A and B on qkv (d -> 3d) and on proj
    want = own[method] + d * 4 + 4  # and the head
    trainable = {n: p.numel() for n, p in model.named_parameters() if p.requires_grad}
    assert sum(trainable.values()) == want
    assert all(n.startswith("head.") or peft.MARKERS[method] in n for n in trainable)
    x, y = feats(vit)
    frozen = {n: p.clone() for n, p in model.named_parameters() if not p.requires_grad}
    finetune.fit(model, x, y, spec(method, lr=1e-2), seed=0, classes=4)
    assert all(torch.equal(p, frozen[n]) for n, p in model.named_parameters() if not p.requires_grad)


def test_lora_equals_the_linear_layer_with_its_merged_weight():
    torch.manual_seed(0)
    base = torch.nn.Linear(6, 9)
    lora = peft.LoRALinear(base, rank=2, alpha=4.0)
    with torch.no_grad():
        lora.lora_b.normal_()
    x = torch.randn(5, 6)
    want = x @ lora.merged_weight().t() + base.bias
    assert torch.allclose(lora(x), want, atol=1e-6)
    assert not torch.allclose(lora(x), base(x))


def test_adapter_is_a_residual_bottleneck_after_the_layer():
    torch.manual_seed(0)
    base = torch.nn.Linear(6, 6)
    ad = peft.AdapterLinear(base, rank=2)
    with torch.no_grad():
        ad.adapter_up.weight.normal_()
    x = torch.randn(5, 6)
    y = base(x)
    want = y + ad.adapter_up(torch.nn.functional.gelu(ad.adapter_down(y)))
    assert torch.allclose(ad(x), want)


@pytest.mark.parametrize("method", peft.METHODS)
def test_shards_start_from_one_initialisation_and_their_average_is_not_the_ensemble(vit, method):
    x, y = feats(vit, n=40)
    sset = compose.train_shards(vit, x, y, spec(method, lr=5e-2), classes=4, shards=2, seed=0)
    inits = [finetune.trainable_state(sset.model(vit)) for _ in range(2)]
    assert all(torch.equal(inits[0][k], inits[1][k]) for k in inits[0])
    other = finetune.trainable_state(finetune.make_model(vit, sset.spec, 4, init_seed=sset.init_seed + 1))
    own = [k for k in other if peft.MARKERS[method] in k and not torch.all(other[k] == 0)]
    assert own and all(not torch.equal(other[k], inits[0][k]) for k in own)  # drawn from init_seed
    ensemble = compose.shard_logits(vit, sset, x).mean(0)
    composed = compose.composed_logits(vit, sset, x)
    assert (composed - ensemble).abs().max() > 1e-4  # non-linear in its weights, unlike TAFT


def test_bad_peft_settings_are_named():
    with pytest.raises(ValueError, match="needs tuned >= 1"):
        finetune.FitSpec(method="lora", tuned=1, regime="ln")
    with pytest.raises(ValueError, match="rank must be a positive integer"):
        peft.attach(torch.nn.Module(), "lora", 0, 0)
    with pytest.raises(ValueError, match="method must be one of"):
        peft.attach(torch.nn.Module(), "prefix", 2, 0)
