"""TAFT's cost over plain fine-tuning (Table 8): TAFT-1 / NLFT-1 seconds per example of a train step
and of inference, at batch 1 and 32, fed from images or from cached features of the frozen blocks.

Uses the chapter's backbone from the run cache (pretrained on a miss, about 30 s) and
privtrans.taft.tangent_cost, the same code as the Table 8 notebook; one torch thread; the ratios come from
one run, interleaved, so load on the machine affects both sides alike. Prints a table; no targets
(the chapter's claims judge them).

Usage: .venv/bin/python benchmarks/taft_cost.py [--repeats 30]
"""

import argparse

import pandas as pd
import torch

from privtrans.book.profiles import settings
from privtrans.taft import tangent_cost, experiments as X


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = settings("taft", "cost", "ci")
    bench = X.Bench(cfg["backbone"], cfg["backbone_seed"], cfg["task_cfg"], cfg["train_per_class"])
    task = bench.task(cfg["task"])
    t = pd.DataFrame(tangent_cost.table(bench.vit, task.x_train, task.y_train, task.classes, (1, 32), args.repeats))
    wide = t.pivot_table(index=["phase", "batch", "feed"], columns="method", values="seconds")
    wide["TAFT / NLFT"] = wide.TAFT / wide.NLFT
    with pd.option_context("display.float_format", "{:.3g}".format):
        print(wide.to_string())


if __name__ == "__main__":
    main()
