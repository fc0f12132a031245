"""Plaintext properties of the attention variants, the encoder and the f(n) fit (no CrypTen).

Each variant is compared with an independent textbook expression (torch.softmax, MPCFormer's
2Quad), so the public rescalings inside ``attention.normalise`` (there for CrypTen's ranges) are
shown to be exact in the ratio.
"""

import numpy as np
import pytest
import torch

from privtrans.mpc_attention import attention as A
from privtrans.mpc_attention import encoder as E
from privtrans.mpc_attention import fit as F
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
    assert (A.normalise("softmax", x, mask) - ref).abs().max() < TOL


def test_2quad_equals_mpcformer(scores_mask):
    x, mask, _ = scores_mask
    num = (x + 5) ** 2 * mask
    assert (A.normalise("2quad", x, mask) - num / num.sum(-1, keepdim=True)).abs().max() < TOL


def test_2relu_and_scaling(scores_mask):
    x, mask, lengths = scores_mask
    n = lengths.float()[:, None, None, None]
    r = x.relu() * mask
    ref = r / (r.sum(-1, keepdim=True) + A.RELU_ATTENTION_EPS * n)
    assert (A.normalise("2relu", x, mask) - ref).abs().max() < TOL
    assert (A.normalise("scaling", x, mask) - x * mask / n).abs().max() < TOL


@pytest.mark.parametrize("kind", ["softmax_freediv", "2quad_freediv"])
def test_freediv_is_parent_numerator_over_public_f(scores_mask, kind):
    x, mask, lengths = scores_mask
    a, b = A.PAPER_FITS[A.FREEDIV[kind]]
    f = a * lengths.float()[:, None, None, None] ** b
    if kind == "softmax_freediv":
        num = torch.exp(x - x.masked_fill(mask == 0, float("-inf")).amax(-1, keepdim=True)) * mask
    else:
        num = (x + 5) ** 2 * mask
    got = A.normalise(kind, x, mask, (a, b))
    assert (got - num / f).abs().max() < TOL * max(1.0, float(got.abs().max()))
    # per-head constants broadcast over heads
    got_h = A.normalise(kind, x, mask, ([a, 2 * a], [b, b]))
    assert (got_h[:, 1] - got[:, 1] / 2).abs().max() < TOL


def test_masked_keys_get_exactly_zero(scores_mask):
    x, mask, _ = scores_mask
    for kind in A.ATTENTIONS:
        c = A.PAPER_FITS.get(A.FREEDIV.get(kind))
        w = A.normalise(kind, x, mask, c)
        assert (w * (1 - mask)).abs().max() == 0, kind


def test_no_large_negative_mask_reaches_exp():
    """Masked keys are shifted by MASK_SHIFT (-30), never -1e4: CrypTen's exp breaks below ~-511."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 2, 128, 128, generator=g) * 8.0  # wider than a trained model's scores
    mask = torch.zeros(2, 1, 1, 128)
    mask[0, ..., :128] = 1
    mask[1, ..., :3] = 1
    z = A.shifted_scores(x, mask)
    assert float(z.min()) > A.EXP_FLOOR
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
            A.normalise(kind, x, mask, ops=Recording())
    assert len(seen) == 9
    for s in seen:
        assert float(s.min()) > 0 and float(s.max()) <= A.RECIP_MAX


def test_bad_names_are_refused():
    with pytest.raises(ValueError, match="allowed values are softmax"):
        A.normalise("sigmoid", torch.zeros(1, 1), torch.ones(1, 1))
    with pytest.raises(ValueError, match="allowed values are gelu"):
        E.EncoderConfig(activation="tanh")
    with pytest.raises(ValueError, match="needs const"):
        E.EncoderConfig(attention="2quad_freediv")


def test_activations():
    x = torch.linspace(-4, 4, 101)
    assert (A.activation("gelu", x) - torch.nn.functional.gelu(x, approximate="tanh")).abs().max() < 1e-6
    assert (A.activation("quad", x) - (0.125 * x**2 + 0.25 * x + 0.5)).abs().max() < 1e-6
    assert torch.equal(A.activation("relu", x), x.relu())


def test_encoder_forward_matches_torch_layers():
    """The dict-of-weights forward equals the same network built from torch.nn modules."""
    torch.manual_seed(0)
    cfg = E.EncoderConfig(vocab_size=30, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=12)
    m = E.TinyEncoder(cfg)
    for p in m.parameters():  # non-trivial weights
        torch.nn.init.normal_(p, std=0.3)
    ids = torch.randint(0, 30, (2, 12))
    mask = torch.ones(2, 12)
    mask[1, 7:] = 0
    out = m(ids, mask)
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    h = m.ln0(m.embed(ids))
    for lay in m.layers:
        with torch.no_grad():
            mha.in_proj_weight.copy_(torch.cat([lay["q"].weight, lay["k"].weight, lay["v"].weight]))
            mha.in_proj_bias.copy_(torch.cat([lay["q"].bias, lay["k"].bias, lay["v"].bias]))
            mha.out_proj.weight.copy_(lay["o"].weight)
            mha.out_proj.bias.copy_(lay["o"].bias)
        a, _ = mha(h, h, h, key_padding_mask=mask == 0)
        h = lay["ln1"](h + a)
        h = lay["ln2"](h + lay["f2"](torch.nn.functional.gelu(lay["f1"](h), approximate="tanh")))
    pooled = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
    assert (out["logits"] - m.head(pooled)).abs().max() < 1e-4


def test_scaling_attention_is_the_papers_eq_10():
    """ScaleAttn(Q, K, V) = (1/n) QK^T V (eq. 10): no 1/sqrt(d), unlike every other normaliser;
    the scores the encoder returns (what stage 1 distils) stay QK^T/sqrt(d) for every attention."""
    torch.manual_seed(0)
    cfg = E.EncoderConfig(vocab_size=30, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=12)
    teacher = E.TinyEncoder(cfg)
    for p in teacher.parameters():
        torch.nn.init.normal_(p, std=0.3)
    ids = torch.randint(0, 30, (2, 12))
    mask = torch.ones(2, 12)
    mask[1, 7:] = 0
    n = mask.sum(-1)[:, None, None, None]
    lay = teacher.layers[0]
    h = teacher.ln0(teacher.embed(ids))
    split = lambda t: t.view(2, 12, 2, 8).permute(0, 2, 1, 3)  # noqa: E731
    qk = split(lay["q"](h)) @ split(lay["k"](h)).transpose(-1, -2)
    keys = mask[:, None, None, :]
    with torch.no_grad():
        for att in A.ATTENTIONS:
            m = teacher.converted(att, "gelu", A.PAPER_FITS.get(A.FREEDIV.get(att)))
            out = m(ids, mask)
            assert (out["scores"][0] - qk / 8 ** 0.5).abs().max() < 1e-5, att
            if att == "scaling":
                assert (out["probs"][0] - qk * keys / n).abs().max() < 1e-5
    assert A.UNSCALED == ("scaling",)


def test_relu_eps_change_against_the_exact_2relu():
    """2ReLU's + eps n on the row sum moves each weight by n eps / (sum relu + n eps), relative."""
    x = torch.tensor([[[[1.0, 1.0, -1.0, 0.0], [-1.0, -2.0, -0.5, -3.0], [3.0, 1.0, 0.0, 0.0]]]])
    mask = torch.tensor([[[[1.0, 1.0, 1.0, 0.0]]]])  # 3 keys
    e = A.relu_eps_entries(x, mask)
    eps3 = 3 * A.RELU_ATTENTION_EPS
    # row 0: exact (1/2, 1/2), row 1: no positive score, row 2: exact (3/4, 1/4)
    torch.testing.assert_close(e["rel"], torch.tensor([eps3 / (2 + eps3)] * 2 + [eps3 / (4 + eps3)] * 2))
    torch.testing.assert_close(e["abs"], torch.tensor([0.5 * eps3 / (2 + eps3)] * 2
                                                      + [0.75 * eps3 / (4 + eps3), 0.25 * eps3 / (4 + eps3)]))
    assert (e["rows"], e["rows_without_positive"]) == (3, 1) and set(e["n"].tolist()) == {3.0}
    s = A.relu_eps_change([e, A.relu_eps_entries(x[..., :2], torch.ones(1, 1, 1, 2))])
    assert s["max_rel"] == pytest.approx(eps3 / (2 + eps3), rel=1e-5) and s["n_max"] == 3
    assert s["at_n_max"]["entries"] == 4 and s["rows"] == 6 and s["eps"] == A.RELU_ATTENTION_EPS
    assert s["at_n_max"]["median_rel"] == pytest.approx((eps3 / (2 + eps3) + eps3 / (4 + eps3)) / 2, rel=1e-5)
    # the null input: without the stabiliser nothing would move; with it the change is never 0
    assert s["max_abs"] > 0 and A.relu_eps_change([A.relu_eps_entries(-x.abs() - 1, mask)])["entries"] == 0


def test_relu_eps_change_of_a_model_reads_its_unpadded_rows():
    torch.manual_seed(0)
    m = E.TinyEncoder(E.EncoderConfig(vocab_size=30, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=12))
    for p in m.parameters():
        torch.nn.init.normal_(p, std=0.3)
    ids = torch.randint(0, 30, (2, 12))
    mask = torch.ones(2, 12)
    mask[1, 5:] = 0
    got = F.relu_eps_change(m, [(ids, mask)])
    assert got["rows"] == 2 * 2 * (12 + 5) and got["n_max"] == 12  # layers x heads x real query rows
    with torch.no_grad():
        want = A.relu_eps_change([A.relu_eps_entries(s, mask[:, None, None, :] * mask[:, None, :, None])
                                  for s in m(ids, mask)["scores"]])
    assert got == want and 0 < got["median_rel"] <= got["max_rel"] < 1


def test_fit_recovers_a_power_law_and_untrained_model_constants():
    ns = np.arange(2, 60)
    assert np.allclose(F.power_law_fit(ns, 3.0 * ns**0.4), (3.0, 0.4))
    # an untrained model has scores ~ 0: softmax D = n, 2Quad D = 25 n
    torch.manual_seed(0)
    m = E.TinyEncoder(E.EncoderConfig(vocab_size=50))
    ids = torch.randint(0, 50, (16, 20))
    mask = (torch.arange(20)[None] < torch.randint(3, 21, (16, 1))).float()
    a, b = F.fit_all(F.collect(m, [(ids, mask)], "softmax"))
    assert abs(a - 1) < 0.05 and abs(b - 1) < 0.01
    a, b = F.fit_all(F.collect(m, [(ids, mask)], "2quad"))
    assert abs(a / 25 - 1) < 0.05 and abs(b - 1) < 0.01
    a2, b2 = F.fit_per_head(F.collect(m, [(ids, mask)], "2quad"))
    assert np.array(a2).shape == (2, 2)
    student = m.converted("2quad_freediv", "quad", (a2, b2))
    assert torch.isfinite(student(ids, mask)["logits"]).all()
