"""merge.private: a model's weights go through ``generate_party`` into two CrypTen parties, which
decode what the plaintext model decodes, at the bytes and rounds the closed-form cost model gives;
``cost_table`` is the per-model mean of the client's per-prompt costs.

Models: tiny random TinyGPTs (the teacher's "crypten" and MERGE's "merge" configurations) wrapped
as ``train.Trained``, so the run costs seconds; their seeds give non-constant continuations."""

import pandas as pd
import pytest
import torch

from privtrans.merge import private
from privtrans.merge.train import Trained
from privtrans.shared.mpc import closed_form_cost, parties

SIZES = dict(vocab_size=16, d_model=8, n_heads=2, n_layers=1, max_len=8)
PROMPTS, N_NEW = [[3, 7, 1], [5, 2]], 3
SEEDS = {"crypten": 22, "merge": 2}


def _models():
    out = {}
    for v, seed in SEEDS.items():
        model, decoding = parties.build_model(v, SIZES, seed)
        out[v] = Trained(model=model, variant="teacher" if v == "crypten" else v, decoding=decoding)
    return out


@pytest.fixture(scope="module")
def run():
    models = _models()
    return models, private.private_vs_plain(models, PROMPTS, N_NEW, timeout=240)


def test_private_tokens_are_the_plaintext_greedy_tokens(run):
    models, res = run
    assert list(res) == ["crypten", "merge"]
    for v, r in res.items():
        want = [models[v].model.generate(torch.tensor([p]), N_NEW, models[v].decoding)[0].tolist() for p in PROMPTS]
        assert r["plain"] == want
        assert any(len(set(ids)) > 1 for ids in want)  # a constant continuation would prove little
        assert r["private"] == want and r["match"] == 1.0
        assert r["ranks_agree"] is True
        assert len(r["seconds"]) == len(PROMPTS) and all(s > 0 for s in r["seconds"])
        # the revealed logits are the plaintext model's on the same prefix, within the tolerance
        a = r["agreement"]
        assert a["steps"] == len(PROMPTS) * N_NEW and a["n_faults"] == 0
        assert 0 < a["max_err_over_tol"] < 1


@pytest.mark.parametrize("variant", ["crypten", "merge"])
def test_step_logits_are_the_logits_greedy_decoding_argmaxes(variant):
    """On its own tokens, step_logits' argmax is the greedy token at every step; fed other tokens
    (vanilla), its later steps follow them: the logits of the private prefix, not of plaintext's."""
    m = _models()[variant]
    for p in PROMPTS:
        want = m.model.generate(torch.tensor([p]), N_NEW, m.decoding)[0]
        logits = m.model.step_logits(p, want, m.decoding)
        assert logits.shape == (N_NEW, SIZES["vocab_size"])
        assert torch.equal(logits.argmax(-1), want)
    if m.decoding == "vanilla":
        other = torch.tensor([(int(want[0]) + 1) % SIZES["vocab_size"], 0, 0])
        a, b = m.model.step_logits(p, want, "vanilla"), m.model.step_logits(p, other, "vanilla")
        assert torch.equal(a[0], b[0]) and not torch.allclose(a[1], b[1])
    with pytest.raises(ValueError, match="decoding must be"):
        m.model.step_logits(PROMPTS[0], [1], "beam")
    with pytest.raises(ValueError, match=r"prefix \+ tokens - 1"):
        m.model.step_logits(PROMPTS[0], [1] * 8, m.decoding)


def _logits(*rows):
    return torch.tensor(rows, dtype=torch.float64)


def test_agreement_tells_a_near_tie_from_a_fault():
    ref = [_logits([10.0, 2.0, 0.0], [5.0, 4.99, 0.0])]  # step 1: top-2 gap 0.01 <= 2 * 1 % of 5
    # the private run flips the near tie at step 1: allowed, and reported as a near tie
    a = private.agreement([[0, 1]], [_logits([10.0, 2.0, 0.0], [4.99, 5.0, 0.0])], ref)
    assert a["n_faults"] == 0 and a["n_near_ties"] == 1 and a["near_ties"][0]["step"] == 1
    assert a["min_gap"] == pytest.approx(0.01) and a["max_err_over_tol"] == pytest.approx(0.2)
    # another token where the gap is clear (8 at step 0) is a fault, whatever the logits say
    a = private.agreement([[1, 0]], [_logits([10.0, 2.0, 0.0], [5.0, 4.99, 0.0])], ref)
    assert a["n_faults"] == 1 and a["faults"][0]["step"] == 0 and a["faults"][0]["plain_argmax"] == 0
    # a logit off by more than 1 % of the step's largest is a fault even with the right token
    a = private.agreement([[0, 0]], [_logits([10.0, 2.5, 0.0], [5.0, 4.99, 0.0])], ref)
    assert a["n_faults"] == 1 and a["faults"][0]["err"] == pytest.approx(0.5) and a["max_err_over_tol"] == pytest.approx(5)
    with pytest.raises(ValueError, match=r"prompt 0: 2 tokens, private logits \(1, 3\)"):
        private.agreement([[0, 0]], [_logits([10.0, 2.0, 0.0])], ref)


def test_metered_cost_equals_the_closed_form_model(run):
    """Every op group of every prompt, to the byte and the round (the client's meter)."""
    _, res = run
    for v, r in res.items():
        for p, meter in zip(PROMPTS, r["meter"]):
            shape = closed_form_cost.Shape(vocab=16, d=8, layers=1, heads=2, prefix=len(p), n_new=N_NEW)
            model = closed_form_cost.generation_cost(shape, v)
            for group, m in model.items():
                got = meter.get(group, {"bytes": 0, "rounds": 0})
                assert (got["bytes"], got["rounds"]) == (m["bytes"], m["rounds"]), (v, len(p), group)
            assert meter["Total"]["bytes"] == sum(g["bytes"] for k, g in meter.items() if k != "Total")
    # the paper's point: MERGE needs fewer rounds and bytes for the same number of tokens
    for i in range(len(PROMPTS)):
        c, m = res["crypten"]["meter"][i]["Total"], res["merge"]["meter"][i]["Total"]
        assert m["rounds"] < c["rounds"] and m["bytes"] < c["bytes"]


def test_cost_table_is_the_mean_per_model(run):
    _, res = run
    table = private.cost_table(res)
    assert list(table.columns) == ["model", "seconds", "rounds", "MiB"]
    assert table["model"].tolist() == ["crypten", "merge"]  # the caller's order, not sorted
    for _, row in table.iterrows():
        r = res[row["model"]]
        n = len(PROMPTS)
        assert row["seconds"] == pytest.approx(sum(r["seconds"]) / n)
        assert row["rounds"] == pytest.approx(sum(m["Total"]["rounds"] for m in r["meter"]) / n)
        assert row["MiB"] == pytest.approx(sum(m["Total"]["bytes"] for m in r["meter"]) / n / 2**20)


def test_cost_table_hand_case():
    def meter(rounds, nbytes):
        return {"Linear": {}, "Total": {"rounds": rounds, "bytes": nbytes}}

    res = {"zeta": {"seconds": [1.0, 2.0, 6.0],
                    "meter": [meter(10, 2**20), meter(20, 2**20), meter(60, 4 * 2**20)]},
           "alpha": {"seconds": [5.0], "meter": [meter(7, 2**19)]}}
    want = pd.DataFrame({"model": ["zeta", "alpha"], "seconds": [3.0, 5.0], "rounds": [30.0, 7.0],
                         "MiB": [2.0, 0.5]})
    pd.testing.assert_frame_equal(private.cost_table(res), want, check_dtype=False)


def test_too_long_prompt_is_refused_before_any_party_starts():
    models = _models()
    with pytest.raises(ValueError, match="a prompt of 7 tokens \\+ 3 new tokens exceeds max_len"):
        private.private_vs_plain(models, [[1, 2], [1, 2, 3, 4, 5, 6, 7]], 3, timeout=1)
    # the shortest max_len of all models is the limit
    short, _ = parties.build_model("merge", dict(SIZES, max_len=4), 0)
    models["short"] = Trained(model=short, variant="merge", decoding="er")
    with pytest.raises(ValueError, match="a prompt of 3 tokens \\+ 3 new tokens exceeds max_len"):
        private.private_vs_plain(models, [[1, 2, 3]], 3, timeout=1)
