"""Party functions: secure inference of the encoder and of one attention normaliser in CrypTen.

They run inside the parties that ``privtrans.shared.mpc.runner.run`` starts (2PC: CrypTen's
Beaver protocol with TFP triples; 3PC: ``cfg.mpc.protocol = "replicated"``, the ABY3-like
honest-majority sharing). The model owner is rank 0, the data owner rank 1 (as in MERGE).
Both call ``encoder_ops.forward`` / ``normalisers.normalise`` on shares: the very formulas of the
plaintext model and of SPU's runs. Each party returns its message trace
(``privtrans.shared.mpc.trace``) and CrypTen's counters; the callers read every party's together
(``cost.protocol_counts``: rounds the longest chain of dependent messages, bytes the busiest link
one way).
"""

from __future__ import annotations

import time

import torch

from privtrans.book import dry
from privtrans.shared.mpc import compat
from privtrans.shared.mpc.meter import Meter

from . import attention
from . import encoder

SERVER, CLIENT = 0, 1
LN_NR_ITERS = 10  # CrypTen's inv_sqrt with its default 3 Newton steps is 40 % off at variance 1e-2


def _owner(cr, src):
    return min(src, cr.communicator.get().get_world_size() - 1)


def _share(cr, tree, src=SERVER):
    """Every tensor of ``tree`` (dicts, lists and pairs of them) shared by ``src``, in order."""
    if isinstance(tree, dict):
        return {k: _share(cr, v, src) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_share(cr, v, src) for v in tree)
    return cr.cryptensor(tree.detach().to(torch.float32), src=_owner(cr, src))


def secure_forward(cfgs: list[dict], state: dict, ids: list[list[int]], mask01: list[list[float]],
                   types: list[list[int]] | None = None, reps: int = 1) -> dict:
    """Private forward of a ``TinyEncoder`` for each config in ``cfgs`` (same weights ``state``).

    The client shares one-hot tokens (and segment ids); the server the weights. Position rows and
    the mask are public (freeDiv needs the length in the clear). Returns per config label the
    revealed logits and hidden states and the meter summary of the fastest of ``reps`` runs.
    """
    cr = compat.crypten()
    cr.cfg.functions.sqrt_nr_iters = LN_NR_ITERS
    ids_t = torch.tensor(ids)
    mask = torch.tensor(mask01, dtype=torch.float32)
    types_t = torch.zeros_like(ids_t) if types is None else torch.tensor(types)
    out = {}
    for cd in cfgs:
        cfg = encoder.EncoderConfig(**cd)
        model = encoder.TinyEncoder(cfg)
        model.load_state_dict(state)
        model.eval()
        best = None
        for _ in dry.loop(range(max(1, reps)), "secure forward reps"):
            meter = Meter(trace=True)
            with meter.total():
                with meter("Embed"):
                    V, T = cfg.vocab_size, ids_t.size(1)
                    onehot = torch.nn.functional.one_hot(ids_t, V).float()
                    tonehot = torch.nn.functional.one_hot(types_t, cfg.n_types).float()
                    x = _share(cr, onehot, CLIENT).matmul(_share(cr, model.tok.weight))
                    x = x + _share(cr, tonehot, CLIENT).matmul(_share(cr, model.typ.weight))
                    x = x + model.pos.weight[:T].detach()[None]  # public positions, server's weights
                    # (positions are added in the clear by the server: its share, the client's 0)
                p = _share(cr, model.params())
                # a dry run runs the first layer of each model and books all (identical shapes)
                res = encoder.forward(p, x, mask, cfg, meter=meter,
                                layers=dry.loop(range(cfg.n_layers), "secure forward layers"))
            summ = meter.summary()
            if best is None or summ["Total"]["seconds"] < best[1]["Total"]["seconds"]:
                best = (res, summ)
        res, summ = best
        out[f"{cfg.attention}+{cfg.activation}"] = {
            "logits": res["logits"].get_plain_text(),
            "hidden": [h.get_plain_text() for h in res["hidden"]],
            "cost": summ,
        }
    return out


def attention_cost(kinds: list[str], n: int, heads: int = 4, seed: int = 0, const: dict | None = None,
                   scale: float = 2.0, reps: int = 3) -> dict:
    """Table 1: one attention normaliser on private scores (1, heads, n, n) ~ scale * N(0, 1).

    ``const``: {parent: (a, b)} for the freeDiv kinds (default: the paper's constants).
    Per kind: this party's message trace and CrypTen's rounds and bytes of it (deterministic), best
    and median wall seconds, the revealed output and the plaintext scores (for the tolerance test).
    """
    from privtrans.shared.mpc import trace

    cr = compat.crypten()
    const = const or attention.PAPER_FITS
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, heads, n, n, generator=g) * scale
    mask = torch.ones(1, 1, 1, n)
    sx = cr.cryptensor(x, src=_owner(cr, CLIENT))
    comm = compat.comm()
    out = {"scores": x}
    for kind in kinds:
        c = const.get(attention.FREEDIV.get(kind)) if kind in attention.FREEDIV else None
        attention.normalise(kind, sx, mask, c)  # warm-up
        times = []
        for _ in dry.loop(range(max(1, reps)), "attention cost reps"):
            comm.reset_communication_stats()
            events: list = []
            with trace.recording(events):
                t0 = time.perf_counter()
                y = attention.normalise(kind, sx, mask, c)
                times.append(time.perf_counter() - t0)
            stats = comm.get_communication_stats()
        times.sort()
        out[kind] = {"rounds": int(stats["rounds"]), "bytes": int(stats["bytes"]), "trace": events,
                     "seconds": times[0], "median_seconds": times[len(times) // 2],
                     "plain": y.get_plain_text()}
    return out


def attention_cost_3pc(kinds: list[str], n: int, **kw) -> dict:
    """``attention_cost`` under 3-party replicated sharing (the closest CrypTen has to ABY3)."""
    cr = compat.crypten()
    with cr.cfg.temp_override({"mpc.protocol": "replicated"}):
        return attention_cost(kinds, n, **kw)
