"""Hyper-parameters as the paper chose them: a grid per method, the best on a validation split.

The paper searched LR ∈ {1e-3, 1e-4} (and PT, CLS for TAFT) and reports the winners in Tables
4-6. Its LR does not transfer to a 64-wide ViT, so each profile (``profile.yaml``) lists its own
grid; the grid is run once, at the notebook's first seed, on the validation split (the last 20 % of
the training set), never on the test set; the winner is then trained on the full training set at
every seed. Figure 2(a)'s losses choose their rate on the validation accuracy averaged over all the
paired seeds instead (``variant_specs``): there one seed's choice decided the verdict.
"""

from __future__ import annotations

import itertools
import numbers

import pandas as pd

from .experiments import Bench, fit_runs
from .finetune import FitSpec, describe, spec_from  # noqa: F401 (the notebooks call selection.describe)


def grid_specs(method_cfg: dict, schedule: dict) -> list[FitSpec]:
    """Every combination of ``method_cfg['grid']`` on top of its ``fixed`` settings and the schedule."""
    fixed, grid = dict(method_cfg.get("fixed") or {}), dict(method_cfg.get("grid") or {})
    if not grid:
        return [spec_from({**schedule, **fixed})]
    keys = sorted(grid)
    return [spec_from({**schedule, **fixed, **dict(zip(keys, combo))})
            for combo in itertools.product(*(grid[k] for k in keys))]


def select(bench: Bench, task: str, specs: list[FitSpec], seed) -> tuple[FitSpec, pd.DataFrame]:
    """(best spec, one row per candidate with its validation accuracy); ties go to the first listed.
    ``seed``: one seed, or a list of seeds whose validation accuracies are averaged (``n_seeds``). A
    grid of one candidate is chosen without a fit: its row has no accuracy (NaN) and ``n_seeds`` 0."""
    seeds = [seed] if isinstance(seed, numbers.Integral) else list(seed)
    if not _candidates(specs):  # nothing to choose between: no validation fit (its accuracy would decide nothing)
        return specs[0], pd.DataFrame([{"config": describe(specs[0]), "val_accuracy": float("nan"),
                                        "seconds": 0.0, "n_seeds": 0}])
    results = fit_runs(bench, [(task, s, sd, "val") for s in specs for sd in seeds])
    rows = []
    for i, s in enumerate(specs):
        mine = results[i * len(seeds):(i + 1) * len(seeds)]
        rows.append({"config": describe(s), "val_accuracy": sum(r["accuracy"] for r in mine) / len(seeds),
                     "seconds": sum(r["seconds"] for r in mine), "spec": s})
    df = pd.DataFrame(rows)
    best = df.loc[df.val_accuracy.idxmax(), "spec"]
    return best, df.drop(columns="spec").assign(n_seeds=len(seeds))


def _candidates(specs: list[FitSpec]) -> list[FitSpec]:
    """The specs ``select`` validates: all of them, or none when there is only one."""
    return specs if len(specs) > 1 else []


def chosen(bench: Bench, tasks: list[str], method_cfg: dict, schedule: dict, seed: int) -> dict[str, FitSpec]:
    """{task: the spec ``select`` picks from ``method_cfg``'s grid at ``seed``}: Table 1's choice,
    which the PGD (Table 12) and CNN notebooks start from (its runs are cached, so nothing retrains);
    Figure 2's losses choose their own (``variant_specs``)."""
    grid = grid_specs(method_cfg, schedule)
    return {t: select(bench, t, grid, seed)[0] for t in tasks}


def variant_specs(bench: Bench, tasks: list[str], method_cfg: dict, schedule: dict, variants: dict,
                  seeds: list[int], retuned=(), reference: str | None = None
                  ) -> tuple[dict[str, dict[str, FitSpec]], pd.DataFrame]:
    """({variant: {task: spec}}, the retuned variants' validation grids) for ``variants`` ({name:
    overrides of ``method_cfg``'s spec}).

    A variant named in ``retuned`` chooses from ``method_cfg``'s grid itself, with its overrides in
    place, by its validation accuracy averaged over ``seeds`` (the paired seeds it is then tested at,
    so that no one seed's luck picks the rate). The others are a starting spec with their overrides:
    ``reference``'s (a retuned variant with no overrides, e.g. RSL's TAFT-1), or, when None, Table
    1's choice (``chosen`` at ``seeds[0]``). Why: a loss's scale sets the step a learning rate takes,
    so a rate tuned for one loss need not suit another (Figure 2(a): see the chapter page)."""
    unknown = sorted(set(retuned) - set(variants))
    if unknown:
        raise ValueError(f"retuned names variants that are not in variants: {unknown}; allowed: {sorted(variants)}")
    if reference is not None and (reference not in retuned or variants[reference]):
        raise ValueError(f"reference must name a retuned variant with no overrides; got {reference!r} "
                         f"(retuned: {list(retuned)}, its overrides: {variants.get(reference)})")
    own = {v: grid_specs({**method_cfg, "fixed": {**(method_cfg.get("fixed") or {}), **variants[v]}}, schedule)
           for v in retuned}
    # every grid point at every seed on every core, before select reads them back
    fit_runs(bench, [(t, s, sd, "val") for v in retuned for t in tasks for s in _candidates(own[v]) for sd in seeds])
    out, grids = {}, []
    for v in retuned:
        out[v] = {}
        for t in tasks:
            out[v][t], grid = select(bench, t, own[v], seeds)
            grids.append(grid.assign(task=t, variant=v, chosen=grid.config == describe(out[v][t])))
    start = out[reference] if reference is not None else chosen(bench, tasks, method_cfg, schedule, seeds[0])
    for v, overrides in variants.items():
        if v not in out:
            out[v] = {t: start[t].with_(**overrides) for t in tasks}
    return {v: out[v] for v in variants}, (pd.concat(grids, ignore_index=True) if grids else pd.DataFrame())


def tuned_runs(bench: Bench, tasks: list[str], methods: dict, schedule: dict, seeds: list[int],
               extra: dict | None = None, progress=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """For every task and method: select on the validation split (first seed), then train the
    winner at every seed. ``extra``: {name: settings} run at every seed without selection (the
    paper's own setting). Returns (runs: task, method, seed, accuracy, seconds, config;
    selection: task, method, config, val_accuracy)."""
    jobs = [(t, m) for t in tasks for m in methods] + [(t, m) for t in tasks for m in (extra or {})]
    # every grid point, then every chosen setting at every seed, on every core (privtrans.book.workers)
    fit_runs(bench, [(t, s, seeds[0], "val") for t, m in jobs if m in methods
                     for s in _candidates(grid_specs(methods[m], schedule))], progress)
    best, sel = {}, []
    for t, m in jobs:
        if m in methods:
            best[t, m], grid = select(bench, t, grid_specs(methods[m], schedule), seeds[0])
            sel.append(grid.assign(task=t, method=m, chosen=grid.config == describe(best[t, m])))
        else:
            best[t, m] = spec_from({**schedule, **extra[m]})
    cells = [(t, m, s) for t, m in jobs for s in seeds]
    results = fit_runs(bench, [(t, best[t, m], s, "test") for t, m, s in cells], progress)
    runs = [{"task": t, "method": m, "seed": s, "accuracy": r["accuracy"], "seconds": r["seconds"],
             "config": describe(best[t, m])} for (t, m, s), r in zip(cells, results)]
    selection = pd.concat(sel, ignore_index=True) if sel else pd.DataFrame()
    return pd.DataFrame(runs), selection
