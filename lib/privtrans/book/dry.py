"""The dry run: every notebook at the `paper` profile's shapes, each long loop cut to its first step.

`paper` is the papers' own scale, hours on a GPU. Its first hours must not die on a misspelt key or
a shape that only the paper's sizes reach, so ``make dry`` runs every notebook with profile ``dry``:
the `paper` settings, data and models, but each loop the code marks with :func:`loop` (epochs,
steps, batches, repetitions) stops after its first iteration, and a notebook keeps two of its paired
seeds (:func:`seeds`). Every other loop (methods, tasks, grid points, settings) runs in full, since
that is where keys and shapes differ.

Each cut loop books the time its full length would take: the time of the iterations it ran (with
the loops nested in them counted at their own full length) times its length over the iterations
kept. A notebook's estimate of its `paper` cost is its wall time with every top-level cut loop
replaced by that booking, and the loops' share multiplied by the seeds it left out (so work is
assumed to scale with the seeds, an upper bound where some of it does not). It is a rough number
from one step's time on the machine that ran the dry run, which the tables that show it name.

The switch is the environment variable ``PRIVTRANS_DRY_RUN=1``, which ``session.start`` sets for a
notebook run at profile ``dry`` (so worker processes inherit it); outside a dry run :func:`loop`
yields everything and books nothing. Cached runs made in a dry run are keyed apart
(:class:`privtrans.book.runcache.RunCache`), so they can never be served to a real build.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

ENV = "PRIVTRANS_DRY_RUN"
PROFILE = "dry"  # the profile name that switches it on; its settings are `paper`'s
SEEDS_KEPT = 2  # paired seeds a dry run keeps: the fewest that give a paired interval


def active() -> bool:
    return os.environ.get(ENV) == "1"


def activate(on: bool = True) -> None:
    """Switch the dry run on (or off) for this process and the processes it starts."""
    if on:
        os.environ[ENV] = "1"
    else:
        os.environ.pop(ENV, None)
    reset()


@dataclass(eq=False)  # frames are told apart by identity: two fresh ones are equal by value
class _Frame:
    actual: float = 0.0  # seconds the cut loops directly inside took
    estimated: float = 0.0  # seconds they would take at full length


@dataclass
class _Ledger:
    top: _Frame = field(default_factory=_Frame)
    stack: list = field(default_factory=list)
    loops: dict = field(default_factory=dict)  # what -> {"runs", "kept", "full"}
    seeds: dict = field(default_factory=dict)  # the largest {"full", "kept"} seen


_LEDGER = _Ledger()


def reset() -> None:
    global _LEDGER
    _LEDGER = _Ledger()


def _length(iterable, total) -> int:
    if total is not None:
        n = total
    else:
        try:
            n = len(iterable)
        except TypeError:
            raise TypeError(f"dry.loop needs the length of {type(iterable).__name__}: pass total=") from None
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"dry.loop: the loop's length must be a non-negative int, got {n!r}")
    return n


def loop(iterable: Iterable, what: str, total: int | None = None, keep: int = 1) -> Iterator:
    """``iterable`` itself, except in a dry run: its first ``keep`` items, booking the time of all
    ``total`` (default ``len(iterable)``). ``what`` names the loop in the notebook's tally."""
    if not active():
        yield from iterable
        return
    if keep < 1:
        raise ValueError(f"dry.loop keep must be a positive int, got {keep!r}")
    n = _length(iterable, total)
    kept = min(keep, n)
    frame = _Frame()
    _LEDGER.stack.append(frame)
    started = time.perf_counter()
    ran = 0
    try:
        for item in iterable:
            if ran >= kept:
                break
            ran += 1
            yield item
    finally:
        elapsed = time.perf_counter() - started
        if frame in _LEDGER.stack:  # a loop abandoned out of order still books what it ran
            _LEDGER.stack.remove(frame)
        own = elapsed - frame.actual + frame.estimated
        booked = own * n / ran if ran else 0.0
        parent = _LEDGER.stack[-1] if _LEDGER.stack else _LEDGER.top
        parent.actual += elapsed
        parent.estimated += booked
        tally = _LEDGER.loops.setdefault(what, {"runs": 0, "kept": 0, "full": 0})
        tally["runs"] += 1
        tally["kept"] += ran
        tally["full"] += n


def seeds(paired: list[int]) -> list[int]:
    """A notebook's paired seeds, the first :data:`SEEDS_KEPT` of them in a dry run (booked)."""
    if not active() or len(paired) <= SEEDS_KEPT:
        return paired
    if len(paired) > _LEDGER.seeds.get("full", 0):
        _LEDGER.seeds = {"full": len(paired), "kept": SEEDS_KEPT}
    return paired[:SEEDS_KEPT]


def booking() -> dict:
    """What this process's cut loops booked: for a worker (an MPC party) to hand to its parent."""
    return {"actual": _LEDGER.top.actual, "estimated": _LEDGER.top.estimated,
            "loops": {k: dict(v) for k, v in _LEDGER.loops.items()}}


def absorb(other: dict) -> None:
    """Book another process's :func:`booking` here, inside the loop now running (if any), as if
    its loops had run in this process."""
    frame = _LEDGER.stack[-1] if _LEDGER.stack else _LEDGER.top
    frame.actual += other["actual"]
    frame.estimated += other["estimated"]
    for what, t in other["loops"].items():
        tally = _LEDGER.loops.setdefault(what, {"runs": 0, "kept": 0, "full": 0})
        for k in tally:
            tally[k] += t[k]


def report(wall_seconds: float) -> dict:
    """What a notebook records of its dry run: its wall time, the estimate at `paper`, the cut loops."""
    loops_ran = _LEDGER.top.actual
    loops_full = _LEDGER.top.estimated
    seed_factor = _LEDGER.seeds["full"] / _LEDGER.seeds["kept"] if _LEDGER.seeds else 1.0
    outside = max(wall_seconds - loops_ran, 0.0)
    return {
        "seconds": round(wall_seconds, 3),
        "loops_seconds": round(loops_ran, 3),
        "loops_full_seconds": round(loops_full, 3),
        "seed_factor": seed_factor,
        "paper_estimate_s": round(outside + loops_full * seed_factor, 1),
        "loops": {k: dict(v) for k, v in sorted(_LEDGER.loops.items())},
        "seeds": dict(_LEDGER.seeds),
    }
