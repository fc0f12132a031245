"""What each TAFT notebook records for the claims (``nb.record(**readouts.<notebook>(...))``).

Every stochastic comparison is judged across seeds on paired differences with a 95 % t interval
(``privtrans.book.paired``): "A beats B" holds only when the interval of A − B lies above the
margin. Accuracies are fractions in [0, 1] here (the paper prints percent). A missing run gives
None (not judged), never 0.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from privtrans.book import dry
from privtrans.book.paired import paired_difference
from privtrans.book.readouts import mean, num, ratio as ratio_of, strict

NEAR, FAR = "digits", "letters"


def _seeds(df: pd.DataFrame) -> list:
    return sorted(df.seed.unique().tolist())


def per_seed(df: pd.DataFrame, seeds, value: str = "accuracy", **where) -> list:
    """The ``value`` of the rows matching ``where``, one per seed (None where a seed has none)."""
    sel = df
    for k, v in where.items():
        sel = sel[sel[k] == v]
    by = sel.groupby("seed")[value].mean()
    return [num(by.get(s)) for s in seeds]


def _minus(a, b):
    return [None if x is None or y is None else x - y for x, y in zip(a, b)]


def _avg(*lists):
    return [None if any(v is None for v in vs) else float(np.mean(vs)) for vs in zip(*lists)]


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


def composition(runs: pd.DataFrame, max_abs_diff: float | None) -> dict:
    """``runs``: one row per (task, shards, method in {TAFT, Soup}, seed) with ``accuracy``;
    ``max_abs_diff``: the largest |composed − ensembled| logit over every TAFT composition.

    ``cells``: TAFT − Soup per (task, N); ``growth``: per task, the gap at the largest N minus the gap
    at the smallest; ``growth_mean``: the same on each seed's mean gap over the tasks (the paper's
    sentence gives its average row's gap). All paired 95 % intervals across seeds."""
    seeds = _seeds(runs)
    out = {"seeds": seeds, "max_abs_diff_composed_vs_ensemble": num(max_abs_diff), "cells": {}, "growth": {}}
    ns = sorted(runs.shards.unique().tolist())
    for t in sorted(runs.task.unique()):
        gaps = {}
        for n in ns:
            a = per_seed(runs, seeds, task=t, shards=n, method="TAFT")
            b = per_seed(runs, seeds, task=t, shards=n, method="Soup")
            gaps[n] = _minus(a, b)
            out["cells"][f"{t} N={n}"] = dict(paired_difference(a, b).as_dict(), taft=mean(a), soup=mean(b))
        out["growth"][t] = paired_difference(gaps[ns[-1]], gaps[ns[0]]).as_dict()
    # the paper states the gap of its average row (9.1, 13.0, 13.5 points at N = 10, 25, 50): the same
    # on each seed's mean over the tasks, largest N against smallest
    tasks = sorted(runs.task.unique())
    mean_gap = {n: _avg(*(_minus(per_seed(runs, seeds, task=t, shards=n, method="TAFT"),
                                 per_seed(runs, seeds, task=t, shards=n, method="Soup")) for t in tasks))
                for n in (ns[0], ns[-1])}
    out["growth_mean"] = paired_difference(mean_gap[ns[-1]], mean_gap[ns[0]]).as_dict()
    held = [c["held"] for c in out["cells"].values()]
    out["taft_beats_soup_cells"] = sum(h is True for h in held)
    out["cells_total"] = len(held)
    out["taft_beats_soup_everywhere"] = strict(all, held)
    growth = [g["held"] for g in out["growth"].values()]
    out["gap_grows_everywhere"] = strict(all, growth)
    return out


def table11_peft(runs: pd.DataFrame) -> dict:
    """``runs``: one row per (task, shards, method in {TAFT, Adapter, LoRA, Soup}, seed) with
    ``accuracy`` and, where measured, ``composed_minus_ensemble`` (the largest |composed − ensemble|
    logit). TAFT against each other method per (task, N) as a paired 95 % interval across seeds:
    ``cells`` keyed '<task> N=<n> vs <method>', and the same intervals by method in ``cells_vs``
    ({method: {'<task> N=<n>': interval}}), which the claims read."""
    seeds = _seeds(runs)
    others = [m for m in ("Adapter", "LoRA", "Soup") if m in set(runs.method)]
    gap = runs.groupby("method").composed_minus_ensemble.max() if "composed_minus_ensemble" in runs else {}
    out = {"seeds": seeds, "cells": {}, "composed_minus_ensemble": {m: num(gap.get(m)) for m in ["TAFT", *others]},
           "cells_vs": {m: {} for m in others}}
    for t in sorted(runs.task.unique()):
        for n in sorted(runs.shards.unique().tolist()):
            a = per_seed(runs, seeds, task=t, shards=n, method="TAFT")
            for m in others:
                b = per_seed(runs, seeds, task=t, shards=n, method=m)
                out["cells"][f"{t} N={n} vs {m}"] = dict(paired_difference(a, b).as_dict(), taft=mean(a), other=mean(b))
                out["cells_vs"][m][f"{t} N={n}"] = out["cells"][f"{t} N={n} vs {m}"]
    for m in ("Adapter", "LoRA"):
        held = [c["held"] for k, c in out["cells"].items() if k.endswith(f"vs {m}")]
        key = m.lower()
        out[f"taft_beats_{key}_cells"] = sum(h is True for h in held)
        out[f"{key}_cells_total"] = len(held)
        out[f"taft_beats_{key}_everywhere"] = strict(all, held)
    return out


def forgetting(curves: pd.DataFrame, retrain: pd.DataFrame, n_shards: int, subtraction_error: float | None,
               margin: float = 0.05, retrain_margin: float = 0.072) -> dict:
    """``curves``: (task, seed, removed, method in {TAFT, SISA}, accuracy), each the mean over random
    removal sets; ``retrain``: (task, seed, fraction, method in {TAFT shard retraining, Paragon
    NLFT-1}, accuracy, seconds, shard_seconds). "Costs little" / "close to the paragon": a paired
    95 % interval across seeds that stays within ``margin`` (accuracy as a fraction) of the reference.

    ``half_minus_full_mean``: accuracy with half the shards removed minus with none, on each seed's
    mean over the tasks; ``taft_minus_sisa_by_count``: {task: {'removed=<k>': TAFT − SISA}} at every
    removal count (``taft_minus_sisa`` is the same on the mean over the counts).

    Retraining (Figure 1(c)): ``retrained_minus_full_mean``: the composed model's accuracy after the
    largest forgotten fraction with its hit shards retrained, minus before any forgetting, on each
    seed's mean over the tasks (its ``held``: within ``retrain_margin``); ``speedup_mean``: the
    paragon's retraining time over one shard's (a request that hits one shard): per task the ratio
    of the means over the seeds and forgotten fractions, then the mean over the tasks."""
    seeds = _seeds(curves)
    half = n_shards // 2
    removed = sorted(curves.removed.unique().tolist())
    at_half = max([r for r in removed if r <= half], default=None)
    out = {"seeds": seeds, "removed_at_half": at_half, "subtraction_max_error": num(subtraction_error),
           "drop_at_half": {}, "taft_minus_sisa": {}, "taft_minus_sisa_by_count": {}}
    fulls, halves = [], []
    for t in sorted(curves.task.unique()):
        full = per_seed(curves, seeds, task=t, removed=0, method="TAFT")
        halfway = per_seed(curves, seeds, task=t, removed=at_half, method="TAFT")
        fulls.append(full)
        halves.append(halfway)
        out["drop_at_half"][t] = mean(_minus(full, halfway))
        out.setdefault("within_margin_at_half", {})[t] = paired_difference(halfway, full, margin=-margin).as_dict()
        taft = per_seed(curves, seeds, task=t, method="TAFT")  # mean over the removal counts
        sisa = per_seed(curves, seeds, task=t, method="SISA")
        out["taft_minus_sisa"][t] = paired_difference(taft, sisa).as_dict()
        # the paper: better "across all number of shards removed": one interval per removal count
        out["taft_minus_sisa_by_count"][t] = {
            f"removed={r}": paired_difference(per_seed(curves, seeds, task=t, removed=r, method="TAFT"),
                                              per_seed(curves, seeds, task=t, removed=r, method="SISA")).as_dict()
            for r in removed}
    # the paper's "only 4.0 %" is one number for its data sets: the same on each seed's mean over the tasks
    out["half_minus_full_mean"] = paired_difference(_avg(*halves), _avg(*fulls), margin=-margin).as_dict()
    out["drop_at_half_mean"] = mean(list(out["drop_at_half"].values()))
    out["margin"] = margin
    w = [v["held"] for v in out.get("within_margin_at_half", {}).values()]
    out["forgetting_costs_little_everywhere"] = strict(all, w)
    held = [v["held"] for v in out["taft_minus_sisa"].values()]
    out["taft_beats_sisa_everywhere"] = strict(all, held)
    out["taft_minus_sisa_mean"] = mean([v["mean"] for v in out["taft_minus_sisa"].values()])
    if retrain is not None and len(retrain):
        rs = _seeds(retrain)
        top = max(retrain.fraction.unique())
        drops, gaps, speed, at0s, attops = {}, {}, {}, [], []
        for t in sorted(retrain.task.unique()):
            at0 = per_seed(retrain, rs, task=t, fraction=0.0, method="TAFT shard retraining")
            attop = per_seed(retrain, rs, task=t, fraction=top, method="TAFT shard retraining")
            at0s.append(at0)
            attops.append(attop)
            drops[t] = mean(_minus(at0, attop))
            para = per_seed(retrain, rs, task=t, fraction=top, method="Paragon NLFT-1")
            gaps[t] = mean(_minus(para, attop))
            close = out.setdefault("retrained_within_margin", {})
            close[t] = paired_difference(attop, para, margin=-margin).as_dict()
            sel = retrain[(retrain.task == t) & (retrain.fraction > 0)]
            p = sel[sel.method == "Paragon NLFT-1"].seconds.mean()
            s = sel[sel.method == "TAFT shard retraining"].shard_seconds.mean()
            speed[t] = None if not (p > 0 and s > 0) else float(p / s)
        c = [v["held"] for v in out["retrained_within_margin"].values()]
        out["retrained_near_paragon_everywhere"] = strict(all, c)
        # the paper's "only a 6.2 % drop in accuracy after unlearning 50 %" names no data set: the same
        # on each seed's mean over the tasks
        out["retrained_minus_full_mean"] = paired_difference(_avg(*attops), _avg(*at0s),
                                                             margin=-retrain_margin).as_dict()
        out["retrain_margin"] = retrain_margin
        # the speed-up on repeated readings: per seed, log(the paragon's mean retraining time over one
        # shard's), over the tasks and forgotten fractions; its interval across the seeds
        hit = retrain[retrain.fraction > 0]

        def log_seconds(method, col):
            by = hit[hit.method == method].groupby("seed")[col].mean()
            return [math.log(by[s]) if s in by and by[s] > 0 else None for s in rs]

        out["speedup_log"] = paired_difference(log_seconds("Paragon NLFT-1", "seconds"),
                                               log_seconds("TAFT shard retraining", "shard_seconds")).as_dict()
        out.update({"retrain_fraction_max": float(top), "retrain_drop": drops, "retrain_drop_mean": mean(list(drops.values())),
                    "paragon_minus_retrained": gaps, "paragon_gap_mean": mean(list(gaps.values())),
                    "speedup_per_request": speed, "speedup_mean": mean(list(speed.values()))})
    return out


def dp_finetuning(runs: pd.DataFrame) -> dict:
    """``runs``: (task, epsilon, regime, method in {Ours, NLFT, FC}, seed, accuracy).

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
            "fc_beats_full_nlft_cells": sum(c["held"] is True for c in fc_vs_full.values())}


def table7_linearised_cnn(runs: pd.DataFrame, cnn_val_acc: float | None, vit_val_acc: float | None) -> dict:
    """``runs``: one row per (task, setting in {full, shards}, method in {TAFT, L-CNN}, seed) with
    ``accuracy``. TAFT − L-CNN is judged per setting on the seeds' task averages (the paper averages
    over its three data sets), and per task."""
    seeds = _seeds(runs)
    tasks = sorted(runs.task.unique())
    out = {"seeds": seeds, "pretraining_val_acc": {"CNN": num(cnn_val_acc), "ViT": num(vit_val_acc)}, "cells": {}}
    for setting in ("full", "shards"):
        a = {t: per_seed(runs, seeds, task=t, setting=setting, method="TAFT") for t in tasks}
        b = {t: per_seed(runs, seeds, task=t, setting=setting, method="L-CNN") for t in tasks}
        for t in tasks:
            out["cells"][f"{t} {setting}"] = dict(paired_difference(a[t], b[t]).as_dict(), taft=mean(a[t]),
                                                  lcnn=mean(b[t]))
        out[f"taft_beats_lcnn_{setting}"] = paired_difference(_avg(*a.values()), _avg(*b.values())).as_dict()
    return out


def fig4_weight_change(curves: dict, max_spread: float) -> dict:
    """``curves``: {task: [‖w̄_{n+1} − w̄_n‖ for n = 1..N−1]}. Per task: the change at the first and
    last n and the spread (max/min) of (n + 1)·change(n), which is flat for a 1/n decay."""
    tasks, ok = {}, []
    for t, c in curves.items():
        c = np.asarray(c, dtype=float)
        scaled = c * (np.arange(1, len(c) + 1) + 1)
        spread = float(scaled.max() / scaled.min()) if len(c) and scaled.min() > 0 else None
        tasks[t] = {"first": num(c[0]) if len(c) else None, "last": num(c[-1]) if len(c) else None,
                    "spread": spread, "n": len(c) + 1}
        ok.append(None if spread is None else spread <= max_spread)
    return {"tasks": tasks, "max_spread": max_spread,
            "decays_like_one_over_n": strict(all, ok)}


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


def _variant_gap(runs: pd.DataFrame, a: str, b: str, tasks=None) -> dict:
    """Variant a − variant b on each seed's mean over ``tasks`` (default: all), paired across seeds."""
    seeds = _seeds(runs)
    tasks = sorted(runs.task.unique()) if tasks is None else tasks
    va = _avg(*(per_seed(runs, seeds, task=t, variant=a) for t in tasks))
    vb = _avg(*(per_seed(runs, seeds, task=t, variant=b) for t in tasks))
    return paired_difference(va, vb).as_dict()


def _variant_means(runs: pd.DataFrame) -> dict:
    """{task: {variant: mean accuracy over the seeds}}: the ablation tables' "accuracy"."""
    seeds = _seeds(runs)
    return {t: {v: mean(per_seed(runs, seeds, task=t, variant=v)) for v in sorted(runs.variant.unique())}
            for t in sorted(runs.task.unique())}


def _variants(runs: pd.DataFrame) -> dict:
    """The seeds, each (task, variant)'s mean accuracy and, with an ``lr`` column, its learning rate."""
    means = _variant_means(runs)
    rates = {}
    if "lr" in runs:
        for (v, t), lrs in runs.groupby(["variant", "task"]).lr:
            if lrs.nunique() != 1:
                raise ValueError(f"variant {v!r} on {t!r} ran at several learning rates {sorted(lrs.unique())}; "
                                 "a variant has one rate per task")
            rates.setdefault(v, {})[t] = float(lrs.iloc[0])
    return {"seeds": _seeds(runs), "accuracy": means, **({"learning_rates": rates} if rates else {})}


def fig2a_losses(runs: pd.DataFrame) -> dict:
    """``runs``: (task, variant, seed, accuracy[, lr]) for variants 'RSL' (TAFT-1: RSL, PT = F, CLS =
    F), 'CE' and 'MSE', each loss at its own rate (``selection.variant_specs``); the rates are
    recorded when ``runs`` has an ``lr`` column."""
    return {**_variants(runs), "rsl_minus_ce": _variant_gap(runs, "RSL", "CE"),
            "rsl_minus_mse": _variant_gap(runs, "RSL", "MSE")}


def fig2bc_linearisation(runs: pd.DataFrame, far: str = FAR) -> dict:
    """``runs``: (task, variant, seed, accuracy[, lr]) for variants 'RSL' (TAFT-1: RSL, PT = F, CLS =
    F), 'PT=T' (linearised around the pretrained last block) and 'CLS=T' (CLS token reset and
    linearised), all at RSL's rate."""
    return {**_variants(runs), "reset_minus_pretrained": _variant_gap(runs, "RSL", "PT=T"),
            "cls_minus_plain_far": _variant_gap(runs, "CLS=T", "RSL", tasks=[far])}


def pgd_variant(loss: str, radius: float) -> str:
    """Table 12's name of a projected-GD variant: the loss and the ball's radius ("RSL R=0.5")."""
    return f"{loss.upper()} R={radius:g}"


def table12_pgd(runs: pd.DataFrame, radii) -> dict:
    """``runs``: (task, variant, seed, accuracy, delta_norm[, lr]) for the variants ``pgd_variant(loss,
    r)`` of the losses CE and RSL at every radius r in ``radii``; each variant's rate is recorded
    (``learning_rates``) when ``runs`` has an ``lr`` column (each (loss, R) chooses its own)."""
    radii = sorted(float(r) for r in radii)
    norms = runs.groupby("variant").delta_norm.mean().to_dict()
    return {**_variants(runs), "radii": radii,
            "delta_norm": {k: num(v) for k, v in norms.items()},
            "rsl_minus_ce_small_r": _variant_gap(runs, pgd_variant("rsl", radii[0]), pgd_variant("ce", radii[0])),
            "ce_minus_rsl_large_r": _variant_gap(runs, pgd_variant("ce", radii[-1]), pgd_variant("rsl", radii[-1]))}


def table9_pretraining(runs: pd.DataFrame) -> dict:
    """``runs``: (backbone in {CLS, CLS-small, MAE, CLS+}, task, seed, accuracy) of one TAFT-1 setting.
    ``small_cls_minus_mae``: the narrower CLS backbone against the full-width MAE one (App. C.4: CLS
    T-ViT-B beats MAE T-ViT-L)."""
    r = runs.rename(columns={"backbone": "variant"})
    return {"seeds": _seeds(r), "accuracy": _variant_means(r), "cls_minus_mae": _variant_gap(r, "CLS", "MAE"),
            "small_cls_minus_mae": _variant_gap(r, "CLS-small", "MAE"),
            "larger_minus_smaller": _variant_gap(r, "CLS", "CLS-small"),
            "more_data_minus_cls": _variant_gap(r, "CLS+", "CLS")}


def shard_tuning(grids: dict) -> dict:
    """``grids``: {table: one row per candidate (task, method, shards, lr, n_seeds, chosen, at_edge;
    ``selection.shard_tuned`` or ``selection.validation_choice``)}. Per table and arm: the rates
    tried, the most candidates of one (task, N), the validation seeds, the rate chosen per task and
    N and the cells whose choice sits at an edge of the grid; per table, whether every arm had as
    many candidates (``equal_candidates``)."""
    arms, equal = {}, {}
    for table, df in grids.items():
        counts = {}
        for m, d in df.groupby("method", sort=False):
            shards = d["shards"] if "shards" in d else pd.Series([None] * len(d), index=d.index)
            cell = [f"{t}" + ("" if n is None or (isinstance(n, float) and math.isnan(n)) else f" N={int(n)}")
                    for t, n in zip(d.task, shards)]
            d = d.assign(cell=cell)
            counts[m] = int(d.groupby("cell").size().max())
            ch = d[d.chosen]
            arms[f"{table}: {m}"] = {"rates": sorted(float(x) for x in set(d.lr)), "candidates": counts[m],
                                     "validation_seeds": int(d.n_seeds.max()),
                                     "chosen": {c: float(lr) for c, lr in zip(ch.cell, ch.lr)},
                                     "at_edge": sorted(ch.cell[ch.at_edge.astype(bool)].tolist())}
        equal[table] = len(set(counts.values())) == 1
    return {"arms": arms, "equal_candidates": equal}
