"""Each back-end's operations (privtrans.mpc_attention.ops) run the chapter's one formula to the
plaintext values: torch's against textbook expressions and torch.nn's layers, JAX's (SPU's front end,
run in SPU's own environment) against the same, for the six normalisers and the whole encoder.
CrypTen's shares run ``TensorOps`` too: tests/test_mpc_attention_secure.py."""

import json
import os
import subprocess

import numpy as np
import pytest
import torch

from privtrans.mpc_attention import encoder_ops, normalisers
from privtrans.mpc_attention.ops import TENSOR


def test_tensor_ops_reshape_heads_and_pool_real_tokens():
    x = torch.randn(2, 5, 6)
    heads = TENSOR.heads(x, 3, 2)
    assert heads.shape == (2, 3, 5, 2) and torch.equal(heads[:, 1], x[..., 2:4])
    assert torch.equal(TENSOR.merge(heads, 6), x)
    mask = torch.tensor([[1.0] * 5, [1.0, 1.0, 0.0, 0.0, 0.0]])
    torch.testing.assert_close(TENSOR.pool(x, mask), torch.stack([x[0].mean(0), x[1, :2].mean(0)]))
    # f(n)'s constants: one pair, one per head, one per layer and head
    assert [c.shape for c in TENSOR.constants(([1.0, 2.0], [0.5, 0.5]), torch.ones(1))] == [(2, 1, 1)] * 2
    a, b = TENSOR.layer_const(([[1.0, 2.0], [3.0, 4.0]], [[0.1, 0.2], [0.3, 0.4]]), 1)
    assert a.tolist() == [3.0, 4.0] and b.tolist() == pytest.approx([0.3, 0.4])


JAX_RUN = """
import json, sys
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
from privtrans.mpc_attention import encoder_ops, normalisers
from privtrans.mpc_attention.ops import JaxOps

spec, ops = json.loads(sys.argv[1]), JaxOps()
z = np.load(spec["inputs"])
x = z["scores"]
out = {}
for kind in normalisers.ATTENTIONS:
    const = normalisers.PAPER_FITS.get(normalisers.FREEDIV.get(kind))
    out["norm:" + kind] = np.asarray(normalisers.normalise(kind, x, None, const, ops))
state = {k[2:]: z[k] for k in z.files if k.startswith("w:")}
onehot = z["onehot"]
fits = {k: normalisers.PowerLaw(*v) for k, v in spec["fits"].items()}
for att, act in spec["combos"]:
    const = fits.get(normalisers.FREEDIV.get(att))
    cfg = encoder_ops.EncoderConfig(**spec["cfg"], attention=att, activation=act, const=const)
    emb = ops.matmul(onehot, state["tok.weight"]) + state["pos.weight"][:onehot.shape[0]] + state["typ.weight"][0]
    p = encoder_ops.weights(state, cfg.n_layers, ops)
    out["enc:" + att + "+" + act] = np.asarray(encoder_ops.forward(p, emb, None, cfg, ops)["logits"])
np.savez(spec["outputs"], **out)
"""


def test_jax_ops_give_the_plaintext_normalisers_and_encoder(tmp_path, spu, small_encoder):
    """SPU's front end, in plaintext (float64) in SPU's own environment, against plaintext torch:
    every normaliser (checked against the textbook formulas in test_mpc_attention_normalisers.py)
    and every attention x activation of the encoder (whose torch forward is checked against
    torch.nn's layers in test_mpc_attention_plain.py)."""
    torch.manual_seed(1)
    x = 2 * torch.randn(1, 3, 16, 16, dtype=torch.float64)
    model = small_encoder
    ids = torch.tensor([[2, 7, 11, 5, 30, 8, 9, 3]])
    fits = {"softmax": (1.3, 0.4), "2quad": (60.0, 0.8)}
    combos = [(a, f) for a in normalisers.ATTENTIONS for f in encoder_ops.ACTIVATIONS]
    np.savez(tmp_path / "in.npz", scores=x.numpy(), onehot=torch.nn.functional.one_hot(ids[0], 40).double().numpy(),
             **{f"w:{k}": v.double().numpy() for k, v in model.state_dict().items()})
    spec = {"inputs": str(tmp_path / "in.npz"), "outputs": str(tmp_path / "out.npz"), "combos": combos,
            "fits": fits, "cfg": {k: model.cfg.to_dict()[k] for k in ("d_model", "n_heads", "n_layers")}}
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib")
    proc = subprocess.run([str(spu.python()), "-c", JAX_RUN, json.dumps(spec)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=lib, JAX_PLATFORMS="cpu"), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = np.load(tmp_path / "out.npz")
    for kind in normalisers.ATTENTIONS:
        want = normalisers.normalise(kind, x, None, normalisers.PAPER_FITS.get(normalisers.FREEDIV.get(kind)))
        # torch evaluates f(n) in float32 where JAX keeps float64
        np.testing.assert_allclose(got["norm:" + kind], want.numpy(), rtol=1e-6, atol=1e-9, err_msg=kind)
    for att, act in combos:
        const = fits[normalisers.FREEDIV[att]] if att in normalisers.FREEDIV else None
        m = model.converted(att, act, const).double()
        with torch.no_grad():
            want = m(ids, torch.ones(1, 8))["logits"]
        # float64 throughout, but the torch model evaluates f(n) in float32 (its key mask): ~1e-7 apart
        np.testing.assert_allclose(got[f"enc:{att}+{act}"], want.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{att}+{act}")
