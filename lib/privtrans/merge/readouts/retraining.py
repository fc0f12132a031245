"""Figure 6: whether retraining with MERGE's swapped embeddings converges, and stays stable.
"""

from __future__ import annotations

from privtrans.book.readouts import ratio, strict

from .. import quality_experiments
from .missing import _need


#: Figure 6's "converge stably": the validation loss ends below this share of its value after the swap
CONVERGED_BELOW = 0.5


def fig6_retraining(runs: dict, teacher, task: str, merge_by_seed: dict | None = None) -> dict:
    """Figure 6 from the re-trained runs ({variant: ``train.Trained``}, the figure's seed) and the
    teacher; ``merge_by_seed`` ({student seed: MERGE's ``train.Trained``}, default the figure's run
    alone): per seed whether MERGE converged stably (converged, stable, validation loss ending below
    ``CONVERGED_BELOW`` of its start) and the jump of the validation CE at the swap, and the counts
    and extremes over the seeds that the claims read."""
    _need(runs, ["merge"], "Figure 6 runs")
    rows = {v: quality_experiments.retraining_summary(r) for v, r in runs.items()}
    teacher_ce = teacher.history["val"]["ce"][-1]

    def jump(r):
        """The architecture swap: validation CE right after the student is built from the teacher
        (step 0) against the teacher's own final validation CE."""
        return ratio(r.history["val"]["ce"][0], teacher_ce)

    swap = {v: jump(r) for v, r in runs.items()}
    m = rows["merge"]
    per_seed = {}
    for s, r in sorted(merge_by_seed.items()) if merge_by_seed else [("figure", runs["merge"])]:
        q = quality_experiments.retraining_summary(r)
        v = q["val_end_over_start"]
        per_seed[str(s)] = {"converged": q["converged"], "stable": q["stable"], "val_end_over_start": v,
                            "converged_stably": bool(q["converged"] and q["stable"] and v is not None
                                                     and v < CONVERGED_BELOW),
                            "swap_ce_jump": jump(r)}
    jumps = [p["swap_ce_jump"] for p in per_seed.values()]
    seeds = {"seeds": sorted(int(s) for s in merge_by_seed)} if merge_by_seed else {}
    return dict(**seeds, runs=rows, task=task, swap_ce_jump=swap, teacher_val_ce=teacher_ce,
                merge_converged=m["converged"], merge_stable=m["stable"],
                merge_val_ratio=m["val_end_over_start"], merge_val_rises_initially=m["val_rises_initially"],
                merge_by_seed=per_seed, n_merge_seeds=len(per_seed),
                n_merge_converged_stably=sum(p["converged_stably"] for p in per_seed.values()),
                max_merge_val_ratio=strict(max, [p["val_end_over_start"] for p in per_seed.values()]),
                min_merge_swap_ce_jump=strict(min, jumps))
