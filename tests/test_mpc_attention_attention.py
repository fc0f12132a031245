"""privtrans.mpc_attention.attention in plaintext: each normaliser against an independent textbook
expression (torch.softmax, MPCFormer's 2Quad), so the public rescalings inside ``attention.normalise``
(there for CrypTen's ranges) are shown to be exact in the ratio; masked keys, CrypTen's reciprocal
range, the activations and 2ReLU's stabiliser."""

import pytest
import torch

from privtrans.mpc_attention import attention, encoder
from privtrans.mpc_attention.ops import TensorOps


TOL = 1e-5


@pytest.fixture
def scores_mask():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 2, 7, 9, generator=g) * 3.0
    lengths = torch.tensor([9, 4, 1])
    mask = (torch.arange(9)[None] < lengths[:, None]).float()[:, None, None, :]
    return x, mask, lengths


def test_softmax_equals_torch_with_masked_keys(scores_mask):
    x, mask, _ = scores_mask
    ref = torch.softmax(x.masked_fill(mask == 0, float("-inf")), -1)
    assert (attention.normalise("softmax", x, mask) - ref).abs().max() < TOL


def test_2quad_equals_mpcformer(scores_mask):
    x, mask, _ = scores_mask
    num = (x + 5) ** 2 * mask
    assert (attention.normalise("2quad", x, mask) - num / num.sum(-1, keepdim=True)).abs().max() < TOL


def test_2relu_and_scaling(scores_mask):
    x, mask, lengths = scores_mask
    n = lengths.float()[:, None, None, None]
    r = x.relu() * mask
    ref = r / (r.sum(-1, keepdim=True) + attention.RELU_ATTENTION_EPS * n)
    assert (attention.normalise("2relu", x, mask) - ref).abs().max() < TOL
    assert (attention.normalise("scaling", x, mask) - x * mask / n).abs().max() < TOL


@pytest.mark.parametrize("kind", ["softmax_freediv", "2quad_freediv"])
def test_freediv_is_parent_numerator_over_public_f(scores_mask, kind):
    x, mask, lengths = scores_mask
    a, b = attention.PAPER_FITS[attention.FREEDIV[kind]]
    f = a * lengths.float()[:, None, None, None] ** b
    if kind == "softmax_freediv":
        num = torch.exp(x - x.masked_fill(mask == 0, float("-inf")).amax(-1, keepdim=True)) * mask
    else:
        num = (x + 5) ** 2 * mask
    got = attention.normalise(kind, x, mask, (a, b))
    assert (got - num / f).abs().max() < TOL * max(1.0, float(got.abs().max()))
    # per-head constants broadcast over heads
    got_h = attention.normalise(kind, x, mask, ([a, 2 * a], [b, b]))
    assert (got_h[:, 1] - got[:, 1] / 2).abs().max() < TOL


def test_masked_keys_get_exactly_zero(scores_mask):
    x, mask, _ = scores_mask
    for kind in attention.ATTENTIONS:
        c = attention.PAPER_FITS.get(attention.FREEDIV.get(kind))
        w = attention.normalise(kind, x, mask, c)
        assert (w * (1 - mask)).abs().max() == 0, kind


def test_no_large_negative_mask_reaches_exp():
    """Masked keys are shifted by MASK_VALUE (-30), never -1e4: CrypTen's exp breaks below ~-511."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 2, 128, 128, generator=g) * 8.0  # wider than a trained model's scores
    mask = torch.zeros(2, 1, 1, 128)
    mask[0, ..., :128] = 1
    mask[1, ..., :3] = 1
    z = attention.shifted_scores(x, mask)
    assert float(z.min()) > attention.EXP_FLOOR
    assert float(z.max()) == 0.0


def test_reciprocal_inputs_stay_in_cryptens_range():
    """Every value handed to the reciprocal lies in (0, RECIP_MAX] up to n = 128 (2Quad's raw sum
    would be ~25 n = 3 200 there): seen through the back-end's operations, as CrypTen gets them."""
    seen = []

    class Recording(TensorOps):
        @staticmethod
        def reciprocal_pos(s):
            seen.append(s)
            return TensorOps.reciprocal_pos(s)

    g = torch.Generator().manual_seed(2)
    for n in (1, 16, 128):
        x = torch.randn(1, 2, n, n, generator=g) * 4.0
        mask = torch.ones(1, 1, 1, n)
        for kind in ("softmax", "2relu", "2quad"):
            attention.normalise(kind, x, mask, ops=Recording())
    assert len(seen) == 9
    for s in seen:
        assert float(s.min()) > 0 and float(s.max()) <= attention.RECIP_MAX


def test_bad_names_are_refused():
    with pytest.raises(ValueError, match="allowed values are softmax"):
        attention.normalise("sigmoid", torch.zeros(1, 1), torch.ones(1, 1))
    with pytest.raises(ValueError, match="allowed values are gelu"):
        encoder.EncoderConfig(activation="tanh")
    with pytest.raises(ValueError, match="needs const"):
        encoder.EncoderConfig(attention="2quad_freediv")


def test_activations():
    x = torch.linspace(-4, 4, 101)
    assert (attention.activation("gelu", x) - torch.nn.functional.gelu(x, approximate="tanh")).abs().max() < 1e-6
    assert (attention.activation("quad", x) - (0.125 * x**2 + 0.25 * x + 0.5)).abs().max() < 1e-6
    assert torch.equal(attention.activation("relu", x), x.relu())


def test_relu_eps_change_against_the_exact_2relu():
    """2ReLU's + eps n on the row sum moves each weight by n eps / (sum relu + n eps), relative."""
    x = torch.tensor([[[[1.0, 1.0, -1.0, 0.0], [-1.0, -2.0, -0.5, -3.0], [3.0, 1.0, 0.0, 0.0]]]])
    mask = torch.tensor([[[[1.0, 1.0, 1.0, 0.0]]]])  # 3 keys
    e = attention.relu_eps_entries(x, mask)
    eps3 = 3 * attention.RELU_ATTENTION_EPS
    # row 0: exact (1/2, 1/2), row 1: no positive score, row 2: exact (3/4, 1/4)
    torch.testing.assert_close(e["rel"], torch.tensor([eps3 / (2 + eps3)] * 2 + [eps3 / (4 + eps3)] * 2))
    torch.testing.assert_close(e["abs"], torch.tensor([0.5 * eps3 / (2 + eps3)] * 2
                                                      + [0.75 * eps3 / (4 + eps3), 0.25 * eps3 / (4 + eps3)]))
    assert (e["rows"], e["rows_without_positive"]) == (3, 1) and set(e["n"].tolist()) == {3.0}
    s = attention.relu_eps_change([e, attention.relu_eps_entries(x[..., :2], torch.ones(1, 1, 1, 2))])
    assert s["max_rel"] == pytest.approx(eps3 / (2 + eps3), rel=1e-5) and s["n_max"] == 3
    assert s["at_n_max"]["entries"] == 4 and s["rows"] == 6 and s["eps"] == attention.RELU_ATTENTION_EPS
    assert s["at_n_max"]["median_rel"] == pytest.approx((eps3 / (2 + eps3) + eps3 / (4 + eps3)) / 2, rel=1e-5)
    # the null input: without the stabiliser nothing would move; with it the change is never 0
    assert s["max_abs"] > 0 and attention.relu_eps_change([attention.relu_eps_entries(-x.abs() - 1, mask)])["entries"] == 0
