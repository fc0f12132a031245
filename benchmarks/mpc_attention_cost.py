"""Attention normalisers under MPC (the MPC-attention chapter's Table 1): for n in {32, 128}, the
rounds and bytes of each normaliser as a ratio to Softmax's, in CrypTen with 2 parties (Beaver)
and 3 parties (replicated sharing), and in SecretFlow SPU with ABY3 and SEMI2K (needs `make spu`).

Rounds and bytes are CrypTen's exact per-party counts for one call on scores of shape
(1, heads, n, n); the parties are separate processes on this machine (privtrans.shared.mpc.runner),
the same party function as the notebook; SPU's are its profiler's sent bytes (all parties) and send
actions (busiest party). Prints a table; no targets (the chapter's claims judge the orderings).

Usage: .venv/bin/python benchmarks/mpc_attention_cost.py [--heads 4]
"""

import argparse

import pandas as pd

from privtrans.mpc_attention import spu
from privtrans.mpc_attention.normalisers import KINDS, LABELS
from privtrans.shared.mpc import runner

PROTOCOLS = {"beaver": 2, "replicated": 3}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--lengths", type=int, nargs="+", default=[32, 128])
    args = ap.parse_args()
    rows = []
    for protocol, parties in PROTOCOLS.items():
        rows += runner.run("privtrans.mpc_attention.parties:normaliser_cost", list(KINDS), args.lengths, args.heads,
                           0, 1, None, protocol, world_size=parties)[0]
    for protocol in spu.PROTOCOLS:
        rows += spu.normaliser_cost(list(KINDS), args.lengths, args.heads, 0, protocol)
    df = pd.DataFrame(rows)
    base = df[df.kind == "softmax"].set_index(["protocol", "n"])
    df["rounds / Softmax"] = [r / base.loc[(p, n), "rounds"] for p, n, r in zip(df.protocol, df.n, df.rounds)]
    df["bytes / Softmax"] = [b / base.loc[(p, n), "bytes"] for p, n, b in zip(df.protocol, df.n, df.bytes)]
    df["attention"] = df.kind.map(LABELS)
    with pd.option_context("display.float_format", "{:.4g}".format, "display.width", 140):
        print(df[["protocol", "parties", "n", "attention", "rounds", "bytes", "rounds / Softmax", "bytes / Softmax"]]
              .to_string(index=False))


if __name__ == "__main__":
    main()
