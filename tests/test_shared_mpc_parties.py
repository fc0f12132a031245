"""Every private forward equals its plaintext twin; the MM merge is exact exactly where it should be.

Tolerance: CrypTen's fixed point has 16 fractional bits; its tanh (GeLU), inv_sqrt (LayerNorm,
10 Newton steps), exp (softmax) and reciprocal approximations add errors of ~1e-3 relative per
op. Over two layers the hidden states (LayerNorm scale, |h| ~ 3) stay within ``HID_TOL`` and the
logits (|logit| ~ 10) within ``LOGIT_REL`` of their largest magnitude; a wrong layer gives O(1).
"""

import pytest
import torch

from privtrans.shared.mpc import parties, runner
from privtrans.shared.models.plain_gpt import (GPTConfig, Block, TinyGPT, VARIANTS, merge_block,
                                     unmerged_reference, variant_config)

HID_TOL = 2e-2
LOGIT_REL = 1e-2
SIZES = dict(vocab_size=60, d_model=16, n_heads=2, n_layers=2, max_len=16)
IDS = [3, 7, 1, 9, 4, 2]


@pytest.fixture(scope="module")
def private_forwards():
    return runner.run(parties.private_forward, list(VARIANTS), SIZES, IDS, 0, timeout=240)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_private_forward_matches_plaintext(private_forwards, variant):
    model, _ = parties.build_model(variant, SIZES, 0)
    with torch.no_grad():
        logits, hidden = model(torch.tensor([IDS]))
    for rank in (0, 1):
        lg, h = private_forwards[rank][variant]
        assert (h - hidden[0]).abs().max() < HID_TOL
        assert (lg - logits[0]).abs().max() < LOGIT_REL * logits.abs().max()


ED_SIZES = dict(SIZES, n_layers=1, n_enc_layers=2, max_src=8)
SRC = [5, 8, 2, 11]


@pytest.fixture(scope="module")
def encdec_forwards():
    return runner.run(parties.private_forward, list(VARIANTS), ED_SIZES, IDS, 0, SRC, timeout=240)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_encdec_private_forward_matches_plaintext(encdec_forwards, variant):
    """Encoder (bidirectional), decoder self- and cross-attention: the T5-style twin under MPC."""
    model, _ = parties.build_model(variant, ED_SIZES, 0)
    with torch.no_grad():
        logits, hidden = model(torch.tensor([SRC]), input_ids=torch.tensor([IDS]))
    lg, h = encdec_forwards[0][variant]
    assert (h - hidden[0]).abs().max() < HID_TOL
    assert (lg - logits[0]).abs().max() < LOGIT_REL * logits.abs().max()


def test_encdec_source_matters_and_bad_input():
    from privtrans.shared.models.plain_encdec import EncDecConfig

    model, _ = parties.build_model("crypten", ED_SIZES, 0)
    with torch.no_grad():
        a = model(torch.tensor([SRC]), input_ids=torch.tensor([IDS]))[1]
        b = model(torch.tensor([SRC[::-1]]), input_ids=torch.tensor([IDS]))[1]
    assert (a - b).abs().max() > 0.1
    with pytest.raises(ValueError, match="max_src"):
        model.encode(torch.arange(9))
    with pytest.raises(ValueError, match="encoder sizes"):
        EncDecConfig(n_enc_layers=0)


def test_plaintext_variants_differ():
    """The switches really change the function (otherwise the test above proves little)."""
    outs = {}
    for v in VARIANTS:
        model, _ = parties.build_model(v, SIZES, 0)
        with torch.no_grad():
            outs[v] = model(torch.tensor([IDS]))[1]
    assert (outs["crypten"] - outs["mpcformer_sf2relu"]).abs().max() > 0.1
    assert (outs["only_mm"] - outs["merge"]).abs().max() > 0.1


def _constant_block(shared: bool):
    torch.manual_seed(1)
    cfg = GPTConfig(vocab_size=20, d_model=16, n_heads=2, max_len=12, attention="constant", attn_norm="affine")
    b = Block(cfg)
    with torch.no_grad():
        b.c_logits.normal_()
        if shared:
            b.c_logits[1] = b.c_logits[0]
        for t in (b.qkv.weight, b.proj.weight):
            t.normal_(0, 0.3)
        for t in (b.qkv.bias, b.proj.bias, b.norm1.weight, b.norm1.bias):
            t.normal_()
    return b


def test_merge_is_exact_with_shared_c_and_residual_through_c():
    b = _constant_block(shared=True)
    x = torch.randn(2, 9, 16)
    with torch.no_grad():
        assert torch.allclose(merge_block(b)(x), unmerged_reference(b, x), atol=1e-5)


def test_merge_is_not_exact_without_the_conditions():
    x = torch.randn(2, 9, 16)
    with torch.no_grad():
        b = _constant_block(shared=True)  # residual outside C (Eq. 9 as printed)
        assert (merge_block(b)(x) - unmerged_reference(b, x, residual_through_c=False)).abs().max() > 0.1
        b = _constant_block(shared=False)  # per-head C acting on V's head slices
        assert (merge_block(b)(x) - unmerged_reference(b, x, shared_c=False)).abs().max() > 0.1


def test_plain_generation_modes_and_bad_input():
    cfg, dec = variant_config("merge", **SIZES)
    m = TinyGPT(cfg)
    assert dec == "er"
    assert m.generate(torch.tensor([[1, 2]]), 5, "er").shape == (1, 5)
    with pytest.raises(ValueError, match="merged"):
        GPTConfig(merged=True)
    with pytest.raises(ValueError, match="unknown variant"):
        variant_config("nope")
    with pytest.raises(ValueError, match="max_len"):
        m.generate(torch.tensor([[1, 2]]), 40)


def test_large_additive_mask_breaks_crypten_softmax():
    """Why MASK_VALUE is -30: CrypTen's exp (1 + x/256)^256 diverges for x < -256."""
    from privtrans.shared.mpc import compat
    from privtrans.shared.activations import MASK_VALUE

    cr = compat.crypten()
    scores = torch.tensor([[0.3, -0.2, 0.5, 0.1]])
    keep = torch.tensor([[1.0, 1.0, 0.0, 0.0]])
    want = torch.softmax(scores.masked_fill(keep == 0, float("-inf")), -1)
    good = cr.cryptensor(scores + (1 - keep) * MASK_VALUE).softmax(-1).get_plain_text()
    bad = cr.cryptensor(scores + (1 - keep) * -1e4).softmax(-1).get_plain_text()
    assert (good - want).abs().max() < 5e-3
    assert (bad - want).abs().max() > 1.0
