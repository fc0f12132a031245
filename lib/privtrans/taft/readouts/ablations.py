"""The ablations: the losses of Figure 2(a), linearisation choices of Figure 2(b, c), Table 12's
projected gradient descent and Table 9's pretraining.
"""

from __future__ import annotations

import pandas as pd

from privtrans.book.paired import paired_difference
from privtrans.book.readouts import mean, num

from .by_seed import FAR, _avg, _seeds, per_seed


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
