"""The runs the notebooks share, through the one run cache (``_build/cache/taft``).

A ``Bench`` holds the pretrained backbone and the downstream tasks of one notebook, and caches
the frozen features of each cut. Fine-tuning runs (``fit_run``) and shard sets (``shards``) are
cached by everything that determines them (the backbone's settings, the task and its sizes, the
method's settings, the seed, the source of the code that makes them), so the composition and the
forgetting notebooks train the shard models once.

The seeds of one (task, spec) that are not cached yet are trained together as one vectorised model
(``Bench.fit_runs_together``, ``finetune.fit_together``; equal to the runs apart to float tolerance,
about 1.5 times faster than the seeds one after another at the ci sizes, where a TAFT-1 step is
mostly matrix products: ``benchmarks/seeds_together_taft.py``), each stored under the key ``fit_run``
would use, so a later single run is a cache hit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import partial

import numpy as np
import torch

from privtrans.book import workers
from privtrans.book.runcache import RunCache

from . import compose, data, finetune
from .finetune import FitSpec, describe, spec_from  # noqa: F401 (the notebooks call X.spec_from)
from .pretrain import PretrainSpec, backbone_key, get_backbone

# the code of a cached run: this module and every privtrans module it imports (runcache.source_fingerprint)
CODE = [__name__]


def set_threads(n: int = 1) -> None:
    """One intra-op thread, as every worker has (``book.workers``): on a shared 2-core box two threads
    ran 18× slower."""
    torch.set_num_threads(n)


@dataclass
class Bench:
    backbone_cfg: dict
    backbone_seed: int
    task_cfg: dict  # {task name: generator keywords}
    train_per_class: int | None = None  # smoke: a cut of every training set
    cache: RunCache = field(default_factory=lambda: RunCache("taft"))

    def __post_init__(self):
        self.spec = PretrainSpec.from_cfg(self.backbone_cfg)
        self.backbone, self.backbone_cached = get_backbone(self.spec, self.backbone_seed, self.cache)
        self.vit = self.backbone.model()
        self._tasks, self._feats = data.TaskSet(self.task_cfg, self.train_per_class), {}

    def task(self, name: str) -> data.Task:
        return self._tasks(name)

    def features(self, name: str, cut: int):
        """(x_train, y_train, x_test, y_test) as frozen features after ``cut`` blocks."""
        if (name, cut) not in self._feats:
            t = self.task(name)
            self._feats[name, cut] = (finetune.features(self.vit, t.x_train, cut), t.y_train,
                                      finetune.features(self.vit, t.x_test, cut), t.y_test)
        return self._feats[name, cut]

    def split(self, name: str, cut: int, split: str):
        """``data.evaluation_split`` of the features after ``cut`` blocks."""
        return data.evaluation_split(*self.features(name, cut), split)

    def prepare(self, name: str, spec: FitSpec) -> None:
        """Compute the features ``spec`` starts from now, so that worker processes share them."""
        self.features(name, self.cut(spec))

    def key_parts(self, name: str) -> dict:
        return {"backbone": asdict(self.spec), "backbone_seed": self.backbone_seed,
                "backbone_key": backbone_key(self.spec, self.backbone_seed, self.cache), "task": name,
                "task_cfg": self.task_cfg.get(name) or {}, "train_per_class": self.train_per_class}

    def cut(self, spec: FitSpec) -> int:
        return len(self.vit.blocks) - spec.tuned

    def fit_parts(self, name: str, spec: FitSpec, seed: int, split: str) -> dict:
        """The cache key's parts of one fine-tuning run (``fit_run`` and ``fit_runs_together`` alike)."""
        return {**self.key_parts(name), "spec": spec.as_dict(), "seed": seed, "split": split}

    @staticmethod
    def _fit_record(model, r: finetune.FitResult, xt, yt, n_train: int) -> dict:
        return {"accuracy": finetune.accuracy(model, xt, yt), "seconds": r.seconds, "final_loss": r.final_loss,
                "delta_norm": r.delta_norm, "n_train": n_train}

    def fit_run(self, name: str, spec: FitSpec, seed: int, split: str = "test") -> dict:
        """One fine-tuning run: accuracy, wall time, final loss, ‖Δw‖ (cached)."""
        def make():
            x, y, xt, yt = self.split(name, self.cut(spec), split)
            classes = self.task(name).classes
            m = finetune.make_model(self.vit, spec, classes, init_seed=seed)
            r = finetune.fit(m, x, y, spec, seed, classes=classes)
            return self._fit_record(m, r, xt, yt, len(y))

        out, _ = self.cache.get_or_make("fit", self.fit_parts(name, spec, seed, split), make, code=CODE)
        return out

    def missing_seeds(self, name: str, spec: FitSpec, seeds: list[int], split: str = "test") -> list[int]:
        """The seeds (in order, once each) whose ``fit_run`` is not in the cache yet."""
        return [s for s in dict.fromkeys(seeds)
                if self.cache.get("fit", self.cache.key(self.fit_parts(name, spec, s, split), CODE)) is None]

    def fit_runs_together(self, name: str, spec: FitSpec, seeds: list[int], split: str = "test") -> list[dict]:
        """``[fit_run(name, spec, s, split) for s in seeds]``, the missing seeds trained together
        (``finetune.fit_together``: one vectorised model, equal to the runs apart to float tolerance)
        and each stored under ``fit_run``'s own key. A result's ``seconds`` is then its share of the
        together wall time (that time / the seeds trained together)."""
        todo = self.missing_seeds(name, spec, seeds, split)
        if len(todo) > 1:
            x, y, xt, yt = self.split(name, self.cut(spec), split)
            classes = self.task(name).classes
            models = [finetune.make_model(self.vit, spec, classes, init_seed=s) for s in todo]
            results = finetune.fit_together(models, x, y, spec, todo, classes=classes)
            for s, m, r in zip(todo, models, results):
                parts = self.fit_parts(name, spec, s, split)
                self.cache.put("fit", self.cache.key(parts, CODE), self._fit_record(m, r, xt, yt, len(y)), parts)
                self.cache.misses += 1
        return [self.fit_run(name, spec, s, split) for s in seeds]

    def shards(self, name: str, spec: FitSpec, n_shards: int, seed: int) -> compose.ShardSet:
        """The shard models of one method on one task (cached; shared by notebooks 03 and 04)."""
        def make():
            x, y, _, _ = self.features(name, self.cut(spec))
            return compose.train_shards(self.vit, x, y, spec, self.task(name).classes, n_shards, seed)

        out, _ = self.cache.get_or_make("shards", {**self.key_parts(name), "spec": spec.as_dict(),
                                                   "n_shards": n_shards, "seed": seed}, make, code=CODE)
        return out


    def dp_run(self, name: str, method: str, regime: str, spec, seed: int) -> dict:
        """One cell of Table 3 (``privtrans.taft.dp.run``) on the test split, cached."""
        from . import dp

        def make():
            x, y, xt, yt = self.split(name, self.cut(dp.fit_spec(method, regime)), "test")
            r = dp.run(self.vit, x, y, xt, yt, self.task(name).classes, method, regime, spec, seed)
            return {"accuracy": r.accuracy, "sigma": r.sigma, "seconds": r.seconds}

        out, _ = self.cache.get_or_make("dp", {**self.key_parts(name), "method": method, "regime": regime,
                                               "dp": asdict(spec), "seed": seed}, make, code=CODE)
        return out


def fit_runs(bench, jobs: list[tuple], progress=None) -> list[dict]:
    """``bench.fit_run(task, spec, seed, split)`` for every job, computed on every core
    (``privtrans.book.workers``) and returned in order from the cache. ``bench``: a Bench or a
    CNNBench (``prepare`` and ``fit_run``). On a Bench the missing seeds of each (task, spec, split)
    are trained together (``Bench.fit_runs_together``), one call per such group on the workers; a
    CNNBench (no ``fit_runs_together``) trains one run per job."""
    for t, spec, _, _ in jobs:
        bench.prepare(t, spec)
    if hasattr(bench, "fit_runs_together"):
        groups: dict[tuple, list[int]] = {}
        for t, spec, seed, split in jobs:
            groups.setdefault((t, spec, split), []).append(seed)
        calls = []
        for (t, spec, split), group_seeds in groups.items():
            todo = bench.missing_seeds(t, spec, group_seeds, split)
            if todo:
                calls.append(partial(bench.fit_runs_together, t, spec, todo, split))
        if any(len(c.args[2]) > 1 for c in calls):
            import privtrans.shared.seeds_together  # noqa: F401  (once here, not in every forked worker: opacus)
        workers.in_parallel(calls, progress=progress)
    else:
        workers.in_parallel([partial(bench.fit_run, *job) for job in jobs], progress=progress)
    return [bench.fit_run(*job) for job in jobs]


def cnn_composed_runs(cbench, jobs: list[tuple], n_shards: int, progress=None) -> list[dict]:
    """``cbench.composed(task, spec, n_shards, seed)`` for every (task, spec, seed) job of a CNNBench,
    on every core, in order."""
    for t, spec, _ in jobs:
        cbench.prepare(t, spec)
    workers.in_parallel([partial(cbench.composed, t, spec, n_shards, s) for t, spec, s in jobs], progress=progress)
    return [cbench.composed(t, spec, n_shards, s) for t, spec, s in jobs]


def dp_runs(bench: Bench, jobs: list[tuple], progress=None) -> list[dict]:
    """``bench.dp_run(task, method, regime, dp_spec, seed)`` for every job, on every core, in order."""
    from . import dp

    for t, method, regime, *_ in jobs:
        bench.prepare(t, dp.fit_spec(method, regime))
    workers.in_parallel([partial(bench.dp_run, *job) for job in jobs], progress=progress)
    return [bench.dp_run(*job) for job in jobs]


def bench(cfg: dict) -> Bench:
    """The backbone and tasks of an experiment's settings (``backbone``, ``backbone_seed``,
    ``task_cfg``, ``train_per_class``), in a process with one torch thread."""
    set_threads(1)
    return Bench(cfg["backbone"], cfg["backbone_seed"], cfg["task_cfg"], cfg["train_per_class"])


def pretraining_cost(spec: PretrainSpec) -> float:
    """Grows with a backbone's pretraining arithmetic: images (MNIST-5k's 4,500 and the font digits)
    × epochs × width² × depth. Orders ``benches``'s runs longest first, so the longest does not run
    alone at the end (Table 9's: CLS+ 34 s, MAE 23 s, CLS-small 15 s); it changes no result."""
    return (4500 + 10 * spec.extra_glyph_digits) * spec.epochs * spec.dim ** 2 * spec.depth


def benches(backbones: dict, backbone_seed: int, task_cfg: dict, train_per_class, progress=None) -> dict:
    """{name: Bench} for several backbone settings, the missing backbones pretrained on every core,
    the longest first (``pretraining_cost``)."""
    set_threads(1)
    cache = RunCache("taft")
    specs = sorted((PretrainSpec.from_cfg(b) for b in backbones.values()), key=pretraining_cost, reverse=True)
    workers.in_parallel([partial(get_backbone, spec, backbone_seed, cache) for spec in specs], progress=progress)
    return {name: Bench(b, backbone_seed, task_cfg, train_per_class) for name, b in backbones.items()}


def composition_runs(bench: Bench, tasks: list[str], specs: dict, shards: list[int], seeds: list[int],
                     progress=None, measure_all: bool = False):
    """Tables 2, 10 and 11: for every task, N and seed, each method's N shard models composed by
    averaging their weights (``specs``: {'TAFT': tangent spec, 'Soup': non-linear spec, ...}), tested.
    Returns (runs: task, shards, method, seed, accuracy; the largest |composed − ensemble| logit of
    the tangent compositions, measured rather than assumed). ``measure_all``: measure that distance
    for every method (column ``composed_minus_ensemble``), not only the tangent ones."""
    import pandas as pd

    jobs = [(t, n, s, m) for t in tasks for n in shards for s in seeds for m in specs]
    _prepare(bench, tasks, specs.values())
    workers.in_parallel([partial(bench.shards, t, specs[m], n, s) for t, n, s, m in jobs], progress=progress)
    # the tests of the trained shard sets, on every core too (each is N tangent forwards of the test set)
    rows = workers.values_in_parallel([partial(_composition_row, bench, t, n, s, m, specs[m], measure_all)
                                       for t, n, s, m in jobs])
    max_abs_diff = max((row["composed_minus_ensemble"] for (*_, m), row in zip(jobs, rows)
                        if specs[m].method == "taft"), default=0.0)
    return pd.DataFrame(rows), max_abs_diff


def _prepare(bench: Bench, tasks, specs) -> None:
    """The features every (task, spec) starts from, computed here once and shared with forked workers."""
    for t in tasks:
        for spec in specs:
            bench.prepare(t, spec)


def _composition_row(bench: Bench, task: str, n: int, seed: int, method: str, spec: FitSpec, measure_all: bool) -> dict:
    """One row of ``composition_runs``: the composed model's test accuracy and, for a tangent method
    (or every one with ``measure_all``), its largest |composed − ensemble| logit."""
    sset = bench.shards(task, spec, n, seed)
    _, _, xt, yt = bench.features(task, bench.cut(spec))
    composed = compose.composed_logits(bench.vit, sset, xt)
    row = {"task": task, "shards": n, "method": method, "seed": seed, "accuracy": compose.acc(composed.argmax(1), yt)}
    if spec.method == "taft" or measure_all:
        ensemble = compose.shard_logits(bench.vit, sset, xt).mean(0)
        row["composed_minus_ensemble"] = float((composed - ensemble).abs().max())
    return row


def forgetting_curves(bench: Bench, task: str, specs: dict, n_shards: int, seed: int, removed: list[int],
                      draws: int) -> tuple[list[dict], float]:
    """Figures 1(a-b): accuracy as ``r`` of the ``n_shards`` shards are forgotten, the mean over
    ``draws`` random sets of removed shards. TAFT forgets by dropping Δw from the mean; SISA keeps
    the non-linear shard models apart and takes a majority vote of the rest. Per-shard logits are
    computed once (the composed tangent model's logits are their mean, exactly); the subtraction
    path itself is run once per draw set and its largest logit error against that mean returned.
    ``specs``: {'TAFT': tangent spec, 'SISA': non-linear spec}."""
    taft = bench.shards(task, specs["TAFT"], n_shards, seed)
    sisa = bench.shards(task, specs["SISA"], n_shards, seed)
    _, _, xt, yt = bench.features(task, bench.cut(specs["TAFT"]))
    _, _, xs, _ = bench.features(task, bench.cut(specs["SISA"]))
    lt, ls = compose.shard_logits(bench.vit, taft, xt), compose.shard_logits(bench.vit, sisa, xs)
    rng = np.random.default_rng(1_000_003 * seed + n_shards)
    mean_state = compose.average(taft.states)
    gone = int(rng.integers(n_shards))
    forgot = compose.subtract(mean_state, n_shards, taft.states[gone])
    kept_all = [i for i in range(n_shards) if i != gone]
    err = float((finetune.logits(taft.model(bench.vit, forgot), xt) - lt[kept_all].mean(0)).abs().max())
    rows = []
    for r in removed:
        acc = {"TAFT": [], "SISA": []}
        for _ in range(draws if 0 < r else 1):
            keep = np.sort(rng.permutation(n_shards)[r:])
            acc["TAFT"].append(compose.acc(lt[keep].mean(0).argmax(1), yt))
            acc["SISA"].append(compose.acc(compose.aggregate(ls[keep], "vote"), yt))
        rows += [{"task": task, "seed": seed, "removed": r, "method": m, "accuracy": float(np.mean(v))}
                 for m, v in acc.items()]
    return rows, err


def forgetting_curves_runs(bench: Bench, jobs: list[tuple], specs: dict, n_shards: int, removed: list[int],
                           draws: int, progress=None) -> tuple[list[dict], list[float]]:
    """``forgetting_curves`` for every (task, seed) of ``jobs`` on every core (each is the 2·N shard
    models' test logits, seconds apart): (all rows, each job's subtraction error), in ``jobs``' order."""
    _prepare(bench, dict.fromkeys(t for t, _ in jobs), specs.values())
    out = workers.values_in_parallel([partial(forgetting_curves, bench, t, specs, n_shards, s, removed, draws)
                                      for t, s in jobs], progress=progress)
    return [r for rows, _ in out for r in rows], [err for _, err in out]


def retraining(bench: Bench, task: str, taft_spec: FitSpec, paragon_spec: FitSpec, n_shards: int, seed: int,
               fraction: float) -> list[dict]:
    """Figures 1(c) and 3: forget a random ``fraction`` of the training samples. TAFT retrains only
    the shards that held one (each from its own seed, on what is left of it) and recomposes; the
    paragon trains NLFT-1 on everything that is left. At ``fraction`` 0 there is nothing to forget:
    the TAFT row is the composed model as it stands, and no paragon is trained (no claim reads one
    that forgot nothing; at ci its ten fits took 20 s of a book that must fit in 60 minutes). Cached.
    Rows: accuracy, seconds (all the retraining the request needed), shard_seconds (one shard's
    retraining: the cost of a request that hits one shard)."""
    def make():
        x, y, xt, yt = bench.features(task, bench.cut(taft_spec))
        classes = bench.task(task).classes
        sset = bench.shards(task, taft_spec, n_shards, seed)
        rng = np.random.default_rng(2_000_003 * seed + int(round(1000 * fraction)))
        forget = set(rng.permutation(len(y))[:int(round(fraction * len(y)))].tolist())
        states, secs = list(sset.states), []
        for i, idx in enumerate(sset.indices):
            left = [j for j in idx.tolist() if j not in forget]
            if len(left) == len(idx):
                continue
            if not left:
                raise ValueError(f"shard {i} lost every sample; use fewer shards or a smaller fraction")
            states[i], t = compose.train_shard(bench.vit, x, y, left, taft_spec, classes, sset.init_seed,
                                               compose.shard_seed(seed, i))
            secs.append(t)
        composed = sset.model(bench.vit, compose.average(states))
        rows = [{"task": task, "seed": seed, "fraction": fraction, "method": "TAFT shard retraining",
                 "accuracy": finetune.accuracy(composed, xt, yt), "seconds": float(sum(secs)),
                 "shard_seconds": float(np.mean(secs)) if secs else 0.0, "shards_retrained": len(secs)}]
        if not forget:
            return rows
        keep = torch.as_tensor(sorted(set(range(len(y))) - forget), dtype=torch.long)
        xp, _, xpt, _ = bench.features(task, bench.cut(paragon_spec))
        para = finetune.make_model(bench.vit, paragon_spec, classes, init_seed=seed)
        r = finetune.fit(para, xp[keep], y[keep], paragon_spec, seed, classes=classes)
        return rows + [{"task": task, "seed": seed, "fraction": fraction, "method": "Paragon NLFT-1",
                        "accuracy": finetune.accuracy(para, xpt, yt), "seconds": r.seconds, "shard_seconds": None,
                        "shards_retrained": None}]

    out, _ = bench.cache.get_or_make("retrain", {**bench.key_parts(task), "taft": taft_spec.as_dict(),
                                                 "paragon": paragon_spec.as_dict(), "n_shards": n_shards,
                                                 "seed": seed, "fraction": fraction}, make, code=CODE)
    return out


def retraining_runs(bench: Bench, jobs: list[tuple], taft_spec: FitSpec, paragon_spec: FitSpec, n_shards: int,
                    progress=None) -> list[dict]:
    """``retraining`` for every (task, seed, fraction) job, on every core; the rows in job order."""
    for t, _, _ in jobs:
        bench.prepare(t, taft_spec)
        bench.prepare(t, paragon_spec)
    workers.in_parallel([partial(retraining, bench, t, taft_spec, paragon_spec, n_shards, s, f) for t, s, f in jobs],
                        progress=progress)
    return [row for t, s, f in jobs for row in retraining(bench, t, taft_spec, paragon_spec, n_shards, s, f)]


def variant_runs(bench: Bench, specs: dict, seeds: list[int], progress=None):
    """Ablations (Figure 2, Table 12): for every variant's spec per task (``specs``: {variant: {task:
    FitSpec}}, from ``selection.variant_specs``), a cached run per seed on the test split. Returns
    rows (task, variant, seed, accuracy, delta_norm, lr, config) as a DataFrame."""
    import pandas as pd

    tasks = list(next(iter(specs.values())))
    jobs = [(t, v, s) for t in tasks for v in specs for s in seeds]
    fit_runs(bench, [(t, specs[v][t], s, "test") for t, v, s in jobs], progress)
    rows = []
    for t, v, s in jobs:
        spec = specs[v][t]
        r = bench.fit_run(t, spec, s)
        rows.append({"task": t, "variant": v, "seed": s, "accuracy": r["accuracy"], "delta_norm": r["delta_norm"],
                     "lr": spec.lr, "config": describe(spec)})
    return pd.DataFrame(rows)
