"""SecretFlow SPU, the paper's own framework, run in its own environment as a subprocess.

SPU 0.9.5 needs numpy < 2 and jax <= 0.4.34, which cannot live beside the book's torch and numpy 2,
so ``make spu`` creates ``.venv-spu`` (pins in ``requirements-spu.lock``) and this module runs
``privtrans.mpc_attention.spu_worker`` there: a JSON spec in, one JSON list of rows out (and, in a
dry run, what the worker's cut loops booked, absorbed here: ``privtrans.book.dry``). The worker
imports only torch-free modules (``normalisers``, ``encoder_ops``, ``ops``), so SPU runs the very
formulas the torch and CrypTen runs use. ``PRIVTRANS_SPU_PYTHON`` names another interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from privtrans.book import dry
from privtrans.book.paths import repo_root

PROTOCOLS = ("ABY3", "SEMI2K")
ENV_VAR = "PRIVTRANS_SPU_PYTHON"


def python() -> Path:
    return Path(os.environ.get(ENV_VAR) or repo_root() / ".venv-spu" / "bin" / "python")


def normaliser_cost(kinds: list, lengths: list, heads: int, seed: int, protocol: str, timeout: float = 600) -> list[dict]:
    """The rows of ``spu_worker.run`` for one protocol (the CrypTen party function's columns)."""
    return _run({"kinds": list(kinds), "lengths": list(lengths), "heads": heads, "seed": seed, "protocol": protocol},
                timeout)


def model_cost(state: dict, cfg: dict, combos, length: int, fits: dict | None, seed: int, protocol: str,
               timeout: float = 600) -> list[dict]:
    """Whole-model secure inference in SPU (``spu_worker.run_encoder``): for each (attention,
    activation) the bytes, rounds (SPU's cost table), send actions, seconds and error against plaintext of one sentence of
    ``length`` tokens, with the weights ``state`` (a ``TinyEncoder.state_dict()``) and the freeDiv
    constants ``fits`` ({'softmax': (a, b), '2quad': (a, b)})."""
    import tempfile

    import numpy as np

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "weights.npz"
        np.savez(path, **{k: v.detach().cpu().numpy() for k, v in state.items()})
        keep = {k: cfg[k] for k in ("d_model", "n_heads", "n_layers")}
        return _run({"mode": "encoder", "weights": str(path), "cfg": keep, "combos": [list(c) for c in combos],
                     "fits": None if fits is None else {k: list(map(float, v)) for k, v in fits.items()},
                     "length": length, "seed": seed, "protocol": protocol}, timeout)


def probe_cost(n: int, depth: int, protocol: str, timeout: float = 120) -> dict:
    """``spu_worker.run_probe``: a chain of integer multiplications, for the closed-form tests."""
    return _run({"mode": "probe", "n": n, "depth": depth, "protocol": protocol}, timeout)[0]


def _run(spec: dict, timeout: float) -> list[dict]:
    protocol = spec["protocol"]
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    py = python()
    if not py.exists():
        raise FileNotFoundError(f"SecretFlow SPU's environment is missing ({py}): run `make spu`, "
                                f"or set {ENV_VAR} to a Python with the pins of requirements-spu.lock")
    lib = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(lib), JAX_PLATFORMS="cpu")
    proc = subprocess.run([str(py), "-m", "privtrans.mpc_attention.spu_worker"], input=json.dumps(spec),
                          capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"the SPU worker failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if dry.active():
        dry.absorb(out["booking"])  # the worker's cut loops, booked as if they had run here
    return out["rows"]
