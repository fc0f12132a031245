"""How a build stops: every process it started ends with it, within seconds.

A build starts processes in three places: the pipeline's kernels (one per notebook, each the leader
of its own session: ``jupyter_client`` starts it with ``start_new_session``, so that an interrupt of
the kernel reaches the processes it starts), the pipeline's own workers (``--jobs`` > 1), and, inside
a kernel, the notebook's workers (``book.workers``) and MPC parties (``shared.mpc.runner``). Three
rules keep none of them running after the build:

- the pipeline turns SIGTERM and SIGHUP into the KeyboardInterrupt that SIGINT raises
  (:func:`raise_on_signals`), so that every stop goes through the same ``finally`` blocks;
- a kernel is ended with its whole session (:func:`end_session`): the kernel and every process
  it started, including those its death re-parents to init, which no process tree reaches;
- a worker asks to die with its parent (:func:`die_with_parent`, Linux's ``PR_SET_PDEATHSIG``), so
  that a kernel killed outright (or a pipeline killed with SIGKILL, whose kernels then exit on
  their own: ipykernel watches its parent) takes its workers with it.

While cleaning up, a second Ctrl-C is held back (:func:`held`) rather than cutting the cleanup short.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
STOP_SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)

_state = {"holding": 0, "pending": None, "received": None, "raise": KeyboardInterrupt}


def received() -> int | None:
    """The first stop signal this process received since :func:`raise_on_signals`, or None."""
    return _state["received"]


def _handler(signum, frame):
    if _state["received"] is None:
        _state["received"] = signum
    if _state["holding"]:
        _state["pending"] = signum
        return
    _raise(signum)


def _raise(signum: int):
    exc = _state["raise"]
    raise exc(128 + signum) if exc is SystemExit else exc()


@contextmanager
def raise_on_signals(exception=KeyboardInterrupt):
    """Within the block, SIGINT, SIGTERM and SIGHUP raise ``exception`` in the main thread (SIGINT
    too where the build was started with it ignored: a background job of a script). The previous
    handlers come back at the end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    install(exception)
    old = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s in STOP_SIGNALS:
        signal.signal(s, _handler)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)


def install(exception=KeyboardInterrupt) -> None:
    """Make :func:`_handler` raise ``exception`` (and forget earlier signals)."""
    _state.update(holding=0, pending=None, received=None)
    _state["raise"] = exception


@contextmanager
def held():
    """Run the block to its end even if a stop signal comes meanwhile; raise it afterwards."""
    _state["holding"] += 1
    try:
        yield
    finally:
        _state["holding"] -= 1
        if not _state["holding"] and _state["pending"] is not None:
            signum, _state["pending"] = _state["pending"], None
            _raise(signum)


def exit_on_signals() -> None:
    """For a worker process of the pipeline: a stop signal raises SystemExit, which ends a running
    notebook through its ``finally`` (its kernel ended) and an idle worker without a traceback."""
    install(SystemExit)
    for s in STOP_SIGNALS:
        signal.signal(s, _handler)


def pipeline_worker(parent: int) -> None:
    """The pipeline's worker initializer: stop signals end its notebook (:func:`exit_on_signals`),
    and so does the pipeline's death, even by SIGKILL (SIGTERM when ``parent`` exits)."""
    exit_on_signals()
    die_with_parent(signal.SIGTERM, parent)


def bound_to_this_process():
    """A ``preexec_fn`` for a nested pipeline this process waits on (``make dry``, the stability
    build): when this process ends, even killed outright, the child gets SIGTERM and stops through
    its own cleanup."""
    return functools.partial(die_with_parent, signal.SIGTERM, os.getpid())


def die_with_parent(sig: int = signal.SIGKILL, parent: int | None = None) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent exits; whether that was set up
    (False elsewhere). Linux ties it to the parent *thread* that started this process: for a pool
    worker or an MPC party, the thread that waits for it, which lives as long. ``parent``: the pid
    this process was started by; if that has already gone, ``sig`` is sent now."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), sig)
    return True


def session_members(sid: int) -> list[int] | None:
    """The pids of the processes in session ``sid``, read from /proc; None where there is none."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    out = []
    for name in names:
        if name.isdigit():
            try:
                if os.getsid(int(name)) == sid:
                    out.append(int(name))
            except OSError:
                pass
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"  # a zombie has ended; its parent reaps it
    except OSError:
        pass
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def end_session(sid: int, grace: float = 1.0) -> list[int]:
    """End session ``sid`` (a kernel's: its leader's pid) and every process in it: SIGTERM, then
    SIGKILL for what is left after ``grace`` seconds, again for any process started meanwhile (a
    pool replaces a worker that died). Returns the pids signalled. Refuses this process's own
    session. Without /proc, the leader's process group is signalled instead."""
    if sid <= 1 or sid == os.getsid(0):
        raise ValueError(f"refusing to end session {sid}: it is not a kernel's")
    if session_members(sid) is None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(sid, sig)
            except OSError:
                return []
            time.sleep(grace)
        return []
    signalled: set[int] = set()
    sig, deadline = signal.SIGTERM, time.monotonic() + 4 * grace
    while time.monotonic() < deadline:
        pids = [p for p in session_members(sid) or [] if _alive(p)]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        signalled |= set(pids)
        wait = time.monotonic() + grace
        while time.monotonic() < wait and any(_alive(p) for p in pids):
            time.sleep(0.05)
        sig = signal.SIGKILL
    return sorted(signalled)


def end_processes(procs, grace: float = 10.0) -> None:
    """SIGTERM each ``multiprocessing`` process, wait up to ``grace`` seconds in all for them to end
    (a pipeline worker ends its notebook's kernel first), then SIGKILL the rest."""
    procs = [p for p in procs if p.is_alive()]
    for p in procs:
        p.terminate()
    deadline = time.monotonic() + grace
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(1.0)
