"""shared.mpc.layers.SecureGPT, in this process (CrypTen's one-party world, which ``layers._owner``
supports for numerics tests; the 2-party runs are in test_shared_mpc_parties.py and test_shared_mpc_closed_form_cost.py).

Every variant's CrypTensor forward equals its plaintext twin; private greedy decoding (KV cache or
MM's input cache, one new position per step) gives the plaintext tokens, and its secret hidden
states equal a brute-force full forward over the growing sequence; cached chunks equal one pass;
the meter sees the op groups the paper's columns name, call by call; bad input is refused.

Tolerances as in test_shared_mpc_parties.py: 16 fractional bits plus CrypTen's tanh / inv_sqrt / exp /
reciprocal approximations give ~1e-3 per op; a wrong mask, cache or scale gives O(0.1) or more.
"""

import pytest
import torch

from privtrans.shared.mpc import parties
from privtrans.shared.mpc.layers import CLIENT, SERVER, SecureGPT, _owner
from privtrans.shared.mpc.meter import Meter
from privtrans.shared.models.plain_gpt import VARIANTS, GPTConfig, TinyGPT

HID_TOL = 2e-2
LOGIT_REL = 1e-2
SIZES = dict(vocab_size=16, d_model=8, n_heads=2, n_layers=2, max_len=8)
GEN_SIZES = dict(SIZES, n_layers=1)  # decoding is the slow part: one layer (two in the tests above)
IDS = [3, 7, 1, 5, 2]
PREFIX, N_NEW = [3, 7, 1], 4
# (variant, seed) with non-constant greedy continuations at GEN_SIZES: vanilla / ER x KV cache / MM cache
GEN_CASES = [("crypten", 22), ("only_er", 0), ("only_mm", 0), ("merge", 2)]


def _close(got, want, rel=None):
    err = (got - want).abs().max()
    return err < (rel * want.abs().max() if rel else HID_TOL)


def _build(variant, sizes=SIZES, seed=0):
    """A variant's random model (parties.build_model); "constant": constant attention without the
    MM merge, a configuration of no paper variant but a branch of its own in SecureGPT.block."""
    if variant != "constant":
        return parties.build_model(variant, sizes, seed)[0]
    torch.manual_seed(seed)
    model = TinyGPT(GPTConfig(**sizes, attention="constant", attn_norm="affine")).eval()
    with torch.no_grad():  # as parties.build_model: O(1) activations, a non-uniform C
        for name, prm in model.named_parameters():
            if name.endswith("_logits"):
                prm.normal_(0.0, 1.0)
            elif prm.dim() == 2 and "wpe" not in name:
                prm.normal_(0.0, 1.0 / prm.shape[1] ** 0.5 if "wte" not in name else 1.0)
    return model


# only_er is crypten's model (decoded with ER)
@pytest.mark.parametrize("variant", [v for v in VARIANTS if v != "only_er"] + ["constant"])
def test_forward_equals_plaintext(cr, variant):
    model = _build(variant)
    logits, hidden = SecureGPT(model).forward(torch.tensor(IDS))
    with torch.no_grad():
        want_logits, want_hidden = model(torch.tensor([IDS]))
    assert _close(hidden.get_plain_text(), want_hidden[0])
    assert _close(logits.get_plain_text(), want_logits[0], LOGIT_REL)


def _brute_force_hiddens(model, decoding, tokens):
    """The last hidden state of a full plaintext forward at every decoding step (no cache)."""
    with torch.no_grad():
        emb = model.wte(torch.tensor([PREFIX]))
        out = []
        for step in range(N_NEW):
            h = model(inputs_embeds=emb)[1][:, -1:]
            out.append(h[0, 0])
            nxt = model.wte(torch.tensor([[tokens[step]]])) if decoding == "vanilla" else h
            emb = torch.cat([emb, nxt], 1)
    return torch.stack(out)


def _expected_calls(variant):
    """Meter calls per group, from the protocol: one prefix pass + N_NEW - 1 one-position steps."""
    spec = VARIANTS[variant]
    merged, er = spec["model"].get("merged", False), spec["decoding"] == "er"
    passes, L = N_NEW, GEN_SIZES["n_layers"]
    per_block = dict(Linear=4, Norm=1, Act=1) if merged else dict(Linear=6, Softmax=1, Norm=2, Act=1)
    calls = {g: passes * L * k for g, k in per_block.items()}
    calls.update(Embed=1 if er else passes, Gen=1 if er else N_NEW, Other=1)
    return calls


@pytest.mark.parametrize("variant,seed", GEN_CASES)
def test_generate_equals_plaintext_brute_force_hiddens_and_meter_groups(cr, variant, seed):
    model, decoding = parties.build_model(variant, GEN_SIZES, seed)
    want = model.generate(torch.tensor([PREFIX]), N_NEW, decoding)[0]
    assert len(set(want.tolist())) > 1  # a constant continuation would hide a wrong step
    meter = Meter()
    with meter.total():
        ids, hiddens = SecureGPT(model, meter).generate(PREFIX, N_NEW, decoding)
    assert torch.equal(ids.long(), want)
    assert hiddens.size() == (N_NEW, SIZES["d_model"])
    assert _close(hiddens.get_plain_text(), _brute_force_hiddens(model, decoding, want.tolist()))
    # the meter sees the paper's op groups, call by call; exclusive, so they add up to the total
    s = meter.summary()
    assert {g: v["calls"] for g, v in s.items() if g != "Total"} == _expected_calls(variant)
    assert sum(v["seconds"] for g, v in s.items() if g != "Total") == pytest.approx(s["Total"]["seconds"])


@pytest.mark.parametrize("variant", ["crypten", "constant", "merge"])
def test_cached_chunks_equal_one_pass(cr, variant):
    """KV cache (softmax) and the constant attention's cache of V (or of MM's inputs): positions
    0..1, then 2..4 (a 3-row chunk after a cache needs the offset causal mask or rows of C) equal
    the plaintext one pass over 0..4, in every layer (one-row steps: the generation test above)."""
    model = _build(variant)
    with torch.no_grad():
        whole = model(torch.tensor([IDS]))[1][0]  # the plaintext twin's one pass
    sg = SecureGPT(model)
    emb = sg.embed(sg.onehot(IDS))
    caches = [{} for _ in range(SIZES["n_layers"])]
    parts = [sg.layers(emb[a:b], caches, a).get_plain_text() for a, b in ((0, 2), (2, 5))]
    assert _close(torch.cat(parts), whole)


def test_onehot_embedding_is_a_table_lookup(cr):
    model, _ = parties.build_model("crypten", SIZES, 0)
    sg = SecureGPT(model)
    oh = sg.onehot(torch.tensor([[4, 0, 15]]))
    assert torch.equal(oh.get_plain_text(), torch.nn.functional.one_hot(torch.tensor([4, 0, 15]), 16).float())
    assert (sg.embed(oh).get_plain_text() - model.wte.weight[[4, 0, 15]]).abs().max() < 1e-4
    # in a one-party world both roles' inputs come from party 0
    assert (_owner(cr, SERVER), _owner(cr, CLIENT)) == (0, 0)


def test_bad_input_is_refused(cr):
    model, _ = parties.build_model("crypten", SIZES, 0)
    sg = SecureGPT(model)
    with pytest.raises(ValueError, match=r"decoding must be 'vanilla' or 'er', got 'greedy'"):
        sg.generate(PREFIX, 2, "greedy")
    with pytest.raises(ValueError, match=r"prefix \+ n_new - 1 <= 8"):
        sg.generate(PREFIX, 7)  # 3 + 7 - 1 = 9 positions
    for prefix, n in (([], 2), (PREFIX, 0)):
        with pytest.raises(ValueError, match="need prefix >= 1, n_new >= 1"):
            sg.generate(prefix, n)
    emb = sg.embed(sg.onehot([1, 2]))
    with pytest.raises(ValueError, match="position 9 exceeds max_len 8"):
        sg.layers(emb, [{} for _ in range(SIZES["n_layers"])], 7)
    # the longest allowed run works: 3 + 6 - 1 = 8 positions
    mm, _ = parties.build_model("merge", GEN_SIZES, 0)
    ids, _ = SecureGPT(mm).generate(PREFIX, 6, "er")
    assert torch.equal(ids.long(), mm.generate(torch.tensor([PREFIX]), 6, "er")[0])
