"""Five seeds for the price of two: each chapter's main training loop timed for 1 seed, for k seeds
one after another ("apart") and for k seeds as one vectorised model ("together",
``privtrans.shared.seeds_together``), all in this one process on one torch thread, so load on the
machine affects every column alike.

Targets (issue 21): together ≤ 2 × one for TAFT's fine-tune and the MPC-attention distillation,
≤ 3 × one for DPFormer's DP training. The per-chapter measurements live beside this file
(``seeds_together_<chapter>.py``, each a ``measure(k)``).

``floor``: one model on the data repeated k times at k × the batch (the same steps, each with k
seeds' arithmetic and one seed's per-operation overhead). Training k seeds does at least that
arithmetic, so ``floor / one`` is about the least ``together / one`` can be here (up to how well the
batched kernels run: a stack can come in slightly under its floor): a target well below it is out
of reach of vectorising, on this machine. Each chapter's file says how its floor is built.

Usage: .venv/bin/python benchmarks/seeds_together.py [--k 5] [--chapters taft mpc_attention dpformer]
"""

import argparse
import importlib
import sys
from pathlib import Path

import pandas as pd
import torch

CHAPTERS = ("taft", "mpc_attention", "dpformer")
TARGET = {"taft": 2.0, "mpc_attention": 2.0, "dpformer": 3.0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--chapters", nargs="+", default=list(CHAPTERS), choices=CHAPTERS)
    args = ap.parse_args()
    torch.set_num_threads(1)
    sys.path.insert(0, str(Path(__file__).parent))
    rows = []
    for ch in args.chapters:
        rows += importlib.import_module(f"seeds_together_{ch}").measure(args.k)
    t = pd.DataFrame(rows)
    t["together / one"] = t.together / t.one
    t["floor / one"] = t.floor / t.one
    t["together / floor"] = t.together / t.floor
    t["apart / together"] = t.apart / t.together
    t["target (together / one)"] = t.chapter.map(TARGET)
    t["meets target"] = t["together / one"] <= t["target (together / one)"]
    t["target reachable"] = t["floor / one"] <= t["target (together / one)"]
    print(f"k = {args.k} seeds; seconds on one torch thread")
    with pd.option_context("display.float_format", "{:.3g}".format, "display.width", 200):
        print(t.to_string(index=False))


if __name__ == "__main__":
    main()
