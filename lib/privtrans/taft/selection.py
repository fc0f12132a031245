"""Hyper-parameters as the paper chose them: a grid per method, the best on a validation split.

The paper searched LR ∈ {1e-3, 1e-4} (and PT, CLS for TAFT) and reports the winners in Tables
4-6. Its LR does not transfer to a 64-wide ViT, so each profile (``profile.yaml``) lists its own
grid; the grid is run on the validation split (the last 20 % of the training set), never on the
test set, at validation seeds (``validation_seeds``) disjoint from the judged seeds; the winner is
then trained on the full training set at every judged seed. Figure 2(a)'s losses choose their rate
on the validation accuracy averaged over as many validation seeds as there are judged seeds
(``variant_specs``): there one seed's choice decided the verdict.

Shard methods (TAFT composed, Model Soup, SISA, the PEFT compositions) choose on shards
(``shard_tuned``): each candidate trains its N shard models on the validation split's training part
and is scored by the composition's (or SISA's vote's) validation accuracy, so every arm of a
composition table gets the same kind of search, on the data it is trained on. Every grid's winner
is recorded with whether it sits at an edge of its grid (``at_edge``).
"""

from __future__ import annotations

import itertools
import numbers
from functools import partial

import pandas as pd

from privtrans.book import workers

from . import compose
from .experiments import Bench, fit_runs
from .finetune import FitSpec, describe, spec_from  # noqa: F401 (the notebooks call selection.describe)


# the code of a cached validation shard set: this module and every privtrans module it imports
CODE = [__name__]
# validation seeds are the judged seeds shifted by this much: disjoint from any judged seed set of
# fewer than 10,000 seeds, so no judged seed's luck picks a hyper-parameter
VALIDATION_SEED_OFFSET = 10_000


def validation_seeds(seeds, n: int = 1) -> list[int]:
    """The seeds hyper-parameters are chosen at: the first ``n`` judged ``seeds``, each shifted by
    ``VALIDATION_SEED_OFFSET`` (disjoint from the judged seeds)."""
    seeds = list(seeds)
    if not 1 <= n <= len(seeds):
        raise ValueError(f"n must be between 1 and the number of judged seeds {len(seeds)}, got {n!r}")
    return [VALIDATION_SEED_OFFSET + s for s in seeds[:n]]


def at_edge(grid: dict, spec) -> bool:
    """Whether ``spec``'s value of some numeric grid axis with two or more points is its smallest
    or largest (the best may lie beyond the grid; a two-point grid has no interior)."""
    for k, values in (grid or {}).items():
        nums = [v for v in values if isinstance(v, numbers.Real) and not isinstance(v, bool)]
        if len(nums) >= 2 and getattr(spec, k) in (min(nums), max(nums)):
            return True
    return False


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
    """{task: the spec ``select`` picks from ``method_cfg``'s grid at ``seed`` (a validation seed)}: Table 1's choice,
    which the PGD (Table 12) and CNN notebooks start from (its runs are cached, so nothing retrains);
    Figure 2's losses choose their own (``variant_specs``)."""
    grid = grid_specs(method_cfg, schedule)
    return {t: select(bench, t, grid, seed)[0] for t in tasks}


def variant_specs(bench: Bench, tasks: list[str], method_cfg: dict, schedule: dict, variants: dict,
                  seeds: list[int], retuned=(), reference: str | None = None, n_validation_seeds: int | None = None
                  ) -> tuple[dict[str, dict[str, FitSpec]], pd.DataFrame]:
    """({variant: {task: spec}}, the retuned variants' validation grids) for ``variants`` ({name:
    overrides of ``method_cfg``'s spec}).

    A variant named in ``retuned`` chooses from ``method_cfg``'s grid itself, with its overrides in
    place, by its validation accuracy averaged over as many validation seeds as ``seeds`` (the paired
    seeds it is then tested at) has, disjoint from them (``validation_seeds``), so that no one seed's
    luck picks the rate (``n_validation_seeds``: fewer, where a notebook's budget needs it). The others are a starting spec with their overrides:
    ``reference``'s (a retuned variant with no overrides, e.g. RSL's TAFT-1), or, when None, Table
    1's choice (``chosen`` at the first validation seed). Why: a loss's scale sets the step a learning rate takes,
    so a rate tuned for one loss need not suit another (Figure 2(a): see the chapter page)."""
    unknown = sorted(set(retuned) - set(variants))
    if unknown:
        raise ValueError(f"retuned names variants that are not in variants: {unknown}; allowed: {sorted(variants)}")
    if reference is not None and (reference not in retuned or variants[reference]):
        raise ValueError(f"reference must name a retuned variant with no overrides; got {reference!r} "
                         f"(retuned: {list(retuned)}, its overrides: {variants.get(reference)})")
    own = {v: grid_specs({**method_cfg, "fixed": {**(method_cfg.get("fixed") or {}), **variants[v]}}, schedule)
           for v in retuned}
    vseeds = validation_seeds(seeds, n_validation_seeds or len(seeds))
    # every grid point at every validation seed on every core, before select reads them back
    fit_runs(bench, [(t, s, sd, "val") for v in retuned for t in tasks for s in _candidates(own[v]) for sd in vseeds])
    out, grids = {}, []
    for v in retuned:
        out[v] = {}
        for t in tasks:
            out[v][t], grid = select(bench, t, own[v], vseeds)
            grids.append(grid.assign(task=t, variant=v, chosen=grid.config == describe(out[v][t]),
                                     at_edge=at_edge(method_cfg.get("grid"), out[v][t])))
    start = out[reference] if reference is not None else chosen(bench, tasks, method_cfg, schedule, vseeds[0])
    for v, overrides in variants.items():
        if v not in out:
            out[v] = {t: start[t].with_(**overrides) for t in tasks}
    return {v: out[v] for v in variants}, (pd.concat(grids, ignore_index=True) if grids else pd.DataFrame())


def validation_choice(bench: Bench, tasks: list[str], methods: dict, schedule: dict, seeds: list[int],
                      progress=None) -> tuple[dict, pd.DataFrame]:
    """``tuned_runs``'s selection alone, no test run: ({(task, method): spec}, one row per candidate
    with task, method, lr, chosen and at_edge), at the first validation seed of ``seeds``."""
    vseed = validation_seeds(seeds)[0]
    fit_runs(bench, [(t, s, vseed, "val") for t in tasks for m in methods
                     for s in _candidates(grid_specs(methods[m], schedule))], progress)
    best, sel = {}, []
    for t in tasks:
        for m in methods:
            specs = grid_specs(methods[m], schedule)
            best[t, m], grid = select(bench, t, specs, vseed)
            sel.append(grid.assign(task=t, method=m, lr=[s.lr for s in specs],
                                   chosen=grid.config == describe(best[t, m]),
                                   at_edge=at_edge(methods[m].get("grid"), best[t, m])))
    return best, pd.concat(sel, ignore_index=True)


def tuned_runs(bench: Bench, tasks: list[str], methods: dict, schedule: dict, seeds: list[int],
               extra: dict | None = None, progress=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """For every task and method: select on the validation split (at the first validation seed,
    ``validation_seeds``: not a judged seed), then train the winner at every judged seed. ``extra``: {name: settings} run at every seed without selection (the
    paper's own setting). Returns (runs: task, method, seed, accuracy, seconds, config;
    selection: task, method, config, val_accuracy)."""
    jobs = [(t, m) for t in tasks for m in methods] + [(t, m) for t in tasks for m in (extra or {})]
    # every grid point, then every chosen setting at every seed, on every core (privtrans.book.workers)
    best, selection = validation_choice(bench, tasks, methods, schedule, seeds, progress)
    for t, m in jobs:
        if m not in methods:
            best[t, m] = spec_from({**schedule, **extra[m]})
    cells = [(t, m, s) for t, m in jobs for s in seeds]
    results = fit_runs(bench, [(t, best[t, m], s, "test") for t, m, s in cells], progress)
    runs = [{"task": t, "method": m, "seed": s, "accuracy": r["accuracy"], "seconds": r["seconds"],
             "config": describe(best[t, m])} for (t, m, s), r in zip(cells, results)]
    return pd.DataFrame(runs), selection


def shard_validation(bench: Bench, task: str, spec, n_shards: int, seed: int) -> dict:
    """One candidate of a shard method, scored on the validation split: ``n_shards`` models trained
    on a random partition of the validation split's training part (``compose.train_shards``, as the
    test runs train on the whole training set), then their composition by averaging weights
    (``composed``: TAFT, Soup, the PEFT methods) and SISA's majority vote (``vote``), each's accuracy
    on the validation part; ``seconds``, the shards' training time. Cached, so the composition,
    forgetting and PEFT notebooks share the sets they have in common."""
    def make():
        x, y, xv, yv = bench.split(task, bench.cut(spec), "val")
        sset = compose.train_shards(bench.vit, x, y, spec, bench.task(task).classes, n_shards, seed)
        composed = compose.composed_logits(bench.vit, sset, xv)
        per_shard = compose.shard_logits(bench.vit, sset, xv)
        return {"composed": compose.acc(composed.argmax(1), yv),
                "vote": compose.acc(compose.aggregate(per_shard, "vote"), yv),
                "seconds": float(sum(sset.seconds)), "n_train": len(y)}

    out, _ = bench.cache.get_or_make("shards_val", {**bench.key_parts(task), "spec": spec.as_dict(), "n_shards": n_shards,
                                                    "seed": seed, "split": "val"}, make, code=CODE)
    return out


SCORES = ("composed", "vote")


def shard_tuned(bench: Bench, tasks: list[str], methods: dict, shards: list[int], seeds: list[int],
                n_validation_seeds: int = 1, progress=None) -> tuple[dict, pd.DataFrame]:
    """Each shard method's settings per (task, N), chosen on shards of the validation split
    (``shard_validation``) at ``n_validation_seeds`` validation seeds (``validation_seeds(seeds)``,
    disjoint from the judged ``seeds``; accuracies averaged over them; ties to the first listed).

    ``methods``: {name: {"fixed": settings with the schedule, "grid": {axis: values}, "score":
    "composed" (default) or "vote"}}. A grid of one candidate is taken without a fit. Returns
    ({(task, name, N): FitSpec}, one row per candidate: task, method, shards, lr, config, score,
    val_accuracy, seconds, n_seeds, chosen, at_edge)."""
    vseeds = validation_seeds(seeds, n_validation_seeds)
    for m, cfg in methods.items():
        if cfg.get("score", "composed") not in SCORES:
            raise ValueError(f"{m}: score must be one of {SCORES}, got {cfg.get('score')!r}")
    grids = {m: grid_specs(cfg, {}) for m, cfg in methods.items()}
    for t in tasks:
        for specs in grids.values():
            bench.prepare(t, specs[0])
    jobs = [(t, s, n, sd) for t in tasks for m in methods for n in shards for s in _candidates(grids[m]) for sd in vseeds]
    workers.in_parallel([partial(shard_validation, bench, *job) for job in dict.fromkeys(jobs)], progress=progress)
    best, rows = {}, []
    for t in tasks:
        for m, cfg in methods.items():
            score = cfg.get("score", "composed")
            for n in shards:
                if not _candidates(grids[m]):
                    best[t, m, n] = grids[m][0]
                    rows.append({"task": t, "method": m, "shards": n, "lr": grids[m][0].lr,
                                 "config": describe(grids[m][0]), "score": score,
                                 "val_accuracy": float("nan"), "seconds": 0.0, "n_seeds": 0, "chosen": True,
                                 "at_edge": False})
                    continue
                mine = []
                for s in grids[m]:
                    got = [shard_validation(bench, t, s, n, sd) for sd in vseeds]
                    mine.append({"task": t, "method": m, "shards": n, "lr": s.lr, "config": describe(s), "score": score,
                                 "val_accuracy": sum(g[score] for g in got) / len(got),
                                 "seconds": sum(g["seconds"] for g in got), "n_seeds": len(got), "spec": s})
                top = max(range(len(mine)), key=lambda i: (mine[i]["val_accuracy"], -i))
                best[t, m, n] = mine[top]["spec"]
                for i, r in enumerate(mine):
                    r.pop("spec")
                    rows.append({**r, "chosen": i == top, "at_edge": at_edge(cfg.get("grid"), best[t, m, n])})
    return best, pd.DataFrame(rows)


def shard_composition_runs(bench: Bench, tasks: list[str], specs: dict, shards: list[int], seeds: list[int],
                           progress=None, measure_all: bool = False):
    """``experiments.composition_runs`` where each method's spec depends on the task and N (``specs``:
    {(task, method, N): FitSpec}, from ``shard_tuned``): one call per (task, N), the rows concatenated
    and the largest |composed − ensemble| logit over all of them."""
    from .experiments import composition_runs

    methods = list(dict.fromkeys(m for _, m, _ in specs))
    frames, worst = [], 0.0
    for t in tasks:
        for n in shards:
            runs, diff = composition_runs(bench, [t], {m: specs[t, m, n] for m in methods}, [n], seeds,
                                          progress=progress, measure_all=measure_all)
            frames.append(runs.assign(config=runs.method.map({m: describe(specs[t, m, n]) for m in methods})))
            worst = max(worst, diff)
    return pd.concat(frames, ignore_index=True), worst
