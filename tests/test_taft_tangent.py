"""The tangent ViT (privtrans.taft.tangent): each hand-written tangent layer equals torch.func.jvp,
the model is exactly linear in Δw, and per-sample gradients through it (opacus's hooks on the Δ
modules) equal a per-sample loop."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call, jvp

from privtrans.taft import tangent
from privtrans.taft.vit import ViT, ViTConfig, attention

CFG = ViTConfig(image=8, patch=4, dim=16, depth=2, heads=2, classes=5)


pytestmark = pytest.mark.usefixtures("float64")  # tests/conftest.py


def randomise(tangent_module, scale=0.1, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in tangent_module.parameters():
            if p.requires_grad:
                p.copy_(scale * torch.randn(p.shape, generator=g))
    return tangent_module


def deltas_of(tangent_module):
    """{name of the base parameter: Δ} for a tangent layer, matched to the plain module's names."""
    return {k.replace("delta.", ""): v for k, v in tangent_module.named_parameters() if "delta." in k}


def test_linear_and_layernorm_equal_torch_jvp():
    torch.manual_seed(0)
    x, xd = torch.randn(3, 5, 16), torch.randn(3, 5, 16)
    for base, tang in ((torch.nn.Linear(16, 7), tangent.TangentLinear), (torch.nn.LayerNorm(16, eps=1e-6), tangent.TangentLayerNorm)):
        with torch.no_grad():
            for p in base.parameters():
                p.add_(0.3 * torch.randn_like(p))
        t = randomise(tang(base))
        params = dict(base.named_parameters())
        d = deltas_of(t)
        want_y, want_yd = jvp(lambda ps, inp: functional_call(base, ps, (inp,)), (params, x), (d, xd))
        y, yd = t(x, xd)
        torch.testing.assert_close(y, want_y)
        torch.testing.assert_close(yd, want_yd)


def test_gelu_tangent_is_the_exact_derivative_not_the_papers_typo():
    x = torch.linspace(-4, 4, 201)
    xd = torch.ones_like(x)
    y, yd = tangent.gelu_tangent(x, xd)
    torch.testing.assert_close(y, F.gelu(x))
    torch.testing.assert_close(yd, jvp(F.gelu, (x,), (xd,))[1])
    assert yd[100] == pytest.approx(0.5)  # x = 0: Φ(0), where the authors' code returns 0
    typo = F.gelu(x) / x + x * 0.5 * (1 + torch.erf(x / 2**0.5))  # the paper's eq. 13 as printed
    assert (typo - yd).abs().max() > 1.0


def test_attention_and_block_equal_torch_jvp():
    torch.manual_seed(1)
    vit = ViT(CFG)
    blk = vit.blocks[0]
    x, xd = torch.randn(2, CFG.tokens, CFG.dim), torch.randn(2, CFG.tokens, CFG.dim)
    tb = randomise(tangent.TangentBlock(blk))
    d = {}
    for name, mod in tb.named_modules():
        if isinstance(mod, (tangent.TangentLinear, tangent.TangentLayerNorm)):
            plain = name.replace("attn.", "")
            d.update({f"{plain}.{k}": v for k, v in deltas_of(mod).items()})
    params = dict(blk.named_parameters())
    assert d.keys() == params.keys()
    want = jvp(lambda ps, inp: functional_call(blk, ps, (inp,)), (params, x), (d, xd))
    got = tb(x, xd)
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1], want[1])
    # the attention on its own, through the block's first LayerNorm
    ta = tb.attn
    h, hd = tb.norm1(x, xd)
    att_params = {"qkv.weight": blk.qkv.weight, "qkv.bias": blk.qkv.bias, "proj.weight": blk.proj.weight,
                  "proj.bias": blk.proj.bias}
    att_d = {k: d[k] for k in att_params}
    want = jvp(lambda ps, inp: attention(inp, _lin(ps, "qkv"), _lin(ps, "proj"), CFG.heads), (att_params, h), (att_d, hd))
    torch.testing.assert_close(ta(h, hd)[1], want[1])


def _lin(ps, name):
    return lambda t: F.linear(t, ps[f"{name}.weight"], ps[f"{name}.bias"])


def test_whole_model_equals_jvp_and_is_linear_in_delta():
    torch.manual_seed(2)
    vit = ViT(CFG).eval()
    images = torch.randn(3, 1, CFG.image, CFG.image)
    tv = tangent.TangentViT(vit, tuned=1)
    f0, zero = tv(images)
    torch.testing.assert_close(f0, vit(images))
    assert torch.count_nonzero(zero) == 0  # Δ = 0: f_lin = f_w0
    d1 = {k: v.detach().clone() for k, v in randomise(tv, seed=1).deltas().items()}
    j1 = tv(images)[1]
    d2 = {k: v.detach().clone() for k, v in randomise(tv, seed=2).deltas().items()}
    j2 = tv(images)[1]
    with torch.no_grad():
        for k, p in tv.deltas().items():
            p.copy_(0.7 * d1[k] - 1.9 * d2[k])
    torch.testing.assert_close(tv(images)[1], 0.7 * j1 - 1.9 * j2)  # exactly linear in Δw
    # and equal to torch.func.jvp of the plain ViT along Δ (on the tuned block, norm and head)
    params = dict(vit.named_parameters())
    names = {"blocks.1.norm1": "blocks.0.norm1", "blocks.1.norm2": "blocks.0.norm2", "blocks.1.qkv": "blocks.0.attn.qkv",
             "blocks.1.proj": "blocks.0.attn.proj", "blocks.1.fc1": "blocks.0.fc1", "blocks.1.fc2": "blocks.0.fc2",
             "norm": "norm", "head": "head"}
    tan = {k: torch.zeros_like(v) for k, v in params.items()}
    for plain, tname in names.items():
        for what in ("weight", "bias"):
            tan[f"{plain}.{what}"] = d2[f"{tname}.delta.{what}"]
    with torch.no_grad():
        for k, p in tv.deltas().items():
            p.copy_(d2[k])
    want = jvp(lambda ps: functional_call(vit, ps, (images,)), (params,), (tan,))[1]
    torch.testing.assert_close(tv(images)[1], want)


def test_per_sample_gradients_through_the_tangent_model_equal_a_loop():
    from opacus import GradSampleModule

    torch.manual_seed(3)
    tv = randomise(tangent.TangentViT(ViT(CFG).eval(), tuned=1), seed=4)
    images, y = torch.randn(4, 1, CFG.image, CFG.image), torch.tensor([0, 1, 2, 3])
    feats = tv.features(images)

    class Head(torch.nn.Module):  # the trainable part, on cached frozen features
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            f0, j = self.m.from_features(x)
            return f0 + j

    loop = []
    for i in range(len(y)):
        tv.zero_grad()
        F.cross_entropy(Head(tv)(feats[i:i + 1]), y[i:i + 1]).backward()
        loop.append({k: p.grad.detach().clone() for k, p in tv.deltas().items()})
    gsm = GradSampleModule(Head(copy.deepcopy(tv)), loss_reduction="sum")
    F.cross_entropy(gsm(feats), y, reduction="sum").backward()
    per = {k.replace("_module.m.", ""): p.grad_sample for k, p in gsm.named_parameters() if p.requires_grad}
    assert per.keys() == loop[0].keys()
    bad = [k for k in per if not torch.allclose(per[k], torch.stack([g[k] for g in loop]))]
    assert not bad, bad


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="tuned must be between 0 and the depth 2"):
        tangent.TangentViT(ViT(CFG), tuned=3)
    with pytest.raises(ValueError, match=r"images must be \(batch, 1, 8, 8\)"):
        ViT(CFG)(torch.zeros(2, 3, 8, 8))
    with pytest.raises(ValueError, match="multiple of patch"):
        ViTConfig(image=10, patch=4)
