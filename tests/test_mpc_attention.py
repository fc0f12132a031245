"""The attention normalisers of the MPC-attention chapter: each plaintext formula is the paper's;
each CrypTen twin (two real parties) equals it within fixed-point tolerance; rounds and bytes equal
the closed forms (CrypTen's own softmax and MPCFormer's 2ReLU/2Quad in privtrans.shared.mpc.cost_model,
one square for 2Quad-freeDiv, nothing for Scaling); each freeDiv variant is cheaper than its parent;
the power-law fit recovers known constants."""

import math

import pytest
import torch

from privtrans.mpc_attention import fit, normalisers as N
from privtrans.shared.models.plain_gpt import DENOM_EPS
from privtrans.shared.mpc import cost_model, runner

LENGTHS, HEADS = [8, 16], 2


def test_plaintext_formulas_are_the_papers():
    torch.manual_seed(0)
    x = 2 * torch.randn(3, 5, 12)
    n, ops = 12, N.TorchOps()
    f = N.PAPER_FITS
    want = {
        "softmax": torch.softmax(x, -1),
        "2relu": torch.relu(x) / (torch.relu(x).sum(-1, keepdim=True) + n * DENOM_EPS),
        "2quad": (x + 5) ** 2 / ((x + 5) ** 2).sum(-1, keepdim=True),
        "scaling": x / n,
        "softmax_freediv": torch.exp(x - x.amax(-1, keepdim=True)) / f["softmax"](n),
        "2quad_freediv": (x + 5) ** 2 / f["2quad"](n),
    }
    assert set(want) == set(N.KINDS)
    for kind, w in want.items():
        torch.testing.assert_close(N.normalise(x, kind, ops), w, rtol=1e-5, atol=1e-6, msg=kind)
    with pytest.raises(ValueError, match="kind must be one of"):
        N.normalise(x, "softmax_free", ops)


def test_the_papers_fits_are_its_constants():
    assert N.PAPER_FITS["softmax"](1) == pytest.approx(0.9924, abs=1e-4)
    assert N.PAPER_FITS["2quad"](128) == pytest.approx(84.0737 * 128 ** 0.71747, rel=1e-4)
    with pytest.raises(ValueError, match="positive number of keys"):
        N.PAPER_FITS["softmax"](0)


def test_power_law_fit_recovers_known_constants():
    ns = [4, 8, 16, 32, 64, 128]
    got = fit.power_law(ns, [3.0 * n ** 0.6 for n in ns])
    assert got.a == pytest.approx(3.0, rel=1e-6) and got.b == pytest.approx(0.6, rel=1e-6)
    with pytest.raises(ValueError, match="positive"):
        fit.power_law([1, 2], [1.0, -1.0])


@pytest.fixture(scope="module")
def secure():
    rows = runner.run("privtrans.mpc_attention.parties:normaliser_cost", list(N.KINDS), LENGTHS, HEADS, 0, 1)[0]
    return {(r["kind"], r["n"]): r for r in rows}


def test_every_secure_normaliser_equals_its_plaintext_twin(secure):
    for (kind, n), r in secure.items():
        tol = 1e-2 if kind.startswith("softmax") else 3e-3  # CrypTen's exp limit approximation is the loosest
        assert r["max_abs_err"] < tol, (kind, n, r["max_abs_err"])


def test_rounds_and_bytes_equal_the_closed_forms(secure):
    for n in LENGTHS:
        rows = HEADS * n  # one (n, n) score matrix per head
        assert (secure["softmax", n]["bytes"], secure["softmax", n]["rounds"]) == cost_model.rowop_cost("softmax", rows, n)
        assert (secure["2quad", n]["bytes"], secure["2quad", n]["rounds"]) == cost_model._att("att_sf2quad", rows, n)
        assert (secure["2relu", n]["bytes"], secure["2relu", n]["rounds"]) == cost_model._att("att_sf2relu", rows, n)
        assert (secure["2quad_freediv", n]["bytes"], secure["2quad_freediv", n]["rounds"]) == (16 * rows * n, 1)
        assert (secure["scaling", n]["bytes"], secure["scaling", n]["rounds"]) == (0, 0)


def test_each_freediv_variant_is_strictly_cheaper_than_its_parent(secure):
    for child, parent in N.PARENT.items():
        for n in LENGTHS:
            assert secure[child, n]["rounds"] < secure[parent, n]["rounds"]
            assert secure[child, n]["bytes"] < secure[parent, n]["bytes"]


def test_long_rows_stay_in_the_fixed_point_range():
    """At n = 128 a 2Quad row sums to about 84·128^0.72 ≈ 2,700 (CrypTen's reciprocal is wrong above
    ~128) and 1/f(128) ≈ 3.7e-4 has four significant bits: both are scaled before CrypTen sees them."""
    rows = runner.run("privtrans.mpc_attention.parties:normaliser_cost", ["2quad", "2quad_freediv"], [128], 1, 0, 1)[0]
    for r in rows:
        assert r["max_abs_err"] < 0.01 * r["max_abs_plain"], r
    assert math.isfinite(rows[0]["max_abs_err"])


def test_the_module_needs_neither_torch_nor_jax_and_keeps_merges_epsilon():
    """SPU's environment (numpy < 2) has no torch: the formulas must import without it."""
    import subprocess
    import sys

    code = ("import sys, builtins; real = builtins.__import__\n"
            "def guard(name, *a, **k):\n"
            "    if name.split('.')[0] in ('torch', 'jax', 'crypten'): raise ImportError(name)\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = guard\n"
            "import privtrans.mpc_attention.normalisers as N; print(N.DENOM_EPS)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == DENOM_EPS


def test_spu_runs_the_same_formulas_in_its_own_environment():
    """One SecretFlow SPU run (ABY3, the paper's protocol) through ``make spu``'s environment."""
    import os

    from privtrans.mpc_attention import spu

    if not spu.python().exists():
        msg = f"no SPU environment at {spu.python()}: run `make spu`"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg + "; CI=true, so the SPU test may not be skipped")
        pytest.skip(msg)
    rows = {r["kind"]: r for r in spu.normaliser_cost(list(N.KINDS), [8], 2, 0, "ABY3")}
    assert set(rows) == set(N.KINDS)
    for kind, r in rows.items():
        assert r["max_abs_err"] < 1e-2, (kind, r)
        assert r["parties"] == 3 and r["bytes"] >= 0
    for child, parent in N.PARENT.items():
        assert rows[child]["bytes"] < rows[parent]["bytes"] and rows[child]["rounds"] < rows[parent]["rounds"]
    with pytest.raises(ValueError, match="protocol must be one of"):
        spu.normaliser_cost(["softmax"], [8], 1, 0, "CHEETAH")
