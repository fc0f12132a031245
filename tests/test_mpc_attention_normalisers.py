"""The attention normalisers (privtrans.mpc_attention.normalisers), written once for every back-end:
on plaintext torch they are the paper's formulas, and the module imports without torch or JAX
(SPU's environment has neither torch nor numpy 2). Each back-end's runs are compared with plaintext
in tests/test_mpc_attention_ops.py (JAX), _secure.py (CrypTen) and _spu.py (SPU)."""

import subprocess
import sys

import pytest
import torch

from privtrans.mpc_attention import normalisers as NORM
from privtrans.shared.activations import RELU_ATTENTION_EPS


def textbook(x, n, fits=NORM.PAPER_FITS):
    """Each normaliser as the papers write it, unpadded rows of ``n`` keys."""
    return {
        "softmax": torch.softmax(x, -1),
        "2relu": torch.relu(x) / (torch.relu(x).sum(-1, keepdim=True) + n * RELU_ATTENTION_EPS),
        "2quad": (x + 5) ** 2 / ((x + 5) ** 2).sum(-1, keepdim=True),
        "scaling": x / n,
        "softmax_freediv": torch.exp(x - x.amax(-1, keepdim=True)) / fits["softmax"](n),
        "2quad_freediv": (x + 5) ** 2 / fits["2quad"](n),
    }


def test_plaintext_formulas_are_the_papers():
    torch.manual_seed(0)
    x = 2 * torch.randn(3, 5, 12, dtype=torch.float64)
    want = textbook(x, 12)
    assert set(want) == set(NORM.ATTENTIONS)
    for kind, w in want.items():
        const = NORM.PAPER_FITS.get(NORM.FREEDIV.get(kind))
        unpadded = NORM.normalise(kind, x, None, const)
        torch.testing.assert_close(unpadded, w, rtol=1e-6, atol=1e-9, msg=kind)
        # a mask of ones is no mask (f(n) is then evaluated in float32, as in training)
        torch.testing.assert_close(NORM.normalise(kind, x, torch.ones(1, 1, 12), const), w, rtol=1e-6, atol=1e-7,
                                   msg=kind)
    with pytest.raises(ValueError, match="allowed values are softmax"):
        NORM.normalise("softmax_free", x)
    with pytest.raises(ValueError, match="needs the public constants"):
        NORM.normalise("2quad_freediv", x)


def test_denominators_are_the_row_sums_f_is_fitted_to():
    torch.manual_seed(3)
    x = 2 * torch.randn(2, 3, 7, 9)
    mask = torch.ones(2, 1, 1, 9)
    mask[1, ..., 4:] = 0
    keys = x.masked_fill(mask == 0, float("-inf"))
    want_soft = torch.exp(keys - keys.amax(-1, keepdim=True)).sum(-1)
    want_quad = ((x + 5) ** 2 * mask).sum(-1)
    torch.testing.assert_close(NORM.denominator("softmax", x, mask), want_soft)
    torch.testing.assert_close(NORM.denominator("2quad", x, mask), want_quad)
    assert NORM.denominator("2quad", x).shape == (2, 3, 7)
    # the parent's weights are its numerator over this denominator
    w = NORM.normalise("2quad", x, mask)
    torch.testing.assert_close(w, (x + 5) ** 2 * mask / want_quad[..., None])
    with pytest.raises(ValueError, match="fitted for"):
        NORM.denominator("2relu", x)


def test_the_papers_fits_are_its_constants():
    assert NORM.PAPER_FITS["softmax"](1) == pytest.approx(0.9924, abs=1e-4)
    assert NORM.PAPER_FITS["2quad"](128) == pytest.approx(84.0737 * 128 ** 0.71747, rel=1e-4)
    with pytest.raises(ValueError, match="positive number of keys"):
        NORM.PAPER_FITS["softmax"](0)


def test_what_spu_imports_needs_neither_torch_nor_jax():
    """SPU's environment (numpy < 2) has no torch: the formulas, the encoder and the ops import
    without it, and without JAX until its ops are made."""
    code = ("import sys, builtins; real = builtins.__import__\n"
            "def guard(name, *a, **k):\n"
            "    if name.split('.')[0] in ('torch', 'jax', 'crypten'): raise ImportError(name)\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = guard\n"
            "import privtrans.mpc_attention.encoder_ops, privtrans.mpc_attention.ops\n"
            "from privtrans.mpc_attention import normalisers; print(normalisers.RELU_ATTENTION_EPS)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == RELU_ATTENTION_EPS
