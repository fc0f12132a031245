"""Figures 4 and 9: attention distraction under DP, and how the attention shifts towards rare items
as ε shrinks (read with Re-Attention's offset off where the claim is about the attention itself).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from privtrans.book.readouts import num

from .. import moments, reattention
from .runs import (
    DPFORMER,
    NON_PRIVATE,
    VANILLA,
    _increasing,
    _learns,
    _ref,
    _require,
    _value,
    above_reference,
    all_held,
    paired_keyed,
)


# DPFormer's attention read with its Re-Attention correction off (experiments.attention_shift_table)
DPFORMER_NO_OFFSET = "dpformer_no_offset"


def _decreasing(values) -> bool | None:
    return _increasing([None if v is None else -v for v in values])


def _relu_rule_for_gelu(table3: pd.DataFrame) -> list[dict]:
    """Figure 8 / Remark A.5: the ReLU variance formula used for GELU against GELU's sampled variance
    (largest n), per input std of Table 3: [{input_std, relu_rule, gelu_sampled, rel_err}]."""
    big = moments.largest_n_column(table3)
    g = table3[table3.activation == "GELU"].sort_values("input_std")
    return [{"input_std": float(s), "relu_rule": float(a), "gelu_sampled": float(v), "rel_err": float(a / v - 1)}
            for s, a, v in zip(g.input_std, g.analytic_relu, g[big])]


def fig4_attention_distraction(mc: dict, sweep: pd.DataFrame, tail: int, table3: pd.DataFrame,
                               paper_table3: pd.DataFrame, checks: pd.DataFrame) -> dict:
    """Figure 4 (one draw set ``mc`` and the σ ``sweep``), Table 3's errors, the moment-rule checks.

    ``checks`` rows whose rule names the paper are the paper's shortcuts, not our rules: left out.
    """
    _require(sweep, ["tail_logit_std", "inflation_noisy", "tv_noisy", "tv_reattention"], "the sweep")
    inflation = [float(v) for v in sweep.inflation_noisy]
    noisy = sweep.tail_logit_std > 0
    ours = checks[~checks.rule.str.contains("paper")]
    end_to_end = ours[ours.rule.str.contains("SASRec")]
    t3 = moments.table3_errors(table3, paper_table3)
    fig8 = _relu_rule_for_gelu(table3)
    return {
        "tail_truth": float(mc["truth"][tail]), "tail_noisy": float(mc["noisy"][tail]),
        "tail_reattention": float(mc["corrected"][tail]),
        "tv_noisy": reattention.total_variation(mc["noisy"], mc["truth"]),
        "tv_reattention": reattention.total_variation(mc["corrected"], mc["truth"]),
        "inflation": inflation,
        "inflation_monotone": _increasing(inflation),
        "inflation_at_max": inflation[-1] if inflation else None,
        "frac_sweep_corrected_closer": (float((sweep.tv_reattention < sweep.tv_noisy)[noisy].mean())
                                        if noisy.any() else None),
        "table3_relu_max_rel_err": t3["relu_max_rel_err"],
        "table3_eq8_min_rel_err": t3["eq8_min_rel_err"],
        "table3_gelu_quad_max_rel_err": t3["gelu_quad_max_rel_err"],
        "table3_gelu_via_relu_max_rel_err": t3["gelu_via_relu_max_rel_err"],
        "fig8_relu_rule_rel_err": fig8,
        # what the Figure 8 claim reads: the extremes of ReLU rule / GELU sampled over Table 3's inputs
        "fig8_ratio_min": min(1 + r["rel_err"] for r in fig8) if fig8 else None,
        "fig8_ratio_max": max(1 + r["rel_err"] for r in fig8) if fig8 else None,
        "table3_gelu_vs_paper_max_rel_diff": t3["gelu_vs_paper_max_rel_diff"],
        "checks_max_abs_rel_err": num(ours.rel_error.abs().max()) if len(ours) else None,
        "checks_end_to_end_max_abs_rel_err": (num(end_to_end.rel_error.abs().max())
                                              if len(end_to_end) else None),
    }


def _cell(table: pd.DataFrame, method: str, epsilon, column: str) -> float | None:
    """One (method, ε) value of a table indexed by (method, epsilon); None when absent.

    The non-private reference has ε = None, which a groupby keeps as NaN."""
    for (m, e), v in table[column].items():
        same_eps = (epsilon is None and (e is None or e != e)) or (epsilon is not None and e == epsilon)
        if m == method and same_eps:
            return num(v)
    return None


def _lt(a, b) -> bool | None:
    return None if a is None or b is None else bool(a < b)


def _gt(a, b) -> bool | None:
    return _lt(b, a)


def _fig9_views(t: pd.DataFrame, epsilons) -> dict:
    """The quantities the Figure 9 claims compare, from one (method, ε)-indexed table of means."""
    lo, hi = min(epsilons), max(epsilons)
    kl = [_cell(t, VANILLA, e, "KL_to_nonprivate") for e in sorted(epsilons)]
    return {
        "kl_by_eps": kl, "kl_monotone": _decreasing(kl),
        "kl_low": _cell(t, VANILLA, lo, "KL_to_nonprivate"), "kl_high": _cell(t, VANILLA, hi, "KL_to_nonprivate"),
        "lean_low": _cell(t, VANILLA, lo, "rarity_lean"), "lean_high": _cell(t, VANILLA, hi, "rarity_lean"),
        "lean_nonprivate": _cell(t, NON_PRIVATE, None, "rarity_lean"),
        "dpformer_lean_low": _cell(t, DPFORMER, lo, "rarity_lean"),
        "dpformer_lean_low_no_offset": _cell(t, DPFORMER_NO_OFFSET, lo, "rarity_lean"),
        "dpformer_kl_low": _cell(t, DPFORMER, lo, "KL_to_nonprivate"),
    }


def _frac_true(flags) -> float | None:
    """Share of seeds on which a comparison holds; None if it cannot be made on some seed."""
    return None if not flags or any(f is None for f in flags) else float(np.mean(flags))


def fig9_attention_shift(shift: pd.DataFrame, epsilons, models: pd.DataFrame,
                         refs: pd.DataFrame | None = None) -> dict:
    """Figure 9: mean KL to the non-private attention and rarity lean per method and ε (over seeds
    and blocks), and on what share of seeds each comparison holds.

    ``shift`` (``experiments.attention_shift_table``) has DPFormer read twice: with its Re-Attention
    correction on, as it is evaluated (method "dpformer"), and off (``DPFORMER_NO_OFFSET``): the
    correction lowers rare items' scores by its formula, so whether training with Re-Attention drew
    the attention off rare items is read with it off. The rarity lean is measured against uniform
    attention over the visible keys (0: uniform), so "leans to rare items" needs a lean above 0,
    which an untrained model's near-uniform attention does not give.

    ``models`` has one row per model (method, epsilon, seed, NDCG@10); ``refs``
    (``experiments.reference_rows``) gives MostPopular. The claims' gate reads the non-private
    reference (``nonprivate_vs_most_popular``: its NDCG@10 clearly above MostPopular, so that its
    attention is a ground truth learnt from the data), an arm none of them compares by its NDCG;
    without ``refs`` it is None (not judged)."""
    _require(shift, ["method", "epsilon", "seed", "KL_to_nonprivate", "rarity_lean"], "the shift table")
    cols = ["KL_to_nonprivate", "rarity_lean"]
    v = _fig9_views(shift.groupby(["method", "epsilon"], dropna=False)[cols].mean(), epsilons)
    seeds = sorted(int(x) for x in shift.seed.unique())
    by_seed = {int(s): _fig9_views(g.groupby(["method", "epsilon"], dropna=False)[cols].mean(), epsilons)
               for s, g in shift.groupby("seed")}
    per_seed = [by_seed[s] for s in seeds]

    def col(name, i=None):
        """{seed: value} over every seed of the table: None where a seed lacks it (a lost run)."""
        return {s: (w[name] if i is None else w[name][i]) for s, w in by_seed.items()}

    n_eps, eps = len(v["kl_by_eps"]), sorted(epsilons)
    kl_steps = [paired_keyed(col("kl_by_eps", i), col("kl_by_eps", i + 1), keys=seeds,
                             step=f"ε {eps[i]:g} → {eps[i + 1]:g}") for i in range(n_eps - 1)]
    uniform = {s: 0.0 for s in seeds}   # the rarity lean of uniform attention
    lean_vs = [paired_keyed(col("lean_low"), col("lean_high"), keys=seeds, vs="ε high"),
               paired_keyed(col("lean_low"), uniform, keys=seeds, vs="uniform")]
    return {
        **v,
        "epsilons": sorted(epsilons),
        "seeds": seeds,
        # judged: paired intervals across seeds (each seed's value is its mean over blocks)
        "kl_steps_paired": kl_steps,
        "kl_falls_with_eps": all_held(kl_steps),
        "lean_low_paired": lean_vs,
        "low_eps_leans_to_rare": all_held(lean_vs),
        # shown: the smallest ε's lean against the non-private model's (an under-trained model's
        # near-uniform attention is above a trained model's lean to popular items without leaning to
        # rare ones, so this is not what the claim judges)
        "lean_low_vs_nonprivate": paired_keyed(col("lean_low"), col("lean_nonprivate"), keys=seeds),
        "dpformer_lowers_lean": paired_keyed(col("lean_low"), col("dpformer_lean_low_no_offset"), keys=seeds),
        "dpformer_lowers_lean_with_offset": paired_keyed(col("lean_low"), col("dpformer_lean_low"), keys=seeds),
        "dpformer_lowers_kl": paired_keyed(col("kl_low"), col("dpformer_kl_low"), keys=seeds),
        "seeds_kl_monotone": _frac_true([s["kl_monotone"] for s in per_seed]),
        "seeds_lean_low_gt_high": _frac_true([_gt(s["lean_low"], s["lean_high"]) for s in per_seed]),
        "seeds_dpformer_lean_below": _frac_true([_lt(s["dpformer_lean_low_no_offset"], s["lean_low"])
                                                 for s in per_seed]),
        "seeds_dpformer_kl_below": _frac_true([_lt(s["dpformer_kl_low"], s["kl_low"]) for s in per_seed]),
        "ndcg": models.groupby(["method", "epsilon"], dropna=False)["NDCG@10"].mean().reset_index().to_dict("records"),
        "best_dp_vs_most_popular": _dp_vs_most_popular(models, refs),
        "nonprivate_vs_most_popular": _nonprivate_vs_most_popular(models, refs, seeds),
    }


def _dp_vs_most_popular(models: pd.DataFrame, refs: pd.DataFrame | None) -> dict:
    """``above_reference`` over the DP models of ``models`` (NDCG@10 per method, ε, seed): shown."""
    if refs is None:
        return {"method": None, "epsilon": None, "held": None, "reason": "no MostPopular reference given"}
    _require(models, ["method", "epsilon", "seed", "NDCG@10"], "the models table")
    dp = models[models.epsilon.notna() & (models.method != NON_PRIVATE)].rename(columns={"NDCG@10": "ndcg@10"})
    return above_reference(dp, sorted(dp.epsilon.unique()), sorted(dp.method.unique()), _ref(refs, "most_popular"))


def _nonprivate_vs_most_popular(models: pd.DataFrame, refs: pd.DataFrame | None, seeds) -> dict:
    """The Figure 9 claims' gate: the non-private reference's NDCG@10 − MostPopular over ``seeds``."""
    if refs is None:
        return {"held": None, "reason": "no MostPopular reference given"}
    _require(models, ["method", "epsilon", "seed", "NDCG@10"], "the models table")
    npv = models[models.method == NON_PRIVATE]
    got = {int(s): _value(x) for s, x in zip(npv.seed, npv["NDCG@10"])}
    return _learns({s: got.get(s) for s in seeds}, _ref(refs, "most_popular"),
                   "non-private Transformer's NDCG@10 − MostPopular")
