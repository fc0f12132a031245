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
