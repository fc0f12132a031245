"""shared.mpc.secure_encdec.SecureEncDec, in this process (CrypTen's one-party world; the 2-party
runs are in test_shared_mpc_parties.py and test_shared_mpc_closed_form_cost.py).

The bidirectional encoder equals the plaintext encoder; the cross sub-layer, prepared once by
``encode`` for a window of target positions, equals the plaintext ``DecoderBlock.cross`` at every
offset, and MM's is a public slice that opens no op group (no communication per token); teacher-
forced forwards and greedy decoding equal the plaintext twin; bad lengths are refused by name.
Tolerances as in test_shared_mpc_layers.py.
"""

import pytest
import torch

from privtrans.shared.mpc import parties
from privtrans.shared.mpc.meter import Meter
from privtrans.shared.mpc.secure_encdec import SecureEncDec
from privtrans.shared.models.plain_encdec import EncDecConfig, TinyEncDec
from privtrans.shared.models.plain_gpt import VARIANTS

TOL = 2e-2
LOGIT_REL = 1e-2
SIZES = dict(vocab_size=16, d_model=8, n_heads=2, n_layers=1, n_enc_layers=1, max_len=8, max_src=6)
SRC, IDS = [4, 9, 2, 11], [3, 7, 1, 5]
PREFIX, N_NEW = [3, 7], 3
# (variant, seed) with non-constant greedy continuations at SIZES and SRC: vanilla and ER decoding
# (the softmax-family cross sub-layers are checked at every offset by the cross-window test)
GEN_CASES = [("only_mm", 8), ("merge", 0)]
# only_er is crypten's model (decoded with ER); "constant" is constant attention without the MM
# merge, a configuration of no paper variant but a branch of its own in SecureEncDec
MODELS = [v for v in VARIANTS if v != "only_er"] + ["constant"]


def _build(variant, seed=0):
    if variant != "constant":
        return parties.build_model(variant, SIZES, seed)[0]
    torch.manual_seed(seed)
    model = TinyEncDec(EncDecConfig(**SIZES, attention="constant", attn_norm="affine")).eval()
    with torch.no_grad():  # as parties.build_model: O(1) activations, non-uniform C and C_x
        for name, prm in model.named_parameters():
            if name.endswith("_logits"):
                prm.normal_(0.0, 1.0)
            elif prm.dim() == 2 and "wpe" not in name:
                prm.normal_(0.0, 1.0 / prm.shape[1] ** 0.5 if "wte" not in name else 1.0)
    return model


def _close(got, want, rel=None):
    return (got - want).abs().max() < (rel * want.abs().max() if rel else TOL)


@pytest.mark.parametrize("variant", MODELS)
def test_forward_equals_plaintext(cr, variant):
    """With constant attention, one secret model and two sources of different lengths: the
    encoder's and the cross C (softmaxes over the source positions) are re-shared per source."""
    model = _build(variant)
    sg = SecureEncDec(model)
    sources = (SRC, SRC[:2] + [1, 6, 13, 0]) if model.cfg.attention == "constant" else (SRC,)
    for src in sources:
        logits, hidden = sg.forward(torch.tensor(src), torch.tensor(IDS))
        with torch.no_grad():
            want_logits, want_hidden = model(torch.tensor([src]), input_ids=torch.tensor([IDS]))
        assert _close(hidden.get_plain_text(), want_hidden[0])
        assert _close(logits.get_plain_text(), want_logits[0], LOGIT_REL)


@pytest.mark.parametrize("variant", ["crypten", "thex", "constant", "merge"])
def test_encoder_is_bidirectional_and_cross_window_equals_plaintext(cr, variant):
    model = _build(variant)
    sg = SecureEncDec(model)
    with torch.no_grad():
        want_enc = model.encode(torch.tensor([SRC]))
        later = model.encode(torch.tensor([SRC[:-1] + [0]]))
    assert (want_enc[0, 0] - later[0, 0]).abs().max() > 0.05  # position 0 sees the last source token
    enc = sg.encode(SRC, 6)
    assert _close(enc.get_plain_text(), want_enc[0])
    p, blk = sg.blocks[0], model.blocks[0]
    u = torch.randn(2, SIZES["d_model"], generator=torch.Generator().manual_seed(1))
    meter = Meter()
    sg.meter = meter
    for t in (2, 4, 6):  # target positions t-2, t-1 of the prepared 0..5
        got = sg.cross_attention(p, cr.cryptensor(u), t).get_plain_text()
        with torch.no_grad():
            want = blk.cross(u[None], want_enc, start=t - 2)[0]
        assert _close(got, want)
    calls = {g: v["calls"] for g, v in meter.summary().items() if v["calls"]}
    if model.cfg.merged:  # MM: a public slice of the term prepared at encode time
        assert calls == {}
    elif model.cfg.attention == "constant":  # per call: C_x V_x, W_o, Norm
        assert calls == {"Linear": 3 * 2, "Norm": 3, "Total": 3 * 3}
    else:  # per call: q, scores, the normalisation, probs V, W_o, Norm
        assert calls == {"Linear": 3 * 4, "Softmax": 3, "Norm": 3, "Total": 3 * 6}


@pytest.mark.parametrize("variant,seed", GEN_CASES)
def test_generate_equals_plaintext(cr, variant, seed):
    model, decoding = parties.build_model(variant, SIZES, seed)
    want = model.generate(torch.tensor([SRC]), torch.tensor([PREFIX]), N_NEW, decoding)[0]
    assert len(set(want.tolist())) > 1  # a constant continuation would hide a wrong step
    ids, hiddens = SecureEncDec(model).generate(SRC, PREFIX, N_NEW, decoding)
    assert torch.equal(ids.long(), want)
    # the secret hiddens are the brute-force full decoder passes' last states (no cache)
    with torch.no_grad():
        enc = model.encode(torch.tensor([SRC]))
        emb, brute = model.wte(torch.tensor([PREFIX])), []
        for step in range(N_NEW):
            h = model(inputs_embeds=emb, enc=enc)[1][:, -1:]
            brute.append(h[0, 0])
            emb = torch.cat([emb, model.wte(want[step].view(1, 1)) if decoding == "vanilla" else h], 1)
    assert _close(hiddens.get_plain_text(), torch.stack(brute))


def test_bad_input_is_refused(cr):
    gpt, _ = parties.build_model("crypten", dict(vocab_size=16, d_model=8, n_heads=2, n_layers=1, max_len=8), 0)
    with pytest.raises(TypeError, match="SecureEncDec needs a TinyEncDec, got TinyGPT"):
        SecureEncDec(gpt)
    model, _ = parties.build_model("merge", SIZES, 0)
    sg = SecureEncDec(model)
    for src in ([], list(range(7))):
        with pytest.raises(ValueError, match=rf"source length {len(src)} outside 1\.\.6"):
            sg.encode(src, 2)
    for n in (0, 9):
        with pytest.raises(ValueError, match=rf"target length {n} outside 1\.\.8"):
            sg.encode(SRC, n)
    # decoding past the prepared window would read cross state that does not exist
    sg.encode(SRC, 2)
    emb = sg.embed(sg.onehot([1, 2, 3]))
    with pytest.raises(ValueError, match=r"target position 2 was not prepared by encode\(\) \(n_target=2\)"):
        sg.layers(emb, [{}], 0)
    # generate prepares exactly prefix + n_new - 1 positions: the longest allowed run works
    ids, _ = sg.generate(SRC, PREFIX, 7, "er")
    assert torch.equal(ids.long(), model.generate(torch.tensor([SRC]), torch.tensor([PREFIX]), 7, "er")[0])
