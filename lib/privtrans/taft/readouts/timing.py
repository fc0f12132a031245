"""Table 8: training and inference cost of the tangent model against the non-linear one, judged on
interleaved timing rounds.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from privtrans.book.paired import paired_difference
from privtrans.book.readouts import ratio as ratio_of


def cost(times: pd.DataFrame) -> dict:
    """``times``: (round, batch, feed, phase, method, seconds) per example (``cost.table``). TAFT /
    NLFT per (phase, batch, feed): the geometric mean over the rounds of each round's ratio; at batch
    1 from images (the paper's timing) also its paired interval over the rounds, as log(NLFT / TAFT)
    (a claim "at most r×" holds when it clears −log r); how much caching the frozen features and
    batching speed up TAFT's train step (the ratio of the medians over the rounds)."""
    times = times if "round" in times else times.assign(round=0)
    keys = ["batch", "feed", "phase"]
    rounds = sorted(times["round"].unique())

    def per_round(b, f, p, m):
        sel = times[(times.batch == b) & (times.feed == f) & (times.phase == p) & (times.method == m)]
        by = dict(zip(sel["round"], sel.seconds))
        return [math.log(by[r]) if by.get(r, 0) > 0 else None for r in rounds]

    ratio, log_ratio = {}, {}
    for b, f, p in sorted(set(map(tuple, times[keys].to_numpy().tolist())), key=lambda k: (k[0], k[1], k[2])):
        taft, nlft = per_round(b, f, p, "TAFT"), per_round(b, f, p, "NLFT")
        d = [x - y for x, y in zip(taft, nlft) if x is not None and y is not None]
        ratio[f"{p} b={b} {f}"] = math.exp(float(np.mean(d))) if d else None
        log_ratio[(p, b, f)] = paired_difference(nlft, taft).as_dict()
    b1, bmax = int(times.batch.min()), int(times.batch.max())
    med = times.groupby(keys + ["method"]).seconds.median()
    return {"ratio": ratio, "batches": [b1, bmax], "rounds": len(rounds),
            "train_ratio_b1_images": ratio[f"train b={b1} images"],
            "inference_ratio_b1_images": ratio[f"inference b={b1} images"],
            "train_log_nlft_over_taft_b1_images": log_ratio[("train", b1, "images")],
            "inference_log_nlft_over_taft_b1_images": log_ratio[("inference", b1, "images")],
            "cached_speedup": ratio_of(med.get((b1, "images", "train", "TAFT")), med.get((bmax, "cached", "train", "TAFT")))}
