"""privtrans.dpformer.moments: the moment propagation Re-Attention rests on (DPFormer §4, Eq. 7, 8; Table
3) against Monte Carlo, through ReLU, GeLU, linear layers, LayerNorm and attention values."""

import math

import pytest
import torch

from privtrans.dpformer import moments


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------ activation moments (Table 3)
@pytest.mark.parametrize("mu,var", [(0.0, 1.0), (0.0, 1e-4), (0.7, 0.3), (-1.2, 2.0), (3.0, 0.5)])
def test_relu_moments_match_monte_carlo(mu, var):
    x = mu + math.sqrt(var) * torch.randn(2_000_000, generator=gen(1), dtype=torch.float64)
    m, v = moments.relu_moments(mu, var)
    z = x.clamp_min(0)
    assert float(m) == pytest.approx(float(z.mean()), rel=0.01, abs=1e-3 * math.sqrt(var))
    assert float(v) == pytest.approx(float(z.var()), rel=0.02)


def test_relu_standard_normal_value_and_paper_eq8_erratum():
    assert float(moments.relu_moments(0.0, 1.0)[1]) == pytest.approx(0.5 - 1 / (2 * math.pi), abs=1e-12)
    assert float(moments.relu_moments(0.0, 1.0)[1]) == pytest.approx(0.3408, abs=1e-4)  # Table 3
    assert float(moments.relu_var_paper_eq8(0.0, 1.0)) == pytest.approx(0.5)  # printed Eq. 8


def test_relu_moments_stable_when_noise_is_tiny():
    m, v = moments.relu_moments(torch.tensor([2.0, -2.0]), torch.tensor([1e-10, 1e-10]))
    assert torch.allclose(m, torch.tensor([2.0, 0.0]))
    assert float(v[0]) == pytest.approx(1e-10, rel=1e-6) and float(v[1]) < 1e-20


@pytest.mark.parametrize("mu,var", [(0.0, 1.0), (0.0, 1e-4), (0.5, 0.2), (-1.0, 1.5)])
def test_gelu_moments_match_monte_carlo(mu, var):
    x = mu + math.sqrt(var) * torch.randn(2_000_000, generator=gen(2), dtype=torch.float64)
    m, v = moments.gelu_moments(mu, var)
    z = torch.nn.functional.gelu(x)
    assert float(v) == pytest.approx(float(z.var()), rel=0.02)
    assert float(m) == pytest.approx(float(z.mean()), rel=0.01, abs=2e-3 * math.sqrt(var))


# ------------------------------------------------------------------ linear / layernorm (Eq. 7)
def test_linear_variance_matches_monte_carlo():
    d_in, d_out, L, n = 12, 7, 5, 40_000
    x = torch.randn(L, d_in, generator=gen(3), dtype=torch.float64)
    W = 0.4 * torch.randn(d_out, d_in, generator=gen(4), dtype=torch.float64)
    v = torch.tensor([0.0, 0.01, 0.1, 0.5, 2.0], dtype=torch.float64)
    w_var = 0.03
    X = x + v.sqrt()[:, None] * torch.randn(n, L, d_in, generator=gen(5), dtype=torch.float64)
    Wn = W + math.sqrt(w_var) * torch.randn(n, d_out, d_in, generator=gen(6), dtype=torch.float64)
    Y = torch.einsum("nli,noi->nlo", X, Wn)
    emp = Y.var(0)                                        # (L, d_out)
    per = moments.linear_var_per_coord(x, v, W, w_var)
    assert torch.allclose(per, emp, rtol=0.05)
    assert torch.allclose(moments.linear_var(x, v, W, w_var), emp.mean(-1), rtol=0.03)


def test_linear_then_relu_matches_monte_carlo():
    d, n = 16, 40_000
    x = torch.randn(3, d, generator=gen(7), dtype=torch.float64)
    W = 0.3 * torch.randn(d, d, generator=gen(8), dtype=torch.float64)
    v = torch.tensor([0.01, 0.1, 1.0], dtype=torch.float64)
    X = x + v.sqrt()[:, None] * torch.randn(n, 3, d, generator=gen(9), dtype=torch.float64)
    pre_mc = X @ W.T
    emp = pre_mc.clamp_min(0).var(0).mean(-1)
    pre_var = moments.linear_var_per_coord(x, v, W, 0.0)   # (3, d): what the tracker feeds ReLU
    got = moments.activation_var("relu", x @ W.T, pre_var)
    assert torch.allclose(got, emp, rtol=0.03)
    # the paper's printed Eq. 8 in place of the correct moments misses by far more
    bad = moments.relu_var_paper_eq8(x @ W.T, pre_var).mean(-1)
    assert not torch.allclose(bad, emp, rtol=0.1)


def test_layernorm_variance_matches_monte_carlo():
    d, n = 32, 40_000
    x = 1.5 * torch.randn(4, d, generator=gen(10), dtype=torch.float64) + 0.3
    gamma = 1 + 0.2 * torch.randn(d, generator=gen(11), dtype=torch.float64)
    v = torch.tensor([1e-3, 5e-2, 1.0, 50.0], dtype=torch.float64)   # small noise ... noise-dominated
    X = x + v.sqrt()[:, None] * torch.randn(n, 4, d, generator=gen(12), dtype=torch.float64)
    ln = torch.nn.functional.layer_norm(X, (d,), weight=gamma)
    emp = ln.var(0).mean(-1)
    assert torch.allclose(moments.layernorm_var(x, v, gamma), emp, rtol=0.05)


def test_attention_value_variance_matches_monte_carlo():
    S = torch.softmax(torch.randn(2, 4, 4, generator=gen(13), dtype=torch.float64), -1)
    vV = torch.tensor([[0.1, 1.0, 0.0, 3.0], [0.5, 0.5, 0.5, 0.5]], dtype=torch.float64)
    V = torch.randn(2, 4, 8, generator=gen(14), dtype=torch.float64)
    noisy = V + vV.sqrt()[..., None] * torch.randn(50_000, 2, 4, 8, generator=gen(15), dtype=torch.float64)
    emp = (S @ noisy).var(0).mean(-1)
    assert torch.allclose(moments.attention_value_var(S, vV), emp, rtol=0.05)
