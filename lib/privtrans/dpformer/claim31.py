"""Claim 3.1 checks: Phantom norms against brute force, the paper's printed Eq. 2, and opacus.

One function per question the notebook asks; each returns plain numbers or a DataFrame.
"""

from __future__ import annotations

import pandas as pd
import torch

from privtrans.shared.dp.brute_force import clipped_sum, norms_of, per_sample_grads
from privtrans.shared.dp.clipping import clip_factors
from privtrans.shared.dp.phantom import PhantomClipper
from privtrans.shared.dp.step import dp_gradient

from .efficiency import random_batch
from .opacus_compare import TIE_REFUSAL, FunctionalTieSASRec, opacus_ghost_norms, opacus_hooks_norms
from .sasrec import SASRec, per_sample_loss

EMB = "item_emb.weight"
# the norm columns of norm_table besides "exact", in the order the notebook discusses them
VARIANTS = ("phantom", "phantom_float32", "no_cross_term", "paper_eq2_as_printed", "opacus_hooks")


def _loss_of(run, x, y):
    return per_sample_loss(run(x), y).sum()


def _model(cls, n_items, length, d, seed, dtype):
    torch.manual_seed(seed)
    return cls(n_items, length, d=d, dropout=0.0).to(dtype).eval()


def _phantom(model, x, y, **kw):
    c = PhantomClipper(model, **kw)
    with c.capture():
        losses = per_sample_loss(model(x), y)
    return c, c.backward(losses).detach()


def norm_table(n_items: int, length: int, d: int, batch: int, seed: int) -> pd.DataFrame:
    """Per sample: exact norm (torch.func, float64) and every variant's, plus N1, N2, N3."""
    x, y = random_batch(n_items, length, batch, seed)
    m64 = _model(SASRec, n_items, length, d, seed, torch.float64)
    exact = norms_of(per_sample_grads(m64, _loss_of, x, y))
    c, phantom = _phantom(m64, x, y)
    terms = c.per_param_terms[EMB]
    n1, n2, n3 = terms["self[0:index]"], terms["self[1:dense]"], terms["cross[0,1]"]
    rest = phantom.pow(2) - (n1 + n2 + 2 * n3)
    _, no_cross = _phantom(m64, x, y, cross_terms=False, validate="never")
    paper_eq2 = (rest + n1.pow(2) + n2 + 2 * n3).clamp(min=0).sqrt()  # Eq. 2 as printed
    m32 = _model(SASRec, n_items, length, d, seed, torch.float32)
    _, phantom32 = _phantom(m32, x, y)
    hooks = opacus_hooks_norms(_model(SASRec, n_items, length, d, seed, torch.float64), x, y)
    df = pd.DataFrame({
        "exact": exact, "phantom": phantom, "phantom_float32": phantom32.double(),
        "no_cross_term": no_cross, "paper_eq2_as_printed": paper_eq2, "opacus_hooks": hooks,
        "N1": n1, "N2": n2, "N3": n3, "n_pad": (x == 0).sum(1),
        "n_repeats": torch.tensor([len(r) - len(set(r)) for r in (row[row > 0].tolist() for row in x)]),
    })
    df.insert(0, "sample", range(batch))
    df.insert(0, "seed", seed)
    df.insert(0, "config", f"M={n_items}, L={length}, d={d}")
    return df


def rel_errors(df: pd.DataFrame, methods) -> pd.DataFrame:
    """Max |norm − exact| / exact per configuration and method."""
    out = {m: ((df[m] - df["exact"]).abs() / df["exact"]).groupby(df["config"], sort=False).max()
           for m in methods}
    return pd.DataFrame(out)


def opacus_ghost_on_tied(n_items=30, length=8, d=8, batch=4, seed=0) -> str:
    """The error opacus 1.6 ghost clipping raises on the module-tied model ('' if none)."""
    x, y = random_batch(n_items, length, batch, seed)
    res = opacus_ghost_norms(_model(SASRec, n_items, length, d, seed, torch.float64), x, y)
    return f"{type(res).__name__}: {res}" if isinstance(res, Exception) else ""


def functional_tie(n_items: int, length: int, d: int, batch: int, seed: int) -> dict:
    """A tie written as ``h @ emb.weight.T``: opacus hooks' norms vs exact; what Phantom does."""
    x, y = random_batch(n_items, length, batch, seed)
    m = _model(FunctionalTieSASRec, n_items, length, d, seed, torch.float64)
    exact = norms_of(per_sample_grads(m, _loss_of, x, y))
    hooks = opacus_hooks_norms(m, x, y)
    try:
        _phantom(m.eval(), x, y)
        phantom = "accepted (wrong)"
    except RuntimeError as err:
        phantom = f"RuntimeError: {err}"
    return {"exact": exact, "opacus_hooks": hooks, "phantom": phantom}


def functional_tie_underestimate(ft: dict) -> float:
    """How much too small opacus hooks' norms are on the functional tie, at worst (1 − hooks/exact)."""
    return float((1 - ft["opacus_hooks"] / ft["exact"]).max())


def opacus_refuses_tie(ghost_message: str) -> bool:
    """Whether :func:`opacus_ghost_on_tied` got opacus's refusal of the tied parameter."""
    return TIE_REFUSAL in ghost_message


def phantom_refuses(ft: dict) -> bool:
    """Whether Phantom raised on the functional tie (:func:`functional_tie`'s ``phantom`` entry)."""
    return ft["phantom"].startswith("RuntimeError")


def clipped_gradient_error(n_items: int, length: int, d: int, batch: int, seed: int,
                           max_grad_norm: float, mode: str) -> float:
    """Max relative error of the noise-free DP gradient against Σ brute-force clipped grads."""
    x, y = random_batch(n_items, length, batch, seed)
    m = _model(SASRec, n_items, length, d, seed, torch.float64)
    grads = per_sample_grads(m, _loss_of, x, y)
    want = clipped_sum(grads, clip_factors(norms_of(grads), max_grad_norm, mode))
    dp_gradient(m, lambda: per_sample_loss(m(x), y), max_grad_norm=max_grad_norm,
                noise_multiplier=0.0, expected_batch_size=batch, clipping=mode)
    got = {n: p.grad * batch for n, p in m.named_parameters()}
    num = torch.sqrt(sum((got[n] - want[n]).pow(2).sum() for n in want))
    return float(num / torch.sqrt(sum(w.pow(2).sum() for w in want.values())))
