"""The next notebook's kernel, started and its imports loaded on an idle core while this one runs.

Every notebook pays a kernel start (about 2 s) and its imports (torch, pandas, scipy, the chapter's
package: about 3 s) on one core: some 4 minutes of a 45-notebook book. Most notebooks leave part of
a core idle (a serial tail, an evaluation in the kernel), so ``WarmKernel`` starts the next
notebook's kernel early at the lowest CPU priority (nice 19: it runs on what the running notebook
leaves; where both want one core, the scheduler gives it about 1.5 % of it) and imports the modules
the notebook's code cells import (a kernel forked from a server, ``kernel_forks``, has the heavy
libraries already: its warm-up loads the chapter's modules). ``take`` gives the kernel back the
build's own priority and hands its manager to papermill. The warm-up runs silently and outside the
notebook's namespace: no name is bound, no execution count moves, so the executed notebook is the
one a cold kernel gives. A notebook's recorded seconds then start from the warm kernel.

Papermill and nbclient take a started kernel manager (``km``) and leave it running, so ``close``
shuts it down (``end_kernel``, with every process the kernel started: ``book.stopping``). A cold
kernel's manager comes from here too (``kernel_manager``), so that the build can end it the same
way. Where the priority cannot be raised again (a user may lower its own processes' priority, only
root may raise it), no kernel is warmed: a nice-19 kernel would then run the whole notebook at the
lowest priority.
"""

from __future__ import annotations

import ast
import asyncio
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from .. import stopping
from . import kernel_forks

NICE = 19
ENV = "PRIVTRANS_WARM_KERNEL"  # 0: every notebook starts its own kernel, as in Jupyter


def imported_modules(notebook) -> list[str]:
    """The modules a notebook's code cells import at their top level, in order, each once:
    ``from a.b import c`` gives ``a.b`` and ``a.b.c`` (which may be a name, not a module: the warm-up
    skips what does not import). Cells that do not parse (IPython magics) are skipped."""
    out = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                out += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                out += [node.module] + [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
    return list(dict.fromkeys(out))


def warm_up_code(modules: list[str]) -> str:
    """Kernel code that imports ``modules`` and leaves no name behind (a failed import is left for
    the notebook's own cell to report, with its traceback)."""
    return ("def _privtrans_warm(modules):\n"
            "    import importlib\n"
            "    for m in modules:\n"
            "        try:\n"
            "            importlib.import_module(m)\n"
            "        except Exception:\n"
            "            pass\n"
            f"_privtrans_warm({modules!r})\n"
            "del _privtrans_warm\n")


def can_raise_priority() -> bool:
    """Whether this process may give a process it lowered to nice 19 back its own priority (root, or
    an RLIMIT_NICE that reaches it: the limit allows nice values down to 20 - limit)."""
    if not hasattr(os, "setpriority"):
        return False
    if os.geteuid() == 0:
        return True
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NICE)
    except (ImportError, AttributeError, OSError, ValueError):
        return False
    return soft == resource.RLIM_INFINITY or 20 - soft <= os.getpriority(os.PRIO_PROCESS, 0)


def enabled() -> bool:
    """Warm the next kernel unless ``PRIVTRANS_WARM_KERNEL=0``, and only where its priority can be
    raised again."""
    return os.environ.get(ENV, "1") != "0" and can_raise_priority()


def _set_nice(pid: int, value: int) -> None:
    """Every thread of ``pid`` (Linux keeps a priority per thread; a worker forked later inherits the
    forking thread's)."""
    tasks = Path(f"/proc/{pid}/task")
    tids = [int(p.name) for p in tasks.iterdir()] if tasks.is_dir() else [pid]
    for tid in tids:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, value)
        except ProcessLookupError:
            pass


def kernel_manager(kernel_name: str, config):
    """A kernel manager, not started yet (nbclient starts it when given one that is not), that
    remembers the clients made from it: nbclient leaves the client of a kernel it did not start
    connected (its heartbeat thread polling a dead kernel), so ``end_kernel`` stops them."""
    from jupyter_client.manager import AsyncKernelManager

    class TrackedKernelManager(AsyncKernelManager):
        def client(self, **kwargs):
            kc = super().client(**kwargs)
            self.clients.append(kc)
            return kc

    km = TrackedKernelManager(kernel_name=kernel_name, config=config)
    km.clients = []
    kernel_forks.attach(km)  # started from a fork server that has the heavy libraries imported
    return km


def kernel_pid(km) -> int | None:
    """The pid of ``km``'s kernel (the leader of its own session), or None before it started."""
    return getattr(getattr(km, "provisioner", None), "pid", None)


def end_kernel(km, now: bool = True) -> None:
    """Shut ``km``'s kernel down (``now``: at once; else asking it first, as nbclient does) and end
    every process it started (``stopping.end_session``): a worker its notebook left running, or,
    on an interrupt, the busy workers of the running cell. Stops the clients made from ``km``."""
    pid = kernel_pid(km)
    if now and pid:
        stopping.end_session(pid)
    for kc in getattr(km, "clients", []):
        kc.stop_channels()

    async def stop():
        if await km.is_alive():
            await km.shutdown_kernel(now=now)  # and cleans up its connection files
        else:
            await km.cleanup_resources()

    try:
        asyncio.run(stop())
    except Exception:  # noqa: BLE001 - a kernel that is already gone
        pass
    if pid:
        stopping.end_session(pid)


class WarmKernel:
    """A kernel started for one notebook before its turn. ``take()`` -> the kernel manager to pass
    to papermill (``km=``), or None when the warm-up failed (papermill then starts its own);
    ``close()`` shuts the kernel down, whether taken or not."""

    def __init__(self, kernel_name: str, env: dict, cwd: str, modules: list[str], config_for):
        self.sockets = tempfile.mkdtemp(prefix="privtrans-kernel-")
        self.priority = os.getpriority(os.PRIO_PROCESS, 0)  # the build's own: a cold kernel would inherit it
        self.km = None
        self.pid: int | None = None
        self.closed = False
        self.error: BaseException | None = None
        self._taken = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._start, daemon=True,
                                        args=(kernel_name, env, cwd, modules, config_for(self.sockets)))
        self._thread.start()

    def _start(self, kernel_name, env, cwd, modules, config):
        async def start():
            km = kernel_manager(kernel_name, config)
            await km.start_kernel(env=env, cwd=cwd)
            self.km, self.pid = km, kernel_pid(km)
            if self._stopped.is_set():  # closed on an interrupt while it started
                stopping.end_session(self.pid)
                return
            self._lower(km.provisioner.pid)
            kc = km.client()
            kc.start_channels()
            try:
                # no timeout: at nice 19 beside a notebook that keeps both cores busy, a start takes
                # long; the wait ends when the kernel replies or dies (the client asks its manager)
                await kc.wait_for_ready(timeout=None)
                self._lower(km.provisioner.pid)  # threads the kernel started meanwhile
                await kc.execute_interactive(warm_up_code(modules), silent=True, store_history=False)
            finally:
                kc.stop_channels()

        try:
            asyncio.run(start())
        except BaseException as e:  # noqa: BLE001 - reported by take(): the notebook then starts cold
            self.error = e

    def _lower(self, pid: int) -> None:
        if not self._taken.is_set():
            _set_nice(pid, NICE)

    def wait(self) -> bool:
        """Block until the warm-up is over; whether it succeeded."""
        self._thread.join()
        return self.error is None and self.km is not None

    def take(self):
        self._taken.set()
        try:
            if self.km is not None:  # the build's priority first, so that what is left of the warm-up is quick
                _set_nice(self.km.provisioner.pid, self.priority)
            self.wait()
            if self.km is not None:  # and again for threads started while the warm-up lowered them
                _set_nice(self.km.provisioner.pid, self.priority)
        except (OSError, AttributeError, TypeError) as e:
            self.error = self.error or e
        if self.error is not None:
            print(f"    (a warm kernel failed: {type(self.error).__name__}: {self.error}; starting a cold one)",
                  file=sys.stderr)
            self.close()
            return None
        return self.km

    def close(self, now: bool = False):
        """Shut the kernel down once its warm-up is over; ``now`` (the build was interrupted): at
        once, with every process it started, without waiting for a warm-up at low priority. A
        second call does nothing."""
        if self.closed:
            return
        self.closed = True
        if now:
            self._stopped.set()
            if self.pid:
                stopping.end_session(self.pid)  # a warm-up waiting on a dead kernel then ends
            self._thread.join(5.0)
        else:
            self._thread.join()
        km, self.km = self.km, None
        if km is not None:
            end_kernel(km, now=True)
        elif self.pid:
            stopping.end_session(self.pid)
        shutil.rmtree(self.sockets, ignore_errors=True)
