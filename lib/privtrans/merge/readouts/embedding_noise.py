"""Figure 5: generation quality as noise is added to the embeddings, per variant.
"""

from __future__ import annotations

import pandas as pd

from privtrans.book.paired import paired_difference
from privtrans.book.readouts import num, ratio
from privtrans.shared.models.plain_gpt import VARIANT_LABELS

from .missing import MissingResult, _need


#: Figure 5: the relative-MSE band where the paper's vanilla curve breaks down ("over 0.05")
MID_MSE = (0.05, 0.35)


def _noise_readout(g: pd.DataFrame, metric: str) -> dict:
    clean, noisy = num(g[metric].iloc[0]), num(g[metric].iloc[-1])
    mid = g[(g.rel_mse >= MID_MSE[0]) & (g.rel_mse <= MID_MSE[1])]
    drop = None if None in (clean, noisy) else clean - noisy
    return {"clean": clean, "max_noise": noisy, "drop": drop,
            # a model already at 0 has nothing to lose: its relative drop is undefined, not 0
            "rel_drop": ratio(drop, clean),
            "mid_mean": num(mid[metric].mean()) if len(mid) else None}


def fig5_embedding_noise(sweep: pd.DataFrame, tasks: list, variants: list,
                         metrics=("chrF++", "ROUGE-L"), seeds: list | None = None) -> dict:
    """Figure 5 from ``quality_experiments.robustness_tasks``.

    The figure's seed (the sweep's first): per task, model and metric the clean score, the score at
    the largest noise, the (relative) drop and the mean over ``MID_MSE``, and how many noise-trained
    (task, model) pairs lose a smaller share of chrF++ than the teacher. Across seeds:
    ``more_robust``, per (task, noise-trained model) the paired 95 % t interval of the teacher's
    relative chrF++ drop − the model's (positive: the model loses the smaller share), the teacher and
    the model of one seed decoded with that seed's noise; a drop from a clean score of 0 is undefined
    and is a lost seed of that pair, as is a seed with no noise-free run; every interval runs over the
    planned ``seeds`` (default: every seed in the sweep) and keeps them in its count.
    ``rel_drop_by_seed``: the compared drops."""
    _need(variants, ["teacher"], "Figure 5 variants")
    sweep = sweep if "seed" in sweep else sweep.assign(seed=0)
    first = sweep.seed.min()
    planned = sorted({int(s) for s in sweep.seed}) if seeds is None else sorted(int(s) for s in seeds)
    stray = sorted({int(s) for s in sweep.seed} - set(planned))
    if stray:
        raise MissingResult(f"Figure 5: runs at seeds {stray} that were not planned ({planned})")
    rec, by_seed, more = {}, {}, {}
    for t in tasks:
        rec[t], drops = {}, {}
        for v in variants:
            g = sweep[(sweep.task == t) & (sweep.variant == v)]
            if g.empty or (g[g.seed == first].noise.min() != 0):
                raise MissingResult(f"Figure 5 has no noise-free run of {v!r} on {t!r}")
            rec[t][v] = {m: _noise_readout(g[g.seed == first].sort_values("noise"), m) for m in metrics}
            drops[v] = {int(s): _noise_readout(gs.sort_values("noise"), "chrF++")["rel_drop"]
                        for s, gs in g.groupby("seed") if gs.noise.min() == 0}
        by_seed[t] = {"seeds": planned, **{v: [drops[v].get(s) for s in planned] for v in variants}}
        for v in variants:
            if v != "teacher":
                more[f"{t} / {VARIANT_LABELS.get(v, v)}"] = paired_difference(by_seed[t]["teacher"], by_seed[t][v]).as_dict()

    def more_robust(t, v, m="chrF++"):
        a, b = rec[t][v][m]["rel_drop"], rec[t]["teacher"][m]["rel_drop"]
        return None if None in (a, b) else a < b

    trained = [(t, v) for t in tasks for v in variants if v != "teacher"]
    mid = lambda t, v: rec[t][v]["chrF++"]["mid_mean"]  # noqa: E731
    return dict(
        seeds=planned,
        readout=rec,
        chrf_clean_and_noisiest={t: {v: [rec[t][v]["chrF++"]["clean"], rec[t][v]["chrF++"]["max_noise"]]
                                     for v in variants} for t in tasks},
        teacher_rel_drop_chrf={t: rec[t]["teacher"]["chrF++"]["rel_drop"] for t in tasks},
        # the figure's seed alone; a pair whose drop is undefined does not count as more robust
        n_er_trained_more_robust=sum(more_robust(t, v) is True for t, v in trained),
        n_er_trained=len(trained),
        more_robust=more,
        rel_drop_by_seed=by_seed,
        n_seeds=len(planned),
        # the fewest seeds any pair has both drops at (n_seeds is the planned count)
        n_paired_min=min((c["n"] for c in more.values()), default=0),
        only_er_mid_ge_teacher={t: None if None in (mid(t, "only_er"), mid(t, "teacher"))
                                else mid(t, "only_er") >= mid(t, "teacher") for t in tasks}
        if "only_er" in variants else {},
    )
