"""The backbone's pretraining, Table 1 (fine-tuning on the near and far task) and Table 3 (DP
fine-tuning): what their notebooks record.
"""

from __future__ import annotations

import pandas as pd

from privtrans.book import dry
from privtrans.book.paired import paired_difference
from privtrans.book.readouts import mean, num, strict

from .by_seed import FAR, NEAR, _avg, _minus, _seeds, per_seed


def pretraining(backbone, min_val_acc: float) -> dict:
    """The backbone's gate: validation accuracy at least ``min_val_acc`` (not judged, None, for an MAE
    backbone, which has no head, or in a dry run, whose backbone saw one batch)."""
    judged = backbone.val_acc is not None and not dry.active()
    return {"val_acc": num(backbone.val_acc), "seconds": num(backbone.seconds), "epochs": len(backbone.history),
            "meets_target": bool(backbone.val_acc >= min_val_acc) if judged else None,
            "min_val_acc": min_val_acc}


def table1_finetuning(runs: pd.DataFrame, margin: float, near: str = NEAR, far: str = FAR) -> dict:
    """``runs``: one row per (task, method, seed) with ``accuracy``. Methods: FC, NLFT-1, TAFT-1,
    NLFT-2, TAFT-2 and 'TAFT-1 (paper setting)'. ``margin``: how far below NLFT an interval's ``held``
    allows TAFT to be (the claims judge against their own margins)."""
    seeds = _seeds(runs)
    acc = lambda t, m: per_seed(runs, seeds, task=t, method=m)  # noqa: E731
    gap = {t: _minus(acc(t, "NLFT-1"), acc(t, "TAFT-1")) for t in (near, far)}
    means = {t: {m: mean(acc(t, m)) for m in sorted(runs[runs.task == t].method.unique())}
             for t in sorted(runs.task.unique())}
    tasks = sorted(runs.task.unique())
    return {
        "seeds": seeds,
        "accuracy": means,
        "near_within": paired_difference(acc(near, "TAFT-1"), acc(near, "NLFT-1"), margin=-margin).as_dict(),
        "far_gap_larger": paired_difference(gap[far], gap[near]).as_dict(),
        "gap_near": mean(gap[near]), "gap_far": mean(gap[far]),
        "taft_beats_fc": paired_difference(_avg(*(acc(t, "TAFT-1") for t in tasks)),
                                           _avg(*(acc(t, "FC") for t in tasks))).as_dict(),
        "taft_k_beats_fc": paired_difference(_avg(*(acc(t, "TAFT-2") for t in tasks)),
                                             _avg(*(acc(t, "FC") for t in tasks))).as_dict(),
        # the paper's "differing on average only by 1.0 %" (TAFT-7 against NLFT-7, its Average row): TAFT-k
        # minus NLFT-k on each seed's mean over the tasks
        "taft_k_within": paired_difference(_avg(*(acc(t, "TAFT-2") for t in tasks)),
                                           _avg(*(acc(t, "NLFT-2") for t in tasks)), margin=-margin).as_dict(),
        "paper_setting_near_within": paired_difference(acc(near, "TAFT-1 (paper setting)"), acc(near, "NLFT-1"),
                                                       margin=-margin).as_dict(),
        "tuned_beats_paper_setting": paired_difference(acc(near, "TAFT-1"), acc(near, "TAFT-1 (paper setting)")).as_dict(),
    }


def dp_finetuning(runs: pd.DataFrame, full_block_params: int | None = None) -> dict:
    """``runs``: (task, epsilon, regime, method in {Ours, NLFT, FC}, seed, accuracy);
    ``full_block_params``: how many parameters NLFT of the whole block trains under DP (recorded as
    the scale the Full-vs-FC claims are read at, ``dp.privatised_parameters``).

    ``cells``: Ours − NLFT per (task, ε, regime); ``fc_minus_full_nlft``: the head alone (FC) minus
    NLFT of the whole last block ('full') per (task, ε), where both ran (the paper: gradient noise
    degrades fine-tuning the whole block more than fine-tuning the head). Paired 95 % intervals."""
    seeds = _seeds(runs)
    cells, full_gap, fc_vs_full = {}, {}, {}
    for t in sorted(runs.task.unique()):
        for e in sorted(runs.epsilon.unique()):
            for r in sorted(runs[runs.method != "FC"].regime.unique()):
                a = per_seed(runs, seeds, task=t, epsilon=e, regime=r, method="Ours")
                b = per_seed(runs, seeds, task=t, epsilon=e, regime=r, method="NLFT")
                cells[f"{t} eps={e:g} {r}"] = dict(paired_difference(a, b).as_dict(), ours=mean(a), nlft=mean(b))
                if r == "full":
                    full_gap[(t, e)] = _minus(a, b)
                    fc = per_seed(runs, seeds, task=t, epsilon=e, method="FC")
                    if any(v is not None for v in fc):
                        fc_vs_full[f"{t} eps={e:g}"] = dict(paired_difference(fc, b).as_dict(), fc=mean(fc),
                                                            full_nlft=mean(b))
    held = [c["held"] for c in cells.values()]
    eps = sorted(runs.epsilon.unique())
    shrink = {t: paired_difference(full_gap[(t, eps[0])], full_gap[(t, eps[-1])]).as_dict()
              for t in sorted(runs.task.unique()) if (t, eps[0]) in full_gap}
    means = {t: {f"{e:g}": mean(per_seed(runs, seeds, task=t, epsilon=e, method="Ours", regime="full"))
                 for e in eps} for t in sorted(runs.task.unique())}
    mono = [all(v[f"{a:g}"] is not None and v[f"{b:g}"] is not None and v[f"{a:g}"] < v[f"{b:g}"]
                for a, b in zip(eps, eps[1:])) for v in means.values()]
    return {"seeds": seeds, "cells": cells, "ours_beats_nlft_cells": sum(h is True for h in held),
            "cells_total": len(held), "ours_beats_nlft_share": len(held) and sum(h is True for h in held) / len(held),
            "full_gap_shrinks": shrink,
            "full_gap_shrinks_everywhere": strict(all, [v["held"] for v in shrink.values()]),
            "full_gap_eps_min": {t: mean(full_gap[(t, eps[0])]) for t in shrink},
            "ours_full_by_eps": means, "ours_monotone_in_eps": all(mono) if mono else None,
            "fc_minus_full_nlft": fc_vs_full,
            "fc_beats_full_nlft_cells": sum(c["held"] is True for c in fc_vs_full.values()),
            "full_block_params": full_block_params}
