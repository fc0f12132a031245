"""Table 1: rounds, bytes and latency of each attention normaliser against n, in CrypTen.

One pair (2PC) or triple (3PC, replicated sharing) of party processes runs every variant at every
n (``secure.attention_cost``). Rounds and bytes are exact and machine-independent; latency on a
network the reader chooses is modelled as rounds x RTT + bytes / bandwidth (CrypTen has no network
simulator), beside the loopback wall time (2 shared cores: the noisiest figure).

Every party's counters are read (``parties_cost``). CrypTen counts per party, and in 3-party
replicated sharing the parties' counts differ (at n = 32 Softmax logs fewer rounds at party 0 than
at parties 1 and 2). A protocol's **rounds** are the longest chain of dependent messages, so they are
the MAXIMUM over the parties; its **bytes** are the traffic of all parties: the SUM of the per-party
counts, halved, since CrypTen logs every message at its sender and again at its receiver (its own
note in ``crypten.communicator.communicator._logging``). In 2PC both parties log the same counts,
so rounds and bytes equal party 0's (what the closed form ``cost_model.normaliser_cost`` gives).
Seconds are the slowest party's.
"""

from __future__ import annotations

import pandas as pd
import torch

from privtrans.shared.mpc import cost_model, runner
from privtrans.shared.mpc.network import LINKS, modelled_time

from . import attention
from . import secure

#: networks for the modelled latency (privtrans.shared.mpc.network, shared with MERGE)
NETWORKS = LINKS


def latency(nbytes, rounds, rtt: float, bandwidth: float) -> float:
    """Communication time: rounds x RTT + bytes / bandwidth (computation left out)."""
    return modelled_time(nbytes, rounds, bandwidth=bandwidth, rtt=rtt)


def combine_counts(per_party: list[dict]) -> dict:
    """One protocol cost from each party's counters {"rounds", "bytes"[, "seconds"], ...}: rounds the
    maximum over the parties (the longest chain of messages), bytes the sum over the parties halved
    (every message is logged by its sender and its receiver), seconds (and any other number) the
    maximum (the slowest party)."""
    if not per_party:
        raise ValueError("no party's counters to combine")
    out = {}
    for key in per_party[0]:
        vals = [p[key] for p in per_party]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            continue
        if key == "bytes":
            total = sum(vals)
            out[key] = total // 2 if isinstance(total, int) and total % 2 == 0 else total / 2
        else:
            out[key] = max(vals)
    return out


def parties_cost(results: list[dict], kinds) -> dict:
    """{kind: combined counts} from the per-rank results of ``secure.attention_cost`` (every party)."""
    return {k: combine_counts([{f: r[k][f] for f in ("rounds", "bytes", "seconds")} for r in results])
            for k in kinds}


def parties_meter(results: list[dict]) -> dict:
    """Per scheme, per meter group: the combined counts over every party of ``secure.secure_forward``
    (rank -> {"att+act": {"cost": {group: {...}}}}) -> {"att+act": {group: {...}}}."""
    return {k: {g: combine_counts([r[k]["cost"][g] for r in results]) for g in results[0][k]["cost"]}
            for k in results[0]}


def measure(ns, heads: int, parties: int = 2, reps: int = 3, seed: int = 0, kinds=attention.ATTENTIONS,
            timeout: float = 300) -> pd.DataFrame:
    """One row per (n, variant): rounds (max over the parties), bytes (all parties' traffic), the
    slowest party's best wall seconds, max |error| (party 0's revealed output)."""
    fn = secure.attention_cost if parties == 2 else secure.attention_cost_3pc
    rows = []
    for n in ns:
        every = runner.run(fn, list(kinds), n, heads=heads, reps=reps, seed=seed, world_size=parties,
                           timeout=timeout)
        res, counts = every[0], parties_cost(every, kinds)
        x = res["scores"]
        for k in kinds:
            ref = attention.normalise(k, x, torch.ones(1, 1, 1, n), attention.PAPER_FITS.get(attention.FREEDIV.get(k)))
            c = counts[k]
            rows.append(dict(parties=parties, n=n, variant=k, rounds=c["rounds"], bytes=c["bytes"],
                             seconds=c["seconds"], max_abs_error=float((res[k]["plain"] - ref).abs().max())))
    df = pd.DataFrame(rows)
    for name, net in NETWORKS.items():
        df[f"{name} s"] = [latency(b, r, **net) for b, r in zip(df.bytes, df.rounds)]
    return df


def closed_form(ns, heads: int) -> pd.DataFrame:
    """2PC bytes and rounds from ``cost_model.normaliser_cost`` (no processes)."""
    return pd.DataFrame([dict(n=n, variant=k, **dict(zip(("bytes", "rounds"), cost_model.normaliser_cost(k, heads * n, n))))
                         for n in ns for k in attention.ATTENTIONS])


def with_speedups(df: pd.DataFrame, cols=("seconds", "LAN s", "WAN s")) -> pd.DataFrame:
    """Adds ``speed-up <col>`` = Softmax's value / the variant's, per (parties, n)."""
    out = df.copy()
    for c in cols:
        base = out[out.variant == "softmax"].set_index(["parties", "n"])[c]
        out[f"speed-up {c}"] = [base[(p, n)] / v if v > 0 else float("inf")
                                for p, n, v in zip(out.parties, out.n, out[c])]
    return out
