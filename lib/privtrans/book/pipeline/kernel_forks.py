"""Notebook kernels forked from a process that has already imported the heavy libraries.

A cold kernel imports numpy, scipy.stats, pandas, matplotlib and torch before its notebook's first
cell runs: about 4 s of one core, paid by every one of the book's notebooks (``warm``: some 2 s to
start and 3 s of imports; measured here, a forked kernel was ready and had run a cell in 1.1 s). Instead each pipeline
process starts one *fork server* (``serve``, run as ``python -m`` this module): a single-threaded
Python with the same interpreter, environment and working directory a kernel would get, which
imports those libraries once (``PRELOAD``) and then forks a kernel per request. The child is what
``python -m ipykernel_launcher -f <connection file>`` would be, minus the imports:

- its own session, as jupyter_client gives a kernel (``book.stopping`` ends it and all it started);
- the request's environment and working directory (a request whose environment differs from the
  server's in anything but ``PER_KERNEL``, which no preloaded library reads at import, gets a cold
  kernel: a library may read its settings at import, as matplotlib reads MPLBACKEND);
- new seeds for the random number generators seeded at import (Python's, numpy's legacy one);
- it dies with the server (``stopping.die_with_parent``), which exits when the pipeline process that
  started it is gone or closes its socket: a killed build leaves no kernel behind.

``ForkProvisioner`` is jupyter_client's local provisioner with only the launch replaced: it keeps a
``ForkedKernel`` (the ``Popen`` methods the provisioner calls: poll, wait, send_signal, kill,
terminate) where the local one keeps a ``Popen``. Where anything is amiss (no Linux, a server that
failed, another interpreter in the kernel's command), the kernel starts cold, as before. A build
uses fork servers where each of its processes runs a few notebooks (``worth_it``: a single notebook
starts faster cold); ``PRIVTRANS_KERNEL_FORKS=0`` or ``1`` decides instead.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

from ..progress_bar import LOG_ENV

ENV = "PRIVTRANS_KERNEL_FORKS"
# A smoke build profiled (py-spy, every process): besides these, its kernels spent 48 s importing
# opacus (the shared DP mechanisms import it), 57 s torch._dynamo (torch.optim's first optimizer, and
# ``workers`` before it forks), 15 s ipykernel's own modules, and 51 s reading the library's import
# graph, which every run-cache key reads (``_read_import_graph``)
PRELOAD = ("numpy", "scipy.stats", "pandas", "matplotlib", "matplotlib.pyplot", "torch", "torch._dynamo",
           "opacus", "ipykernel.kernelapp")
# what ipykernel sets before its notebook imports matplotlib (kernelapp.init_gui_pylab); matplotlib reads
# it at import, so the server sets it first, as a kernel would have it
MPLBACKEND = "module://matplotlib_inline.backend_inline"
# set per kernel by the pipeline (the progress log) and by jupyter_client; no preloaded library reads them
PER_KERNEL = frozenset({LOG_ENV, "JPY_PARENT_PID", "JPY_SESSION_NAME"})
LAUNCHER = ["-m", "ipykernel_launcher"]


MIN_NOTEBOOKS = 3  # a server's imports cost about one cold kernel's: it pays from a few notebooks a process
_wanted: bool | None = None  # the build's choice (``use``); None: on


def use(on: bool | None) -> None:
    """The build's choice for this process (None: back to the default, on)."""
    global _wanted
    _wanted = on


def worth_it(notebooks: int, jobs: int) -> bool:
    """Whether a build of ``notebooks`` on ``jobs`` processes gains from fork servers: each process
    pays one server's imports, each kernel saves about as much."""
    return notebooks >= MIN_NOTEBOOKS * jobs


def supported() -> bool:
    """Linux, with pidfds (a kernel forked by the server is not this process's child to wait for)."""
    return sys.platform.startswith("linux") and hasattr(os, "pidfd_open")


def enabled() -> bool:
    """Where supported: as ``PRIVTRANS_KERNEL_FORKS`` says (0 or 1), else as the build chose."""
    if not supported():
        return False
    if os.environ.get(ENV) in ("0", "1"):
        return os.environ[ENV] == "1"
    return _wanted is not False


def _env_key(env: dict) -> tuple:
    return tuple(sorted((k, v) for k, v in env.items() if k not in PER_KERNEL))


# ---------------------------------------------------------------- the server (its own process)

def _send(sock: socket.socket, msg: dict) -> None:
    sock.sendall(json.dumps(msg).encode() + b"\n")


def _lines(sock: socket.socket):
    buf = b""
    while True:
        data = sock.recv(1 << 16)
        if not data:
            return
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield json.loads(line)


def _kernel(req: dict, server: int) -> int:
    """In the forked child: become the kernel ``python -m ipykernel_launcher <args>`` would be; returns
    its exit status."""
    import runpy

    import numpy as np

    from .. import stopping

    os.setsid()
    stopping.die_with_parent(signal.SIGKILL, server)
    for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"], JPY_PARENT_PID=str(server))  # ipykernel exits when its parent goes
    np.random.seed()  # Python's own generator reseeds itself in a forked child (os.register_at_fork)
    sys.path[0] = os.getcwd()  # what `python -m` puts first
    sys.argv = ["ipykernel_launcher", *req["args"]]
    try:
        runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


def _read_import_graph() -> None:
    """Read the running privtrans's import graph (``book.imports``: 1.1 s of parsing 180 files) into its
    memo, which every kernel inherits: each run-cache key reads it (``runcache.source_fingerprint``),
    and the memo still reads any file edited since, by its mtime."""
    from ..imports import import_graph
    from ..runcache import package_dir

    import_graph(package_dir())


def serve(fd: int) -> None:
    """The server's loop on socket ``fd``: {"op": "fork", "args", "env", "cwd"} -> {"pid"};
    {"op": "status", "pid"} -> {"code"} (None while it runs). It reaps its children and exits when
    the socket closes or its parent has gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the pipeline's to handle
    sock = socket.socket(fileno=fd)
    parent = os.getppid()
    os.environ.setdefault("MPLBACKEND", MPLBACKEND)
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    from .. import stopping  # noqa: F401 - the children use it
    _read_import_graph()

    _send(sock, {"ready": os.getpid()})
    codes: dict[int, int] = {}
    lines = _lines(sock)
    while os.getppid() == parent:
        while True:  # reap: a kernel that ended is a zombie until then
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            codes[pid] = os.waitstatus_to_exitcode(status)
        if not select.select([sock], [], [], 0.2)[0]:
            continue
        try:
            req = next(lines)
        except StopIteration:
            return
        if req["op"] == "status":
            _send(sock, {"code": codes.get(req["pid"])})
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                sock.close()
                code = _kernel(req, os.getppid())
            except BaseException:  # noqa: BLE001 - reported, then the child ends as a failed kernel would
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _send(sock, {"pid": pid})


# ---------------------------------------------------------------- the pipeline's side

class Server:
    """One fork server, started with ``env`` in ``cwd``; ``fork`` asks it for a kernel."""

    def __init__(self, env: dict, cwd: str):
        ours, theirs = socket.socketpair()
        self.proc = subprocess.Popen([sys.executable, "-m", __name__, str(theirs.fileno())], env=env, cwd=cwd,
                                     stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), start_new_session=True)
        theirs.close()
        ours.settimeout(300)  # its imports, on a busy host; a server that hangs: kernels start cold
        self.sock, self.lock = ours, threading.Lock()
        self.lines = _lines(ours)
        self.ready = None

    def ask(self, msg: dict) -> dict:
        with self.lock:
            if self.ready is None:
                self.ready = next(self.lines)  # StopIteration: the server failed to start
            _send(self.sock, msg)
            return next(self.lines)

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_servers: dict[tuple, Server | None] = {}
_servers_lock = threading.Lock()


def server_for(env: dict, cwd: str) -> Server | None:
    """This process's server for ``env`` (started on first use), or None where it failed."""
    key = _env_key(env)
    with _servers_lock:
        if key not in _servers:
            if not _servers:
                atexit.register(close_all)
            try:
                _servers[key] = Server({k: v for k, v in env.items() if k not in PER_KERNEL}, cwd)
            except OSError as e:
                print(f"    (no kernel fork server: {e}; kernels start cold)", file=sys.stderr)
                _servers[key] = None
        return _servers[key]


def close_all() -> None:
    with _servers_lock:
        for server in _servers.values():
            if server is not None:
                server.close()
        _servers.clear()


class ForkedKernel:
    """The kernel process a ``Server`` forked, with the methods jupyter_client's local provisioner
    calls on its ``Popen``. Not this process's child: a pidfd tells when it has ended, the server
    its exit status."""

    stdin = stdout = stderr = None

    def __init__(self, server: Server, pid: int):
        self.server, self.pid = server, pid
        self.pidfd = os.pidfd_open(pid)
        self.returncode = None

    def poll(self):
        if self.returncode is None and select.select([self.pidfd], [], [], 0)[0]:
            code = None
            for _ in range(20):  # the server reaps its children every 0.2 s
                try:
                    code = self.server.ask({"op": "status", "pid": self.pid})["code"]
                except (OSError, StopIteration, ValueError):
                    break
                if code is not None:
                    break
                time.sleep(0.05)
            self.returncode = -signal.SIGKILL if code is None else code  # None: the server went first
            os.close(self.pidfd)
        return self.returncode

    def wait(self, timeout=None):
        if self.returncode is None:
            if not select.select([self.pidfd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout)
        return self.poll()

    def send_signal(self, sig):
        if self.poll() is None:
            signal.pidfd_send_signal(self.pidfd, sig)

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)


def _provisioner_class():
    from jupyter_client.provisioning import LocalProvisioner

    class ForkProvisioner(LocalProvisioner):
        """jupyter_client's local provisioner, launching from a fork server where it can."""

        async def launch_kernel(self, cmd, **kwargs):
            env = dict(kwargs.get("env") or os.environ)
            cwd = str(kwargs.get("cwd") or os.getcwd())
            exe = cmd[0] if os.path.isabs(cmd[0]) else None
            server = None
            if exe and os.path.abspath(exe) == os.path.abspath(sys.executable) and cmd[1:3] == LAUNCHER:
                server = server_for(env, cwd)
            if server is None:
                return await super().launch_kernel(cmd, **kwargs)
            try:
                pid = server.ask({"op": "fork", "args": cmd[3:], "env": env, "cwd": cwd})["pid"]
            except (OSError, StopIteration, ValueError) as e:
                print(f"    (the kernel fork server failed: {type(e).__name__}; starting a cold kernel)",
                      file=sys.stderr)
                return await super().launch_kernel(cmd, **kwargs)
            self.process = ForkedKernel(server, pid)
            self.pid = self.pgid = pid  # a session leader leads its process group
            self.cwd = cwd
            return self.connection_info

    return ForkProvisioner


def attach(km) -> None:
    """Make ``km`` (not started yet) start its kernel from a fork server, where that is on: the
    provisioner jupyter_client would otherwise make in its place (``KernelProvisionerFactory``)."""
    if enabled():
        import uuid

        km.kernel_id = km.kernel_id or str(uuid.uuid4())
        km.provisioner = _provisioner_class()(kernel_id=km.kernel_id, kernel_spec=km.kernel_spec, parent=km)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
