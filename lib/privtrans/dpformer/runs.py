"""Trained runs through the book's run cache, so no model is trained twice in one build.

Table 1 and Figure 6 read the same runs, Figure 2's tied cell at the Table 1 settings is a Table 1
run, Figure 9 inspects Table 1's models: every notebook asks :func:`cached_run` and gets the stored
result when one exists. A run is keyed (:class:`privtrans.book.runcache.RunCache`) by

- the full :class:`~privtrans.dpformer.train.RunSpec` (method, ε, seed, epochs, B, lr, sizes, ...);
- a fingerprint of the data (hash of the sequences), so a change of preprocessing is a new run;
- the source of this module and of every privtrans module it imports (``TRAINING_MODULES``, followed
  through the import graph by the run cache), so editing how a run trains never serves a stale model.

Entries: ``_build/cache/dpformer/<method>-<key>.pt`` (the result dict, weights included) with a
``.json`` sidecar of the key's parts.
"""

from __future__ import annotations

import torch

from privtrans.book.runcache import RunCache

from . import train
from .data import SeqData, Split

# The code of a run: this module and every privtrans module it imports, followed through the import
# graph (the loop, the models, the metric, the split, Re-Attention, the DP mechanism; runcache)
TRAINING_MODULES = (__name__,)


def run_cache(root=None) -> RunCache:
    """The chapter's cache (``_build/cache/dpformer`` unless ``root`` is given, e.g. in tests)."""
    return RunCache("dpformer", root)


def cached_run(cache: RunCache, spec: train.RunSpec, split: Split, data: SeqData | str, device=None,
               log=None) -> dict:
    """The result of ``spec`` on these data, trained (and stored) only on a miss.

    ``data`` is the dataset or its fingerprint; ``result["cached"]`` says whether it was stored.
    """
    fp = data if isinstance(data, str) else data.fingerprint()

    def make():
        return {**train.train_run(spec, split, device=device, log=log), "data": fp}

    result, hit = cache.get_or_make(spec.method, {"spec": spec.as_dict(), "data": fp}, make,
                                    code=TRAINING_MODULES)
    return {**result, "cached": hit}


# Whether cached_runs trains a group's missing seeds together when not told. Off: measured on the
# book's CPU (benchmarks/seeds_together_dpformer.py, one torch thread, k = 5, ci settings) the
# vectorised runs are exact but slower than the runs apart: DP-SGD 2-3x slower (per-sample gradients
# by vmap materialise k·B·|θ| numbers where Phantom Clipping builds none), non-private about as fast
# or slower (the batched embedding/tied-head backward under vmap). Turn on where that changes.
TOGETHER_BY_DEFAULT = False


def cached_runs(cache: RunCache, spec: train.RunSpec, seeds, split: Split, data: SeqData | str, device=None,
                log=None, together: bool | None = None) -> list[dict]:
    """``[cached_run(cache, spec.with_(seed=s), ...) for s in seeds]``, the seeds the cache lacks trained
    together as one vectorised model (:func:`privtrans.dpformer.train.train_together`, equal to the
    runs apart to float tolerance) and stored each under exactly the key :func:`cached_run` uses, so
    a later single call is a hit. One missing seed, or a setting :func:`train.together_supported`
    refuses, is trained apart as before. Hits and misses are counted per seed, as ``cached_run`` does.
    ``together``: None means :data:`TOGETHER_BY_DEFAULT`; False trains every missing seed apart.
    """
    together = TOGETHER_BY_DEFAULT if together is None else together
    fp = data if isinstance(data, str) else data.fingerprint()
    seeds = [int(s) for s in seeds]
    specs = [spec.with_(seed=s) for s in seeds]
    parts = [{"spec": s.as_dict(), "data": fp} for s in specs]
    keys = [cache.key(p, code=TRAINING_MODULES) for p in parts]
    found = [cache.get(spec.method, k) for k in keys]
    missing = [i for i, r in enumerate(found) if r is None]
    todo = sorted({seeds[i] for i in missing})  # a repeated seed is trained once
    if not together or len(todo) < 2 or not train.together_supported(spec, device):
        return [cached_run(cache, s, split, fp, device=device, log=log) for s in specs]
    made = dict(zip(todo, train.train_together(spec, split, todo, device=device, log=log)))
    out = []
    for i, s in enumerate(seeds):
        if found[i] is not None:
            cache.hits += 1
            out.append({**found[i], "cached": True})
            continue
        result = {**made[s], "data": fp}
        if i == seeds.index(s):
            cache.misses += 1
            cache.put(spec.method, keys[i], result, parts[i])
            out.append({**result, "cached": False})
        else:  # the same seed asked twice: the second is a hit, as with cached_run
            cache.hits += 1
            out.append({**result, "cached": True})
    return out


def train_missing(cache: RunCache, specs, split: Split, data: SeqData | str, device=None, progress=None) -> int:
    """Train the runs of ``specs`` that the cache lacks on every core first (one process per run, one
    torch thread each: ``privtrans.book.workers``), so that the ``cached_run`` calls that follow read
    them back; returns how many were trained. The counters stay as if those calls had trained them
    (a miss each), so the notebooks' "t trained, h from the cache" lines stay true. On a GPU, or with
    one missing run, nothing happens here: the calls that follow train in this process."""
    from functools import partial

    from privtrans.book import workers
    from privtrans.book.device import pick_device

    fp = data if isinstance(data, str) else data.fingerprint()
    todo = {}
    for s in specs:
        k = cache.key({"spec": s.as_dict(), "data": fp}, code=TRAINING_MODULES)
        if k not in todo and not cache.path(s.method, k).is_file():
            todo[k] = s
    on_cpu = (torch.device(device) if device is not None else pick_device()).type == "cpu"
    if len(todo) < 2 or not on_cpu:
        return 0
    misses = cache.misses
    workers.in_parallel([partial(cached_run, cache, s, split, fp, device) for s in todo.values()], progress=progress)
    # each missing run trained once: in a worker, whose counters are its own, or here (one worker, a
    # dry run, a GPU), where cached_run counted it already; set, not added, so neither counts twice
    cache.misses = misses + len(todo)
    cache.hits -= len(todo)  # the reads that follow count them as hits again
    return len(todo)


def report(n_runs: int, trained: int, reused: int) -> str:
    """The line each training notebook prints: how many runs were trained here, how many reused."""
    return f"{n_runs} runs: {trained} trained, {reused} from the cache"
