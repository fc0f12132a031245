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


def cached_runs(cache: RunCache, spec: train.RunSpec, seeds, split: Split, data: SeqData | str, device=None,
                log=None) -> list[dict]:
    """``[cached_run(cache, spec.with_(seed=s), ...) for s in seeds]``."""
    fp = data if isinstance(data, str) else data.fingerprint()
    return [cached_run(cache, spec.with_(seed=int(s)), split, fp, device=device, log=log) for s in seeds]


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
    for s in todo.values():  # each plan's search (about 3 s) once, here: the forked workers inherit the
        train.plan_of(s, len(split.train))  # memo (a smoke build searched 17 times for 4 plans without)
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
