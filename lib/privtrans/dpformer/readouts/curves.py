"""Training curves (Tables 1 and 2, the premise table): how fast each method converges, and whether
it falls back from its best epoch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .runs import DPFORMER, VANILLA, _best_cell, _seeds, paired_keyed


def _run_curves(curves: pd.DataFrame, method: str, key: str) -> dict:
    """{(ε, seed): (epochs, values)} of one method's logged curves, sorted by epoch."""
    out = {}
    # dropna=False: the non-private reference's runs have ε None
    for (e, s), g in curves[curves.method == method].groupby(["epsilon", "seed"], dropna=False):
        g = g.sort_values("epoch")
        out[(float("nan") if e is None else float(e), int(s))] = (g.epoch.to_numpy(float), g[key].to_numpy(float))
    return out


def planned_runs(runs: pd.DataFrame, epsilons) -> list[tuple[float, int]]:
    """Every (ε, seed) a results table planned: what a per-run comparison of two methods' curves is
    taken over, so that a run without a curve counts as lost."""
    return [(float(e), s) for e in sorted(epsilons) for s in _seeds(runs)]


def _common_target(curves: pd.DataFrame, a: str, b: str, share: float, key: str) -> tuple[dict, dict, dict]:
    """({(ε, seed): a's curve}, b's, {(ε, seed): the pair's common target}): ``share`` of the better
    of the two runs' best ``key`` (None where neither run has a curve)."""
    ca, cb = _run_curves(curves, a, key), _run_curves(curves, b, key)
    target = {}
    for k in set(ca) | set(cb):
        bests = [float(c[1].max()) for c in (ca.get(k), cb.get(k)) if c is not None and len(c[1])]
        target[k] = share * max(bests) if bests else None
    return ca, cb, target


def convergence_epochs(curves: pd.DataFrame, a: str = VANILLA, b: str = DPFORMER, share: float = 0.9,
                       key: str = "ndcg@10") -> tuple[dict, dict]:
    """Per (ε, seed), the first logged epoch from which each of the two methods' runs stays at a common
    target to its end (a settling time): ``share`` of the better of the two runs' best ``key``. A run
    that never settles there is read one evaluation step after its last epoch (it did not converge to
    that level within the run); so is one that reaches it and falls back (a run that rises and then
    collapses has not converged, however soon it passed the target).

    A common target, not each run's own best: a run that never learns reaches 90 % of its own flat
    best at once and would read as "fastest"; against the pair's best it reaches it only if it is
    already there. Where only one run of the pair has a curve, that one is read against its own best
    and the other is None (lost)."""
    ca, cb, target = _common_target(curves, a, b, share, key)
    step = evaluation_step(curves, (a, b))
    out_a, out_b = {}, {}
    for k, t in target.items():
        for runs_, out in ((ca, out_a), (cb, out_b)):
            c = runs_.get(k)
            if c is None or not len(c[1]) or t is None:
                out[k] = None
                continue
            stays = np.logical_and.accumulate((c[1] >= t)[::-1])[::-1]  # at the target from here to the end
            hit = np.flatnonzero(stays)
            out[k] = float(c[0][hit[0]]) if len(hit) else float(c[0][-1] + step)
    return out_a, out_b


def reaches_common_target(curves: pd.DataFrame, a: str = VANILLA, b: str = DPFORMER, share: float = 0.9,
                          key: str = "ndcg@10") -> tuple[dict, dict]:
    """Per (ε, seed), whether each of the two runs ever reaches the pair's common target
    (:func:`convergence_epochs`): a run that does not has not learned what the other did."""
    ca, cb, target = _common_target(curves, a, b, share, key)
    return tuple({k: (c.get(k) is not None and t is not None and bool((c[k][1] >= t).any()))
                  for k, t in target.items()} for c in (ca, cb))


def evaluation_step(curves: pd.DataFrame, methods=(VANILLA, DPFORMER)) -> float:
    """The widest gap between consecutive logged epochs of ``methods``' curves, counted from epoch 0
    (``eval_every`` where the run length is a multiple of it): the resolution of an epoch read off
    those curves, which only say that a curve crossed somewhere since the previous evaluation; 0.0
    without curves."""
    gaps = [0.0]
    for _, g in curves[curves.method.isin(methods)].groupby(["method", "epsilon", "seed"]):
        ep = np.unique(np.concatenate([[0.0], g.epoch.to_numpy(float)]))
        gaps.append(float(np.diff(ep).max()) if len(ep) > 1 else 0.0)
    return max(gaps)


def faster_convergence(curves: pd.DataFrame, planned=None) -> dict:
    """Figure 6's "faster convergence": per (ε, seed), vanilla's epoch of reaching the pair's common
    target (90 % of the better run's best NDCG@10, :func:`convergence_epochs`) minus DPFormer's
    (paired over the ``planned`` runs; above zero when DPFormer gets there sooner). The epochs are read
    at evaluations only: the interval carries that resolution (:func:`evaluation_step`), so ties at
    every seed say "cannot tell", not "no difference"."""
    va, dp = convergence_epochs(curves, VANILLA, DPFORMER)
    return paired_keyed(va, dp, resolution=evaluation_step(curves), keys=planned,
                        what="epoch at 90 % of the pair's best test NDCG@10, vanilla − DPFormer, per (ε, seed)")


def _spread(spread: pd.DataFrame, method: str, column: str) -> float | None:
    """Mean over ε of a seed-spread column; None when the method is absent or has one seed."""
    v = spread.loc[spread.method == method, column]
    return None if v.empty or v.isna().any() else float(v.mean())


def fall_back(curves: pd.DataFrame, method: str, key: str = "ndcg@10") -> dict:
    """{(ε, seed): total drop of ``key`` between consecutive evaluations} of one method's curves:
    Σ_k max(0, m_k − m_(k+1)), 0 for a curve that never falls back; None with one evaluation."""
    return {k: (float(np.clip(m[:-1] - m[1:], 0, None).sum()) if len(m) > 1 else None)
            for k, (_, m) in _run_curves(curves, method, key).items()}


def fall_back_share(curves: pd.DataFrame, method: str, key: str = "ndcg@10") -> dict:
    """{(ε, seed): the share of a curve's movement that goes backwards}: Σ drops / Σ |changes| between
    consecutive evaluations. 0 for a curve that only rises, about ½ for one that only jitters; None
    for a curve with one evaluation or one that never moves (no movement to be smooth or rough about).

    Figure 6's "fluctuation" per run, so that two methods run with the same seeds compare pairwise. A
    share, not the summed drops: a run that never learns has a flat curve with no drops and would
    read as the most stable; its jitter is half backwards, which this counts against it."""
    out = {}
    for k, (_, m) in _run_curves(curves, method, key).items():
        d = np.diff(m)
        moved = float(np.abs(d).sum())
        out[k] = float(np.clip(-d, 0, None).sum() / moved) if len(d) and moved > 0 else None
    return out


def stability(curves: pd.DataFrame, planned=None) -> dict:
    """Figure 6 judged per run: vanilla's fall-back share minus DPFormer's over the ``planned`` (ε, seed)
    runs (paired t interval; holds when DPFormer's curves go backwards less).

    A run that never reaches the pair's common target (:func:`reaches_common_target`) counts as a
    failed run (None: the claim counts it as lost), whichever method it is: a curve that creeps up
    without learning never falls back, and would otherwise read as the stablest of all (a planted
    collapse of DPFormer held, +0.13, before this rule; ``privtrans.book.controls``)."""
    reach_va, reach_dp = reaches_common_target(curves, VANILLA, DPFORMER)
    va, dp = fall_back_share(curves, VANILLA), fall_back_share(curves, DPFORMER)
    va = {k: v if reach_va.get(k) else None for k, v in va.items()}
    dp = {k: v if reach_dp.get(k) else None for k, v in dp.items()}
    return paired_keyed(va, dp, keys=planned,
                        what="share of test NDCG@10's movement that falls back, vanilla − DPFormer, per (ε, seed); a "
                             "run that never reaches 90 % of the pair's best counts as failed")


def curves_falling_back(curves: pd.DataFrame) -> int:
    """How many (method, ε, seed) curves of vanilla and DPFormer fall back at least once (shown)."""
    return sum(v is not None and v > 0 for m in (VANILLA, DPFORMER) for v in fall_back(curves, m).values())


def curve_gain(curves: pd.DataFrame, method: str, key: str = "ndcg@10") -> dict:
    """{(ε, seed): last evaluation − first evaluation} of one method's curves (None with one)."""
    return {k: (float(m[-1] - m[0]) if len(m) > 1 else None)
            for k, (_, m) in _run_curves(curves, method, key).items()}


def some_curve_rises(curves: pd.DataFrame, methods) -> dict:
    """Whether some (method, ε) of ``methods`` clearly learns during training: per (method, ε) a t
    interval over its seeds of the curve's last evaluation minus its first, and the cell whose
    interval lies highest. The gate of the Figure 6 claims, read on arms they do not compare: only
    where training moves a model at all can one method's curve rise faster or smoother."""
    cells = []
    for m in methods:
        gains = curve_gain(curves, m)
        for e in sorted({k[0] for k in gains}):
            per = {k[1]: v for k, v in gains.items() if k[0] == e}
            p = paired_keyed(per, {s: 0.0 for s in per})
            cells.append({**p, "method": m, "epsilon": e})
    return _best_cell(cells, f"no curve of {list(methods)}")
