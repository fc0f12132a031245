"""Run a party function as separate OS processes that talk through torch.distributed (gloo).

The paper's benchmark starts one process per party with an ``env://`` rendezvous; we do the same.
``run(fn, *args)`` starts ``world_size`` processes on this host (forkserver preloaded with torch
and crypten, or spawn; either way ``fn`` must be importable: keep party functions in ``lib/``),
rendezvous on a free loopback TCP port, runs
``fn(*args)`` in each after ``crypten.init()``, and returns the per-rank return values. It kills
every party if one fails or the time limit passes (gloo would otherwise wait for 30 minutes).

The same party code runs across two hosts: start on each host ::

    python -m privtrans.shared.mpc.runner --rank 0 --world-size 2 --rendezvous tcp://HOST0:29500 \
        privtrans.shared.mpc.parties:generation_report '{"variant": "merge", "n_new": 8}'
    python -m privtrans.shared.mpc.runner --rank 1 --world-size 2 --rendezvous tcp://HOST0:29500 \
        privtrans.shared.mpc.parties:generation_report '{"variant": "merge", "n_new": 8}'

(``HOST0`` = the address of rank 0, reachable from rank 1; set ``GLOO_SOCKET_IFNAME`` to the NIC
if gloo picks the wrong one.) Each process prints its result as JSON. ``run_party`` is the
in-process equivalent for code that wants to be a party itself.

A script that calls ``run`` must guard its entry point with ``if __name__ == "__main__":`` (the
spawn start method re-imports the main module); notebooks and pytest need nothing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing as mp
import os
import pickle
import queue
import socket
import time
import traceback

DEFAULT_TIMEOUT = 300.0


class PartyError(RuntimeError):
    """A party raised, died, or the run exceeded its time limit."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _resolve(fn):
    if callable(fn):
        return fn
    mod, _, name = str(fn).partition(":")
    if not name:
        raise ValueError(f"party function must be 'module:function', got {fn!r}")
    return getattr(importlib.import_module(mod), name)


def run_party(rank: int, world_size: int, rendezvous: str, fn, *args, threads: int | None = 1, **kwargs):
    """Be party ``rank``: set CrypTen's env, ``crypten.init()``, run ``fn``, shut down; return its value."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} outside world of size {world_size}")
    os.environ.update(DISTRIBUTED_BACKEND="gloo", RENDEZVOUS=rendezvous,
                      WORLD_SIZE=str(world_size), RANK=str(rank))
    if rendezvous.startswith(("tcp://127.", "tcp://localhost")) and os.path.exists("/sys/class/net/lo"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch

    if threads:
        torch.set_num_threads(threads)
    from . import compat

    fn = _resolve(fn)  # a bad name fails before the rendezvous
    cr = compat.crypten(init=True, verbose_comm=True)
    try:
        return fn(*args, **kwargs)
    finally:
        try:
            cr.uninit()
        except Exception:  # noqa: BLE001 - shutting down after a failure must not mask it
            pass


def _child(rank, world_size, rendezvous, fn, args, kwargs, threads, out, dry_run=False):
    import signal

    from privtrans.book import stopping

    stopping.die_with_parent(signal.SIGKILL)  # the forkserver (or the caller) gone: no party waits on gloo
    try:
        if dry_run:  # a forkserver started before the dry run was switched on lacks its variable
            from privtrans.book import dry

            dry.activate(True)
        value = run_party(rank, world_size, rendezvous, fn, *args, threads=threads, **kwargs)
        if dry_run:
            out.put((rank, True, pickle.dumps(value), dry.booking()))
        else:
            out.put((rank, True, pickle.dumps(value)))
    except BaseException:  # noqa: BLE001 - report everything to the parent
        out.put((rank, False, traceback.format_exc()))


def _context(start_method: str | None):
    """forkserver (preloaded with torch + crypten: parties start in well under a second) where
    available, else spawn. Never plain fork: the caller may have initialised CrypTen itself."""
    if start_method is None:
        start_method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    if start_method == "fork":
        raise ValueError("fork would copy the caller's CrypTen state into the parties; use spawn or forkserver")
    ctx = mp.get_context(start_method)
    if start_method == "forkserver":
        ctx.set_forkserver_preload(["privtrans.shared.mpc._preload"])
    return ctx


def run(fn, *args, world_size: int = 2, timeout: float = DEFAULT_TIMEOUT, threads: int | None = 1,
        start_method: str | None = None, **kwargs) -> list:
    """Run ``fn(*args, **kwargs)`` as ``world_size`` parties on this host; return values by rank.

    ``fn`` is a module-level function or a 'module:function' string (importable in a fresh
    interpreter). Arguments and return values must pickle. Raises ``PartyError`` with the failing
    party's traceback, or after ``timeout`` seconds; every child is gone when it returns.
    """
    if world_size < 2:
        raise ValueError("a private run needs world_size >= 2")
    if callable(fn) and getattr(fn, "__module__", "") == "__main__":
        raise ValueError("party functions must live in an importable module (lib/), not __main__")
    ctx = _context(start_method)
    out = ctx.Queue()
    rendezvous = f"tcp://127.0.0.1:{free_port()}"
    from privtrans.book import dry

    dry_run = dry.active()  # the parties' cut loops are booked here (rank 0's: the parties run in step)
    procs = [ctx.Process(target=_child, args=(r, world_size, rendezvous, fn, args, kwargs, threads, out,
                                              *((True,) if dry_run else ())),
                         daemon=True, name=f"privtrans-party-{r}") for r in range(world_size)]
    for p in procs:
        p.start()
    results, deadline = {}, time.monotonic() + timeout
    try:
        while len(results) < world_size:
            left = deadline - time.monotonic()
            if left <= 0:
                raise PartyError(f"parties did not finish within {timeout:.0f} s")
            try:
                rank, ok, payload, *booking = out.get(timeout=min(left, 0.5))
            except queue.Empty:
                dead = [r for r, p in enumerate(procs)
                        if r not in results and not p.is_alive() and p.exitcode is not None]
                if dead and out.empty():
                    time.sleep(0.5)  # a child that just reported may still be flushing the queue
                    if out.empty():
                        p = procs[dead[0]]
                        raise PartyError(f"party {dead[0]} died with exit code {p.exitcode} before reporting")
                continue
            if not ok:
                raise PartyError(f"party {rank} failed:\n{payload}")
            results[rank] = pickle.loads(payload)
            if booking and rank == 0:
                dry.absorb(booking[0])
    finally:
        for p in procs:
            p.join(timeout=2.0 if len(results) == world_size else 0.05)
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(timeout=2.0)
            if p.is_alive():
                p.kill()
                p.join()
        out.close()
    return [results[r] for r in range(world_size)]


def main(argv=None):
    ap = argparse.ArgumentParser(description="Be one party of a CrypTen run (see module docstring).")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--rendezvous", required=True, help="e.g. tcp://10.0.0.1:29500 (rank 0's address)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("function", help="module:function, e.g. privtrans.shared.mpc.parties:generation_cost")
    ap.add_argument("kwargs", nargs="?", default="{}", help="JSON object of keyword arguments")
    a = ap.parse_args(argv)
    value = run_party(a.rank, a.world_size, a.rendezvous, a.function, threads=a.threads, **json.loads(a.kwargs))
    print(json.dumps(value, default=str))


if __name__ == "__main__":
    main()
