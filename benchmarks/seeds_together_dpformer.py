"""DPFormer chapter, issue 21: k seeds of one DP-SGD configuration trained apart (``train.train_run``,
Phantom Clipping, one after another) and together (``train.train_together``: one vectorised model,
per-sample gradients by vmap), at the ``ci`` settings of the premise table and of Table 1 (ML-100K),
in this process on one torch thread.

Only the number of epochs is cut (``EPOCHS``): the per-step work (users, B, L, d, blocks, items,
dropout, σ) is the ci one; evaluations run at the ci cadence (every ``eval_every`` epochs, and at the
end). "one" is the mean time of the k runs apart (``apart / k``), so load on a shared machine weighs
on every column alike.

"floor" (see ``seeds_together.py``): one run (Phantom Clipping, as apart) on the users repeated k
times at k × the batch: the same sample rate, so the same steps and σ.

Usage: .venv/bin/python benchmarks/seeds_together_dpformer.py [--k 5]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import torch

# (experiment, method, ε, epochs timed): the ci settings of each experiment, fewer epochs
CASES = (
    ("premise_table", "dpformer", 3, 1),
    ("table1_movielens", "dpformer", 5, 2),
    ("table1_movielens", "transformer", 5, 2),
)


def _case(experiment: str, method: str, epsilon, epochs: int, k: int) -> dict:
    from privtrans.book.profiles import settings
    from privtrans.dpformer import experiments, train

    cfg = settings("dpformer", experiment, "ci")
    b = experiments.load(cfg)
    spec = train.spec_from_cfg(cfg, method, epsilon, 0, epochs=epochs, eval_every=min(epochs, cfg["eval_every"]))
    n = len(b.split.train)
    if epsilon is not None:
        train.privacy_plan(float(epsilon), n, spec.batch_size, spec.epochs)  # σ search: memoised, not timed
    seeds = list(range(k))
    t = time.perf_counter()
    for s in seeds:
        train.train_run(spec.with_(seed=s), b.split, device="cpu")
    apart = time.perf_counter() - t
    t = time.perf_counter()
    train.train_together(spec, b.split, seeds, device="cpu")
    together = time.perf_counter() - t
    sp = b.split
    wide = replace(sp, train=np.tile(sp.train, (k, 1)), test_input=np.tile(sp.test_input, (k, 1)),
                   test_target=np.tile(sp.test_target, k))
    wspec = spec.with_(batch_size=spec.batch_size * k)
    if epsilon is not None:
        train.privacy_plan(float(epsilon), k * n, wspec.batch_size, spec.epochs)
    t = time.perf_counter()
    train.train_run(wspec, wide, device="cpu")
    floor = time.perf_counter() - t
    torch.set_num_threads(1)
    where = "premise" if experiment.startswith("premise") else "Table 1, ML-100K"
    return {"chapter": "dpformer",
            "loop": f"DP-SGD training, {method} ({where}, ε = {epsilon}, B = {spec.batch_size}, {epochs} ep)",
            "one": apart / k, "apart": apart, "together": together, "floor": floor}


def measure(k: int = 5) -> list[dict]:
    torch.set_num_threads(1)
    return [_case(*c, k=k) for c in CASES]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    rows = measure(args.k)
    print(f"k = {args.k} seeds; seconds on one torch thread")
    for r in rows:
        print(f"{r['loop']}: one {r['one']:.2f}s, apart {r['apart']:.2f}s, together {r['together']:.2f}s; "
              f"floor {r['floor']:.2f}s; together/one {r['together'] / r['one']:.2f}, floor/one {r['floor'] / r['one']:.2f}, "
              f"apart/together {r['apart'] / r['together']:.2f}")


if __name__ == "__main__":
    main()
