"""Rounds and bytes of each attention normaliser as a ratio to Softmax, n in {32, 128}.

Back-ends: CrypTen 2PC (measured, and the closed form it must equal) and CrypTen 3PC replicated
(measured), and SecretFlow SPU with ABY3 and SEMI2K (measured in its own environment: `make spu`;
rounds there are the send actions per party). Usage: python benchmarks/mpc_attention_cost.py [--heads 4]
"""

from __future__ import annotations

import argparse

import pandas as pd

from privtrans.mpc_attention import attention
from privtrans.mpc_attention import normaliser_cost, spu


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ns", type=int, nargs="+", default=[32, 128])
    a = ap.parse_args(argv)
    closed = normaliser_cost.closed_form(a.ns, a.heads).assign(parties="2PC closed form")
    frames = [closed]
    for parties in (2, 3):
        df = normaliser_cost.measure(a.ns, a.heads, parties=parties, reps=1, timeout=600)
        frames.append(df.assign(parties=f"{parties}PC measured")[closed.columns.tolist()])
    for protocol in spu.PROTOCOLS:
        rows = spu.normaliser_cost(list(attention.ATTENTIONS), a.ns, a.heads, 0, protocol)
        df = pd.DataFrame(rows).rename(columns={"kind": "variant"}).assign(parties=f"SPU {protocol}")
        frames.append(df[closed.columns.tolist()])
    print(f"{'back-end':18s} {'n':>4s} {'variant':16s} {'rounds':>8s} {'/softmax':>9s} {'bytes':>12s} {'/softmax':>9s}")
    for f in frames:
        for (p, n), g in f.groupby(["parties", "n"], sort=False):
            base = g[g.variant == "softmax"].iloc[0]
            for _, r in g.iterrows():
                print(f"{p:18s} {n:4d} {attention.LABELS[r.variant]:16s} {r.rounds:8.0f} {r.rounds / base.rounds:9.3f} "
                      f"{r.bytes:12.0f} {r.bytes / base.bytes:9.3f}")


if __name__ == "__main__":
    main()
