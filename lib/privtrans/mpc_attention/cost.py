"""Table 1: rounds, bytes and latency of each attention normaliser against n, in CrypTen.

One pair (2PC) or triple (3PC, replicated sharing) of party processes runs every variant at every
n (``secure.attention_cost``). Rounds and bytes are exact and machine-independent; latency on a
network the reader chooses is modelled as rounds x RTT + bytes / bandwidth (CrypTen has no network
simulator), beside the loopback wall time (2 shared cores: the noisiest figure).
"""

from __future__ import annotations

import pandas as pd
import torch

from privtrans.shared.mpc import cost_model, runner
from privtrans.shared.mpc.network import LINKS, modelled_time

from . import attention as A
from . import secure

#: networks for the modelled latency (privtrans.shared.mpc.network, shared with MERGE)
NETWORKS = LINKS


def latency(nbytes, rounds, rtt: float, bandwidth: float) -> float:
    """Communication time: rounds x RTT + bytes / bandwidth (computation left out)."""
    return modelled_time(nbytes, rounds, bandwidth=bandwidth, rtt=rtt)


def measure(ns, heads: int, parties: int = 2, reps: int = 3, seed: int = 0, kinds=A.ATTENTIONS,
            timeout: float = 300) -> pd.DataFrame:
    """One row per (n, variant): rounds, bytes (per party), best wall seconds, max |error|."""
    fn = secure.attention_cost if parties == 2 else secure.attention_cost_3pc
    rows = []
    for n in ns:
        res = runner.run(fn, list(kinds), n, heads=heads, reps=reps, seed=seed, world_size=parties,
                         timeout=timeout)[0]
        x = res["scores"]
        for k in kinds:
            ref = A.normalise(k, x, torch.ones(1, 1, 1, n), A.PAPER_CONSTANTS.get(A.FREEDIV.get(k)))
            r = res[k]
            rows.append(dict(parties=parties, n=n, variant=k, rounds=r["rounds"], bytes=r["bytes"],
                             seconds=r["seconds"], max_abs_error=float((r["plain"] - ref).abs().max())))
    df = pd.DataFrame(rows)
    for name, net in NETWORKS.items():
        df[f"{name} s"] = [latency(b, r, **net) for b, r in zip(df.bytes, df.rounds)]
    return df


def closed_form(ns, heads: int) -> pd.DataFrame:
    """2PC bytes and rounds from ``cost_model.normaliser_cost`` (no processes)."""
    return pd.DataFrame([dict(n=n, variant=k, **dict(zip(("bytes", "rounds"), cost_model.normaliser_cost(k, heads * n, n))))
                         for n in ns for k in A.ATTENTIONS])


def with_speedups(df: pd.DataFrame, cols=("seconds", "LAN s", "WAN s")) -> pd.DataFrame:
    """Adds ``speed-up <col>`` = Softmax's value / the variant's, per (parties, n)."""
    out = df.copy()
    for c in cols:
        base = out[out.variant == "softmax"].set_index(["parties", "n"])[c]
        out[f"speed-up {c}"] = [base[(p, n)] / v if v > 0 else float("inf")
                                for p, n, v in zip(out.parties, out.n, out[c])]
    return out
