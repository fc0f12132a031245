"""Party functions (run by ``privtrans.shared.mpc.runner.run`` in every party process)."""

from __future__ import annotations

import time

import torch

from privtrans.shared.mpc import compat

from .normalisers import CrypTenOps, TorchOps, normalise

PROTOCOLS = ("beaver", "replicated")


def normaliser_cost(kinds: list, lengths: list, heads: int = 4, seed: int = 0, repeats: int = 3,
                    fits: dict | None = None, protocol: str = "beaver") -> list[dict]:
    """Table 1: each normaliser on secret scores of shape (1, heads, n, n), x ~ 2·N(0, 1) (shared
    by party 0). Per (kind, n): rounds and bytes of one call (CrypTen's per-party counters), the
    fastest of ``repeats`` timed calls after a warm-up, and the largest |secure − plaintext|.
    ``protocol``: 'beaver' (2 or more parties, additive sharing with Beaver triples) or
    'replicated' (3 parties, replicated sharing like the paper's ABY3)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    cr = compat.crypten()
    with cr.cfg.temp_override({"mpc.protocol": protocol}):
        return _normaliser_cost(cr, kinds, lengths, heads, seed, repeats, fits, protocol)


def _normaliser_cost(cr, kinds, lengths, heads, seed, repeats, fits, protocol):
    comm = compat.comm()
    ops, plain = CrypTenOps(cr), TorchOps()
    g = torch.Generator().manual_seed(seed)
    rows = []
    for n in lengths:
        x = 2.0 * torch.randn(1, heads, n, n, generator=g)
        xs = cr.cryptensor(x, src=0)
        for kind in kinds:
            want = normalise(x, kind, plain, fits)
            normalise(xs, kind, ops, fits)  # warm-up (first-call setup is not the protocol's cost)
            s0 = comm.get_communication_stats()
            out = normalise(xs, kind, ops, fits)
            s1 = comm.get_communication_stats()
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                normalise(xs, kind, ops, fits)
                times.append(time.perf_counter() - t0)
            err = float((out.get_plain_text() - want).abs().max())
            rows.append({"kind": kind, "n": n, "heads": heads, "rounds": s1["rounds"] - s0["rounds"],
                         "bytes": int(s1["bytes"] - s0["bytes"]), "seconds": min(times),
                         "max_abs_err": err, "max_abs_plain": float(want.abs().max()), "protocol": protocol,
                         "parties": comm.get_world_size()})
    return rows
