"""Fill the run cache from several processes: independent, cached runs on every core.

A notebook runs one kernel with one torch thread (two threads on a shared 2-core box ran far slower
than one), which leaves the other core idle while it trains, say, 36 sets of shard models that do
not depend on each other. ``in_parallel`` runs such calls in forked worker processes, one torch
thread each; every call stores its result in the run cache (``RunCache.get_or_make`` writes whole
files by rename, so workers never see each other's half-written entries), and the notebook's own
loop then reads the results back as cache hits, in its own order. Results are the same as a
sequential run: each call is deterministic given its own seed. ``values_in_parallel`` is the same
for calls whose small results are not worth a cache entry (the scores of models already trained):
their return values come back from the workers, in the order of the calls.

Workers: ``$PRIVTRANS_WORKERS`` if set, else the cores this process may use, at most 2 (the book's
target machine). The standard library's pool rather than joblib: joblib's default backend pickles
the calls, and these are closures over a notebook's in-memory data, which ``fork`` shares for free.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from typing import Callable, Iterable

WORKERS_ENV = "PRIVTRANS_WORKERS"
MAX_DEFAULT = 2
_PENDING: list[Callable[[], object]] = []


def default_workers() -> int:
    raw = os.environ.get(WORKERS_ENV)
    if raw is not None:
        try:
            n = int(raw)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"${WORKERS_ENV} must be a positive integer, got {raw!r}")
        return n
    return max(1, min(MAX_DEFAULT, len(os.sched_getaffinity(0))))


class _Sized:
    """An iterator with a length, so that a progress bar knows its total."""

    def __init__(self, it, n: int):
        self.it, self.n = it, n

    def __iter__(self):
        return iter(self.it)

    def __len__(self):
        return self.n


def _start_worker(parent: int) -> None:
    """A worker dies with the process that forked it (the notebook's kernel): a kernel killed outright
    would otherwise leave it training, re-parented to init (``book.stopping``). It ends quietly when its
    pool ends it (SIGTERM at the pool's close): the handler a build process installs, which turns
    SIGTERM into a KeyboardInterrupt, would print a traceback from every idle worker."""
    import signal

    from . import stopping

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    stopping.die_with_parent(signal.SIGKILL, parent)


def _run(i: int) -> int:
    import torch

    torch.set_num_threads(1)
    _PENDING[i]()
    return i


def _run_kept(i: int) -> tuple[int, object]:
    import torch

    torch.set_num_threads(1)
    return i, _PENDING[i]()


def _import_before_fork() -> None:
    """Import torch's compiler front end here, once, rather than in every worker. torch.optim wraps
    its methods in ``torch._disable_dynamo``, which imports ``torch._dynamo`` (about 2 s) on a
    process's first optimizer: a forked worker inherits the import where this process made it,
    and pays for it itself where not, once per worker and per ``in_parallel`` call. Measured on
    merge's Table 3 seeds at smoke (two calls, two workers): 28-30 user-s to 24-25 user-s."""
    if "torch" in sys.modules:
        import torch._dynamo  # noqa: F401


def in_parallel(calls: Iterable[Callable[[], object]], workers: int | None = None, progress=None) -> None:
    """Run zero-argument ``calls`` (each filling the run cache) on ``workers`` processes; their return
    values are dropped. ``progress``: wraps a sized iterable, as ``progress_bar.steps`` does. Falls back to
    running in this process with one worker, one call, where ``fork`` is not available, or where the
    runs train on a GPU (``device.pick_device``): CUDA cannot be used again in a process forked after
    the notebook used it, and one GPU gains little from several processes."""
    _dispatch(calls, workers, progress, keep=False)


def values_in_parallel(calls: Iterable[Callable[[], object]], workers: int | None = None, progress=None) -> list:
    """As :func:`in_parallel`, for calls whose results are small and not cached (scores of models
    already trained): each call's return value, pickled back from its worker, in the order of
    ``calls``. Evaluating a list of models on both cores instead of one."""
    return _dispatch(calls, workers, progress, keep=True)


def _dispatch(calls, workers, progress, keep: bool) -> list | None:
    global _PENDING
    calls = list(calls)
    workers = default_workers() if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers}")
    wrap = progress or (lambda it: it)
    from . import dry

    if dry.active():  # one process, so that the dry run's tally sees every cut loop
        workers = 1
    if workers > 1 and len(calls) > 1:
        from .device import pick_device

        if pick_device().type != "cpu":
            workers = 1
    if workers == 1 or len(calls) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        out = [c() for c in wrap(calls)]
        return out if keep else None
    if _PENDING:
        raise RuntimeError("in_parallel is not re-entrant: a worker may not start workers of its own")
    _PENDING = calls
    _import_before_fork()
    results: dict[int, object] = {}
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(calls)), maxtasksperchild=None,
                                                      initializer=_start_worker, initargs=(os.getpid(),)) as pool:
            for got in wrap(_Sized(pool.imap_unordered(_run_kept if keep else _run, range(len(calls))), len(calls))):
                if keep:
                    results[got[0]] = got[1]
    finally:
        _PENDING = []
    return [results[i] for i in range(len(calls))] if keep else None
