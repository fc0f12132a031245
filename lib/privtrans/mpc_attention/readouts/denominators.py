"""Figures 5-7 (notebook 01): the fitted denominators f(n) = a·n^b beside the paper's, judged across
the seeds' teachers, and the teachers' own metrics."""

from __future__ import annotations

from privtrans.book.paired import paired_difference
from privtrans.book.readouts import mean, num

from .by_seed import _regression


#: the tolerance on a refitted exponent (Figures 6 and 7): the paper gives none; ours, on a stand-in
CONSTANT_B_TOLERANCE = 0.1


def fig5_7_denominators(t: dict, relu_eps: dict | None = None, seed_teachers: list | None = None) -> dict:
    """The fitted constants beside the paper's, and how far apart per head the curves are.

    ``t``: the notebook seed's teacher (its constants are the figure's). ``seed_teachers``: the same
    task's teachers at every paired seed (``t`` among them): their exponents judge the claims, as
    paired 95 % t intervals across seeds of 1 − b (sub-linear: b < 1) and of b − (paper − 0.1),
    (paper + 0.1) − b (within 0.1 of the paper's), since one teacher's exponent is one draw of a
    seed-dependent quantity. ``relu_eps``: ``fit.relu_eps_change`` of the teacher (how far 2ReLU's
    stabiliser moves the weights from the exact relu(x)/sum relu(x)), recorded as given."""
    import numpy as np

    from ..attention import LABELS, PAPER_FITS

    out = {"teacher_metric": num(t["metric"]), "b_within_paper": {}}
    for kind, tag in (("softmax", "softmax"), ("2quad", "quad2")):  # names must not start with a digit
        a, b = t["const"][kind]
        pb = PAPER_FITS[kind][1]
        out[f"{tag}_a"], out[f"{tag}_b"] = num(a), num(b)
        bh = np.array(t["const_per_head"][kind][1], dtype=float)
        out[f"{tag}_b_spread_per_head"] = num(bh.max() - bh.min())
        if seed_teachers is not None:
            bs = [num(s["const"][kind][1]) for s in seed_teachers]
            n = len(bs)
            out[f"{tag}_b_by_seed"] = bs
            out[f"{tag}_sublinear"] = paired_difference([1.0] * n, bs).as_dict()
            label, tol = LABELS[kind], CONSTANT_B_TOLERANCE
            out["b_within_paper"][f"{label}: b − (paper − {tol})"] = paired_difference(bs, [pb - tol] * n).as_dict()
            out["b_within_paper"][f"{label}: (paper + {tol}) − b"] = paired_difference([pb + tol] * n, bs).as_dict()
    if relu_eps is not None:
        out["relu_eps"] = {k: (num(v) if isinstance(v, float) else v) for k, v in relu_eps.items()}
    return out


def teacher_metrics(teachers: dict, seeds: list[int]) -> dict:
    """The teachers of every task and seed (``experiments.teachers``): one table row per task (mean,
    sd and each seed's dev metric, training seconds) and {task: [metric per seed]} to record."""
    import statistics

    rows, by_task = [], {}
    for task, ts in teachers.items():
        if len(ts) != len(seeds):
            raise ValueError(f"task {task!r}: {len(ts)} teachers for {len(seeds)} seeds {seeds}")
        m = [num(t["metric"]) for t in ts]
        by_task[task] = m
        rows.append({"task": task, "metric": "correlation" if _regression(ts) else "accuracy",
                     "mean": mean(m), "sd": statistics.stdev(m) if len(m) > 1 else None,
                     **{f"seed {sd}": v for sd, v in zip(seeds, m)},
                     "seconds (mean)": mean([t.get("seconds") for t in ts])})
    return {"rows": rows, "by_task": by_task}
