"""Every attention variant under CrypTen (2PC and 3PC replicated) equals its plaintext twin; the
measured bytes and rounds of the 2PC normalisers equal ``closed_form_cost.normaliser_cost`` (CrypTen's
per-party count) and, read from the parties' traces, its link bytes one way (``cost.link_bytes_2pc``).

Tolerances: CrypTen's fixed point has 16 fractional bits (1.5e-5). Softmax's exp (8 squarings of
1 + x/256) is ~1e-2 relative off for scores spread over ~10, and its Newton reciprocal adds ~1e-3;
the polynomial variants only see truncation noise. ``ATT_TOL`` is absolute on weights <= 1.
The encoder adds LayerNorm's inverse square root (10 Newton steps) and GeLU's tanh: hidden states
(|h| ~ 3) within ``HID_TOL``, logits within ``LOGIT_TOL``; a wrong layer gives O(1).
"""

import pytest
import torch

from privtrans.mpc_attention import attention
from privtrans.mpc_attention import encoder
from privtrans.mpc_attention import normaliser_cost, secure
from privtrans.shared.mpc import closed_form_cost, runner

ATT_TOL = {"softmax": 2e-2, "softmax_freediv": 5e-3}
POLY_TOL = 1e-3
HID_TOL = 3e-2
LOGIT_TOL = 2e-2
N, HEADS = 16, 2


def _plain(kind, x, n):
    return attention.normalise(kind, x, torch.ones(1, 1, 1, n), attention.PAPER_FITS.get(attention.FREEDIV.get(kind)))


@pytest.fixture(scope="module")
def cost2():
    return runner.run(secure.attention_cost, list(attention.ATTENTIONS), N, heads=HEADS, reps=1, timeout=240)


@pytest.fixture(scope="module")
def cost3():
    return runner.run(secure.attention_cost_3pc, list(attention.ATTENTIONS), 8, heads=HEADS, reps=1,
                      world_size=3, timeout=240)


@pytest.mark.parametrize("kind", attention.ATTENTIONS)
def test_2pc_attention_equals_plaintext(cost2, kind):
    x = cost2[0]["scores"]
    for rank in (0, 1):
        err = (cost2[rank][kind]["plain"] - _plain(kind, x, N)).abs().max()
        assert err < ATT_TOL.get(kind, POLY_TOL), (kind, float(err))


@pytest.mark.parametrize("kind", attention.ATTENTIONS)
def test_3pc_attention_equals_plaintext(cost3, kind):
    x = cost3[0]["scores"]
    err = (cost3[0][kind]["plain"] - _plain(kind, x, 8)).abs().max()
    assert err < ATT_TOL.get(kind, POLY_TOL), (kind, float(err))


@pytest.mark.parametrize("kind", attention.ATTENTIONS)
def test_2pc_bytes_and_rounds_equal_closed_form(cost2, kind):
    b, r = closed_form_cost.normaliser_cost(kind, rows=HEADS * N, t=N)
    for rank in (0, 1):
        assert (cost2[rank][kind]["bytes"], cost2[rank][kind]["rounds"]) == (b, r)
    c = normaliser_cost.parties_cost(cost2, [kind])[kind]
    assert (c["bytes"], c["rounds"]) == (normaliser_cost.link_bytes_2pc(b), r)  # the traces: each reveal n each way
    assert (c["crypten_bytes"], c["crypten_rounds"]) == (b, r)


def test_freediv_strictly_cheaper_than_parent(cost2, cost3):
    """On every party's counters combined (rounds: the maximum over the parties; bytes: all
    parties' traffic), as Table 1 reads them."""
    for res in (cost2, cost3):
        c = normaliser_cost.parties_cost(res, attention.ATTENTIONS)
        for child, parent in attention.FREEDIV.items():
            assert c[child]["rounds"] < c[parent]["rounds"]
            assert c[child]["bytes"] < c[parent]["bytes"]


def test_3pc_rounds_are_the_longest_chain_not_crypten_calls(cost3):
    """In 3PC replicated sharing CrypTen logs an isend and an irecv per replicated operand: its
    busiest party's count is well above the protocol's longest chain of dependent messages."""
    c = normaliser_cost.parties_cost(cost3, attention.ATTENTIONS)
    assert c["scaling"]["rounds"] == 1  # one public division: a truncation, party 2 to party 1
    assert c["2quad_freediv"]["rounds"] == 3  # (x + 5)^2: replicate, truncate; / f(n): truncate
    for kind in attention.ATTENTIONS:
        assert c[kind]["crypten_rounds"] == max(r[kind]["rounds"] for r in cost3)
        assert 0 < c[kind]["rounds"] < c[kind]["crypten_rounds"], kind
        assert c[kind]["bytes"] <= c[kind]["bytes_total"] < c[kind]["crypten_bytes"] * 2


SIZES = dict(vocab_size=40, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=10)
COMBOS = [("softmax", "gelu"), ("softmax", "relu"), ("2relu", "quad"), ("2quad", "quad"),
          ("scaling", "quad"), ("softmax_freediv", "gelu"), ("2quad_freediv", "quad")]


def _teacher():
    torch.manual_seed(0)
    m = encoder.TinyEncoder(encoder.EncoderConfig(**SIZES))
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.3)
    return m


def _cfg(att, act):
    return encoder.EncoderConfig(**SIZES, attention=att, activation=act,
                           const=attention.PAPER_FITS.get(attention.FREEDIV.get(att)))


@pytest.fixture(scope="module")
def forwards():
    ids, mask = [[3, 7, 1, 9, 4, 2, 0, 0]], [[1, 1, 1, 1, 1, 1, 0, 0]]
    cfgs = [_cfg(a, f).to_dict() for a, f in COMBOS]
    res = runner.run(secure.secure_forward, cfgs, _teacher().state_dict(), ids, mask, timeout=300)
    return ids, mask, res


@pytest.mark.parametrize("att,act", COMBOS)
def test_secure_encoder_equals_plaintext(forwards, att, act):
    ids, mask, res = forwards
    m = _teacher().converted(att, act, _cfg(att, act).const)
    with torch.no_grad():
        out = m(torch.tensor(ids), torch.tensor(mask, dtype=torch.float32))
    got = res[0][f"{att}+{act}"]
    keep = torch.tensor(mask[0]).bool()
    for h_sec, h in zip(got["hidden"], out["hidden"]):
        assert (h_sec[0][keep] - h[0][keep]).abs().max() < HID_TOL
    assert (got["logits"] - out["logits"]).abs().max() < LOGIT_TOL
    assert got["cost"]["Total"]["rounds"] > 0


def test_the_encoders_costs_are_read_from_the_traces_per_group(forwards):
    """2PC: every message is a reveal each way, so per group the traces' rounds are CrypTen's calls
    and their bytes per direction half its per-party count; the groups add up to the whole."""
    _, _, res = forwards
    combined = normaliser_cost.parties_meter(res)
    for key, groups in combined.items():
        for g, c in groups.items():
            assert c["rounds"] == c["crypten_rounds"] == res[0][key]["cost"][g]["rounds"], (key, g)
            assert c["bytes"] == normaliser_cost.link_bytes_2pc(res[0][key]["cost"][g]["bytes"]), (key, g)
        parts = [c for g, c in groups.items() if g != "Total"]
        assert sum(c["bytes"] for c in parts) == groups["Total"]["bytes"]
        assert sum(c["rounds"] for c in parts) == groups["Total"]["rounds"]


def test_a_dry_run_runs_each_models_first_layer_and_books_all_of_them(forwards, dry_run):
    """``make dry`` at `paper` shapes (BERT-Base: twelve layers, 99 s a combination on a CPU): the
    parties run each model's first layer, equal to the full run's first layer, and the notebook's
    tally books every layer (runner hands rank 0's booking to the parent)."""
    ids, mask, full = forwards
    cfgs = [_cfg(a, f).to_dict() for a, f in COMBOS[:2]]
    cut = runner.run(secure.secure_forward, cfgs, _teacher().state_dict(), ids, mask, timeout=300)[0]
    loops = dry_run.report(1.0)["loops"]
    assert loops["secure forward layers"] == {"runs": 2, "kept": 2, "full": 2 * SIZES["n_layers"]}
    keep = torch.tensor(mask[0]).bool()
    for k in (f"{a}+{f}" for a, f in COMBOS[:2]):
        assert len(cut[k]["hidden"]) == 2 and len(full[0][k]["hidden"]) == SIZES["n_layers"] + 1
        assert (cut[k]["hidden"][1][0][keep] - full[0][k]["hidden"][1][0][keep]).abs().max() < HID_TOL
        assert cut[k]["cost"]["Total"]["bytes"] < full[0][k]["cost"]["Total"]["bytes"]
