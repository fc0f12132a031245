"""Table 1: rounds, bytes and latency of each attention normaliser against n, in CrypTen.

One pair (2PC) or triple (3PC, replicated sharing) of party processes runs every variant at every
n (``secure.attention_cost``). Rounds and bytes are exact and machine-independent; latency on a
network the reader chooses is modelled as rounds x RTT + bytes / bandwidth (CrypTen has no network
simulator), beside the loopback wall time (2 shared cores: the noisiest figure).

Every party's message trace is read (``protocol_counts``, through
``privtrans.shared.mpc.trace.counts``, the one definition the book uses): a protocol's **rounds**
are its longest chain of dependent messages (a replicated multiplication is one round, where
CrypTen's per-party counter logs an isend and an irecv per operand), its **bytes** per link per
direction (8 B a ring element: a party's sends averaged over the parties; ``bytes_total``: every
link; ``bytes_busiest_link``). In 2PC every
message is a reveal exchanged both ways, so rounds equal CrypTen's count and bytes are half its
per-party count (``link_bytes_2pc`` turns the closed form ``closed_form_cost.normaliser_cost``, which
gives CrypTen's count, into them). CrypTen's own counters are kept beside (``crypten_rounds``: the
busiest party's; ``crypten_bytes``: the parties' counts summed and halved). Seconds are the
slowest party's.
"""

from __future__ import annotations

import pandas as pd
import torch

from privtrans.shared.mpc import closed_form_cost, runner, trace
from privtrans.shared.mpc.network import LINKS, modelled_time

from . import attention
from . import secure

#: networks for the modelled latency (privtrans.shared.mpc.network, shared with MERGE)
NETWORKS = LINKS


def latency(nbytes, rounds, rtt: float, bandwidth: float) -> float:
    """Communication time: rounds x RTT + bytes / bandwidth (computation left out)."""
    return modelled_time(nbytes, rounds, bandwidth=bandwidth, rtt=rtt)


def link_bytes_2pc(crypten_bytes: int) -> int:
    """A 2PC protocol's bytes per link per direction from CrypTen's per-party count: every 2PC
    message is a reveal both parties send, which CrypTen logs at each party as 2 n elements."""
    if crypten_bytes % 2:
        raise ValueError(f"a 2PC per-party count is even (both directions of each reveal), got {crypten_bytes}")
    return crypten_bytes // 2


def protocol_counts(per_party: list[dict]) -> dict:
    """One protocol's cost from every party's counters and message trace ({"trace", "rounds",
    "bytes"[, "seconds"]}): rounds, bytes (busiest directed link) and bytes_total from
    ``trace.counts`` (bytes: per link per direction); CrypTen's own counters beside (crypten_rounds the maximum over the parties,
    crypten_bytes their sum halved); seconds (and any other number) the slowest party's."""
    if not per_party:
        raise ValueError("no party's counters to combine")
    if any("trace" not in p for p in per_party):
        raise ValueError("a party returned no message trace: rounds and bytes are read from the traces")
    c = trace.counts([p["trace"] for p in per_party])
    out = {"rounds": c["rounds"], "bytes": c["bytes"], "bytes_total": c["bytes_total"],
           "bytes_busiest_link": c["bytes_busiest_link"],
           "crypten_rounds": max(p["rounds"] for p in per_party),
           "crypten_bytes": sum(p["bytes"] for p in per_party) / 2}
    for key in per_party[0]:
        vals = [p[key] for p in per_party]
        if key in ("rounds", "bytes", "trace") or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                          for v in vals):
            continue
        out[key] = max(vals)
    return out


def parties_cost(results: list[dict], kinds) -> dict:
    """{kind: ``protocol_counts``} from the per-rank results of ``secure.attention_cost`` (every party)."""
    return {k: protocol_counts([{f: r[k][f] for f in ("rounds", "bytes", "seconds", "trace")} for r in results])
            for k in kinds}


def parties_meter(results: list[dict]) -> dict:
    """Per scheme, per meter group: ``protocol_counts`` over every party of ``secure.secure_forward``
    (rank -> {"att+act": {"cost": {group: {..., "trace"}}}}) -> {"att+act": {group: {...}}}."""
    return {k: {g: protocol_counts([r[k]["cost"][g] for r in results]) for g in results[0][k]["cost"]}
            for k in results[0]}


def measure(ns, heads: int, parties: int = 2, reps: int = 3, seed: int = 0, kinds=attention.ATTENTIONS,
            timeout: float = 300) -> pd.DataFrame:
    """One row per (n, variant): rounds and bytes of the protocol (``protocol_counts``: the longest
    chain, the busiest link one way; CrypTen's own counters beside), the slowest party's best wall
    seconds, max |error| (party 0's revealed output)."""
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
                             bytes_total=c["bytes_total"], bytes_busiest_link=c["bytes_busiest_link"],
                             crypten_rounds=c["crypten_rounds"],
                             crypten_bytes=c["crypten_bytes"], seconds=c["seconds"],
                             max_abs_error=float((res[k]["plain"] - ref).abs().max())))
    df = pd.DataFrame(rows)
    for name, net in NETWORKS.items():
        df[f"{name} s"] = [latency(b, r, **net) for b, r in zip(df.bytes, df.rounds)]
    return df


def closed_form(ns, heads: int) -> pd.DataFrame:
    """2PC rounds and bytes per link per direction from ``closed_form_cost.normaliser_cost`` (no processes)."""
    rows = []
    for n in ns:
        for k in attention.ATTENTIONS:
            b, r = closed_form_cost.normaliser_cost(k, heads * n, n)
            rows.append(dict(n=n, variant=k, bytes=link_bytes_2pc(b), rounds=r))
    return pd.DataFrame(rows)


def with_speedups(df: pd.DataFrame, cols=("seconds", "LAN s", "WAN s")) -> pd.DataFrame:
    """Adds ``speed-up <col>`` = Softmax's value / the variant's, per (parties, n)."""
    out = df.copy()
    for c in cols:
        base = out[out.variant == "softmax"].set_index(["parties", "n"])[c]
        out[f"speed-up {c}"] = [base[(p, n)] / v if v > 0 else float("inf")
                                for p, n, v in zip(out.parties, out.n, out[c])]
    return out
