"""Trained runs through the book's run cache, so no model is trained twice in one build.

Table 1 and Figure 6 read the same runs, Figure 2's tied cell at the Table 1 settings is a Table 1
run, Figure 9 inspects Table 1's models: every notebook asks :func:`cached_run` and gets the stored
result when one exists. A run is keyed (:class:`privtrans.book.runcache.RunCache`) by

- the full :class:`~privtrans.dpformer.train.RunSpec` (method, ε, seed, epochs, B, lr, sizes, ...);
- a fingerprint of the data (hash of the sequences), so a change of preprocessing is a new run;
- the source of every module in :data:`TRAINING_MODULES`, so editing how a run trains never serves
  a stale model.

Entries: ``_build/cache/dpformer/<method>-<key>.pt`` (the result dict, weights included) with a
``.json`` sidecar of the key's parts.
"""

from __future__ import annotations

from privtrans.book.runcache import RunCache

from . import train
from .data import SeqData, Split

# Every module whose source decides what a run computes: the loop, the models, the metric, the
# split, Re-Attention and its moment rules, and the DP mechanism (step, Phantom, clipping, σ from ε).
TRAINING_MODULES = (
    "privtrans.dpformer.runs", "privtrans.dpformer.train", "privtrans.dpformer.data",
    "privtrans.dpformer.baselines", "privtrans.dpformer.sasrec", "privtrans.dpformer.metrics",
    "privtrans.dpformer.reattention", "privtrans.dpformer.moments",
    "privtrans.shared.dp.step", "privtrans.shared.dp.phantom", "privtrans.shared.dp.clipping",
    "privtrans.shared.dp.accounting",
)


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


def report(n_runs: int, trained: int, reused: int) -> str:
    """The line each training notebook prints: how many runs were trained here, how many reused."""
    return f"{n_runs} runs: {trained} trained, {reused} from the cache"
