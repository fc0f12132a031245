"""The one activation module: the formulas are GeLU (tanh form), ReLU and MPCFormer's Quad, the
same expression runs on torch tensors and CrypTen shares, and every model uses it."""

import math

import pytest
import torch

from privtrans.shared import activations as ACT


def test_formulas_are_the_named_functions():
    x = torch.linspace(-4, 4, 81, dtype=torch.float64)
    torch.testing.assert_close(ACT.activation("gelu", x), torch.nn.functional.gelu(x, approximate="tanh"))
    torch.testing.assert_close(ACT.activation("relu", x), torch.relu(x))
    torch.testing.assert_close(ACT.activation("quad", x), 0.125 * x**2 + 0.25 * x + 0.5)
    assert ACT.GELU_K == 0.044715 and math.isclose(float(ACT.activation("gelu", torch.tensor(0.0))), 0.0)
    with pytest.raises(ValueError, match="unknown activation 'swish': allowed values are gelu, relu, quad"):
        ACT.activation("swish", x)


def test_every_model_uses_the_one_module():
    """MERGE's plaintext GPT, the MPC-attention encoder and SPU's encoder call it (no second copy)."""
    from privtrans.mpc_attention import attention, encoder_ops
    from privtrans.shared.models import plain_gpt

    x = torch.randn(5, 7)
    for kind in ACT.KINDS:
        want = ACT.activation(kind, x)
        assert torch.equal(plain_gpt.activation(kind, x), want)
        assert torch.equal(attention.activation(kind, x), want)
    assert encoder_ops.activation is ACT.activation
