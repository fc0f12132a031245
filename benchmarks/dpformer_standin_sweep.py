"""DPFormer's Amazon stand-in: which generator lets user-level DP learn beyond MostPopular (Table 2).

The stand-in (``privtrans.dpformer.synthetic.amazon_like``) is designed, not found: its parameters
are chosen here, on a seed range the book never judges on (seeds 1000 and up; the book's judged seeds
are ``privtrans.book.paired.seeds(0, 5)``), then frozen in ``lib/privtrans/dpformer/profile.yaml``.
For each generator setting and sweep seed it draws the data (the seed is the generator's and the
training's), trains the vanilla Transformer at the given ε and non-privately with the Table 2
notebook's training settings at a profile, and prints NDCG@10 − MostPopular of each, in points, and
the oracle's. The table in ``data/dpformer/README.md`` is this script's output.

Usage (one torch thread per run, as the book trains):
  OMP_NUM_THREADS=1 .venv/bin/python benchmarks/dpformer_standin_sweep.py --seeds 1000 1001 \
      --set succ_power=1.0 --set succ_power=1.0,n_items=800
"""

from __future__ import annotations

import argparse
import time

from privtrans.book import profiles
from privtrans.dpformer import experiments, train


def parse_setting(text: str) -> dict:
    """'succ_power=1.0,n_items=800' -> {'succ_power': 1.0, 'n_items': 800}."""
    out = {}
    for part in filter(None, text.split(",")):
        k, v = part.split("=")
        out[k.strip()] = float(v) if "." in v else int(v)
    return out


def one(cfg: dict, generator: dict, seed: int, epsilon: float, methods) -> dict:
    cfg = dict(cfg, generator=dict(cfg["generator"], **generator, seed=seed))
    t0 = time.perf_counter()
    b = experiments.load(cfg)
    refs = {r["method"]: r for r in experiments.reference_rows(b, cfg["max_len"])}
    row = {"setting": generator, "seed": seed, "users": b.data.n_users, "items": b.data.n_items,
           "most_popular": refs["most_popular"]["ndcg@10"], "oracle": refs["oracle"]["ndcg@10"]}
    for method, eps in [(m, epsilon) for m in methods] + [("transformer", None)]:
        r = train.train_run(train.spec_from_cfg(cfg, method, eps, seed), b.split)
        row[f"{method}@{eps}"] = r["ndcg@10"]
        row[f"{method}@{eps} s"] = r["seconds"]
    row["seconds"] = time.perf_counter() - t0
    return row


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="ci")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1000, 1001])
    ap.add_argument("--epsilon", type=float, default=5.0)
    ap.add_argument("--methods", nargs="+", default=["transformer"])
    ap.add_argument("--set", dest="settings", action="append", default=[],
                    help="generator (and training: epochs=, d=, ...) overrides, comma-separated k=v")
    ap.add_argument("--train", default="", help="training overrides for every setting, comma-separated k=v")
    a = ap.parse_args(argv)
    cfg = dict(profiles.settings("dpformer", "table2_amazon_like", a.profile), **parse_setting(a.train))
    gen_keys = set(cfg["generator"]) | {"alpha", "mean_len", "min_len", "max_len", "rho", "window",
                                        "n_successors", "succ_power", "k"}
    for text in a.settings or [""]:
        setting = parse_setting(text)
        gen = {k: v for k, v in setting.items() if k in gen_keys and k != "max_len"}
        run_cfg = dict(cfg, **{k: v for k, v in setting.items() if k not in gen})
        for seed in a.seeds:
            r = one(run_cfg, gen, seed, a.epsilon, a.methods)
            dp = {k: v for k, v in r.items() if "@" in k and not k.endswith(" s") and not k.endswith("None")}
            print(f"| {text or 'profile'} | {seed} | {r['users']} | {r['items']} | "
                  + " | ".join(f"{100 * (v - r['most_popular']):+.2f}" for v in dp.values())
                  + f" | {100 * (r['transformer@None'] - r['most_popular']):+.2f} | {100 * r['most_popular']:.2f} | "
                  f"{100 * r['oracle']:.2f} | {r['seconds']:.0f} s "
                  f"({', '.join(f'{k} {v:.0f}' for k, v in r.items() if k.endswith(' s'))}) |", flush=True)


if __name__ == "__main__":
    main()
