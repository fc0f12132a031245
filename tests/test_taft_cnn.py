"""The linearised CNN of Table 7 (privtrans.taft.cnn): conv, eval-mode BatchNorm and ReLU tangents
and the whole linearised tail equal torch.func.jvp; the model is exactly linear in Δw, so averaged
shard Δs give the mean of the shard models' outputs."""

import pytest
import torch
from torch.func import functional_call, jvp

from privtrans.taft import cnn
from privtrans.taft import compose


pytestmark = pytest.mark.usefixtures("float64")  # tests/conftest.py


def trained_looking(widths=(3, 4, 5), classes=6, seed=0):
    """A CNN whose BatchNorm statistics and affine parameters are not the defaults (1, 0), in eval mode."""
    torch.manual_seed(seed)
    net = cnn.CNN(widths, classes)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.normal_(1, 0.3)
                m.bias.normal_(0, 0.3)
    return net.eval()


def random_deltas(lin, scale=0.1, seed=1):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in lin.parameters():
            p.copy_(scale * torch.randn(p.shape, generator=g))
    return lin


def as_plain_names(lin: cnn.LinearisedCNN, net: cnn.CNN) -> dict:
    """The Δ of every linearised parameter, under the plain CNN's parameter names."""
    out, it = {}, iter(lin.layers)
    for i, m in enumerate(net.tail):
        if isinstance(m, torch.nn.ReLU):
            continue
        t = next(it)
        if isinstance(t, cnn.TangentConv2d):
            out[f"tail.{i}.weight"], out[f"tail.{i}.bias"] = t.delta.weight, t.delta.bias
        else:
            out[f"tail.{i}.weight"], out[f"tail.{i}.bias"] = t.delta_weight, t.delta_bias
    out["head.weight"], out["head.bias"] = lin.head.delta.weight, lin.head.delta.bias
    return out


def test_each_layer_equals_torch_jvp():
    net = trained_looking()
    for base, tang, cin in ((net.tail[0], cnn.TangentConv2d, 4), (net.tail[1], cnn.TangentBatchNorm2d, 5)):
        x, xd = torch.randn(2, cin, 7, 7), torch.randn(2, cin, 7, 7)
        t = random_deltas(tang(base))
        d = {"weight": t.delta.weight if hasattr(t, "delta") else t.delta_weight,
             "bias": t.delta.bias if hasattr(t, "delta") else t.delta_bias}
        params = dict(base.named_parameters())
        want = jvp(lambda ps, inp: functional_call(base, ps, (inp,)), (params, x), (d, xd))
        got = t(x, xd)
        torch.testing.assert_close(got[0], want[0])
        torch.testing.assert_close(got[1], want[1])
    y, yd = cnn.relu_tangent(x, xd)
    want = jvp(torch.relu, (x,), (xd,))
    torch.testing.assert_close(y, want[0])
    torch.testing.assert_close(yd, want[1])


def tail_and_head(net, h):
    """The CNN from the stem's features, as a function of its tail's and head's parameters."""
    def f(ps):
        z = functional_call(net.tail, {k[len("tail."):]: v for k, v in ps.items() if k.startswith("tail.")}, (h,))
        return functional_call(net.head, {k[len("head."):]: v for k, v in ps.items() if k.startswith("head.")},
                               (z.mean((2, 3)),))
    return f


def test_the_linearised_tail_equals_torch_jvp_of_the_cnn():
    net = trained_looking()
    h = torch.randn(5, 4, 7, 7)  # stride 2 in the first tail conv: 7 → 4
    lin = random_deltas(cnn.LinearisedCNN(net, output="jvp"))
    params = {k: v for k, v in net.named_parameters() if not k.startswith("stem.")}
    deltas = as_plain_names(lin, net)
    assert set(deltas) == set(params)  # every linearised parameter has its Δ
    f0, want = jvp(tail_and_head(net, h), (params,), (deltas,))
    torch.testing.assert_close(net.from_features(h), f0)
    torch.testing.assert_close(lin(h), want)
    lin.output = "sum"
    torch.testing.assert_close(lin(h), f0 + want)


def test_exactly_linear_in_delta_so_averaged_deltas_give_the_mean_output():
    net = trained_looking()
    h = torch.randn(4, 4, 7, 7)
    lins = [random_deltas(cnn.LinearisedCNN(net), seed=s) for s in (1, 2, 3)]
    states = [{k: v.detach().clone() for k, v in m.named_parameters()} for m in lins]
    mean_model = cnn.LinearisedCNN(net)
    mean_model.load_state_dict(compose.average(states), strict=False)
    want = torch.stack([m(h) for m in lins]).mean(0)
    torch.testing.assert_close(mean_model(h), want)


def test_a_layer_without_a_tangent_rule_is_refused():
    net = trained_looking()
    net.tail.append(torch.nn.Dropout(0.1))
    with pytest.raises(TypeError, match="no tangent rule for Dropout"):
        cnn.LinearisedCNN(net)


def test_the_spec_names_what_it_does_not_know():
    with pytest.raises(ValueError, match="unknown CNN settings"):
        cnn.CNNSpec.from_cfg({"widths": [8, 8, 8], "depth": 3})
