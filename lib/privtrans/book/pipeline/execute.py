"""Run one jupytext source through papermill; keep the executed notebook only when it succeeded."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import stopping
from ..progress_bar import LOG_ENV
from ..runcache import atomic_write_text
from .discover import Notebook

KERNEL = "python3"


@dataclass
class Outcome:
    status: str  # ok | failed
    seconds: float
    error: str | None = None
    warm_kernel: bool = False  # ran in a kernel started and warmed before its turn (seconds exclude that)


def executed_path(root: Path, nb: Notebook) -> Path:
    return root / "book" / "_executed" / nb.chapter / f"{nb.stem}.ipynb"


def papermill_problem(path: Path) -> str | None:
    """Why an executed notebook must not be rendered (exception recorded, or it never finished)."""
    if not path.is_file():
        return "not executed yet"
    # the metadata read as plain JSON: nbformat's reader validates the whole notebook against its schema,
    # and importing it (jsonschema's format checkers) took 2 s of every build that ran nothing
    try:
        meta = (json.loads(path.read_text(encoding="utf-8")).get("metadata") or {}).get("papermill") or {}
    except (OSError, ValueError, AttributeError) as e:
        return f"not a readable notebook ({type(e).__name__}: {e})"
    if not meta:
        return "no papermill metadata (not executed by the pipeline)"
    if meta.get("exception"):
        return "papermill recorded an exception"
    if not meta.get("end_time"):
        return "papermill recorded no end time (the run did not finish)"
    return None


def _first_line(source: str) -> str:
    return next((ln.strip() for ln in source.splitlines() if ln.strip()), "")[:70]


def _code_cell_number(notebook, source: str) -> str:
    """1-based number of the failing cell among the source's code cells (papermill adds one)."""
    code = [c for c in notebook.cells if c.cell_type == "code"]
    for i, c in enumerate(code, 1):
        if c.source.strip() == source.strip():
            return str(i)
    return "?"


def _kernel_config(sockets: str):
    """Talk to the kernel over Unix sockets in a private temp folder, not TCP on localhost: other
    local users cannot connect to it, and ipykernel does not warn about unencrypted TCP."""
    from traitlets.config import Config

    return Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(sockets, "kernel")}})


@contextmanager
def echo_progress(log: Path, label: str, stream=None, every: float = 1.0):
    """Echo the lines a notebook's progress bars append to ``log`` (privtrans.book.progress_bar) to the
    build's terminal while it runs, each with the notebook's name; the page never sees them."""
    stream = stream or sys.stdout
    log.unlink(missing_ok=True)
    stop, pos = threading.Event(), [0]

    def drain():
        if log.is_file():
            with open(log, encoding="utf-8", errors="replace") as f:
                f.seek(pos[0])
                chunk = f.read()
            done, _, _ = chunk.rpartition("\n")  # whole lines only; a half-written one waits
            if done:
                pos[0] += len((done + "\n").encode("utf-8"))
                # one write of whole lines: print() writes a line and its newline apart, and a flush
                # from another thread between the two let a notebook's "[i/n] ... ok" line, written by
                # the parent process to the same pipe, land after a bar with no newline (--jobs > 1)
                stream.write("".join(f"\r      {label}: {line}\n" for line in done.splitlines()))
                stream.flush()

    def loop():
        while not stop.wait(every):
            drain()

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()
        drain()


def progress_log_path(root: Path, nb: Notebook) -> Path:
    return root / "_build" / "papermill" / nb.chapter / f"{nb.stem}.progress.log"


def kernel_env(root: Path, nb: Notebook) -> dict:
    """What a notebook's kernel finds in its environment, beyond the build's own."""
    return {LOG_ENV: str(progress_log_path(root, nb)),  # progress bars in the kernel write there (echo_progress)
            "PRIVTRANS_ROOT": str(root),  # results land in this checkout
            "PYTHONPATH": os.pathsep.join(p for p in (str(root / "lib"), os.environ.get("PYTHONPATH")) if p)}


def source_notebook(nb: Notebook):
    import jupytext

    notebook = jupytext.read(nb.source)
    notebook.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3", "language": "python"}
    return notebook


def warm_kernel(root: Path, nb: Notebook):
    """``nb``'s kernel, started now at low priority with its imports loaded (``warm.WarmKernel``)."""
    from . import warm

    return warm.WarmKernel(KERNEL, {**os.environ, **kernel_env(root, nb)}, str(root),
                           warm.imported_modules(source_notebook(nb)), _kernel_config)


def run(root: Path, nb: Notebook, profile: str, seed: int, warm=None) -> Outcome:
    """``warm``: a ``warm.WarmKernel`` started for ``nb`` (run there, then shut down), or None for a
    kernel started here. Either way the kernel ends here, with every process it started (its pool
    workers, its MPC parties: ``book.stopping``); on an interrupt (KeyboardInterrupt, or SystemExit in
    a pipeline worker) at once, and the interrupt goes on up."""
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    from . import warm as warming

    work = root / "_build" / "papermill" / nb.chapter
    work.mkdir(parents=True, exist_ok=True)
    src_ipynb = work / f"{nb.stem}.source.ipynb"
    out_ipynb = work / f"{nb.stem}.ipynb"
    notebook = source_notebook(nb)
    nbformat.write(notebook, src_ipynb)
    if out_ipynb.exists():
        out_ipynb.unlink()

    env_before = {k: os.environ.get(k) for k in ("PRIVTRANS_ROOT", "PYTHONPATH", LOG_ENV)}
    progress_log = progress_log_path(root, nb)
    os.environ.update(kernel_env(root, nb))  # a kernel started here inherits them
    t0 = time.perf_counter()
    sockets = tempfile.mkdtemp(prefix="privtrans-kernel-")
    km = cold = None
    interrupted = True  # until the notebook's run returns or raises an Exception
    try:
        km = warm.take() if warm is not None else None  # inside the try: an interrupt here still closes it
        if km is None:  # papermill starts it; this function ends it (nbclient would leave its workers)
            cold = warming.kernel_manager(KERNEL, _kernel_config(sockets))
        with echo_progress(progress_log, nb.label):
            papermill.execute_notebook(
                str(src_ipynb), str(out_ipynb), parameters={"profile": profile, "seed": seed},
                kernel_name=KERNEL, cwd=str(root), progress_bar=False, log_output=False,
                config=_kernel_config(sockets), km=km or cold,
            )
        interrupted = False
    except PapermillExecutionError as e:
        interrupted = False
        where = f"code cell {_code_cell_number(notebook, e.source)} (`{_first_line(e.source)}`)"
        return Outcome("failed", time.perf_counter() - t0,
                       f"{nb.source.relative_to(root)} {where}: {e.ename}: {e.evalue}".strip())
    except Exception as e:  # noqa: BLE001 - kernel death, bad source: still one line naming the notebook
        interrupted = False
        return Outcome("failed", time.perf_counter() - t0,
                       f"{nb.source.relative_to(root)}: {type(e).__name__}: {e}")
    finally:
        with stopping.held():  # a second Ctrl-C waits until the kernel and its workers are gone
            if warm is not None:
                warm.close(now=interrupted)
            if cold is not None:
                warming.end_kernel(cold, now=interrupted)
            shutil.rmtree(sockets, ignore_errors=True)
            for k, v in env_before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    seconds = time.perf_counter() - t0
    problem = papermill_problem(out_ipynb)
    if problem:
        return Outcome("failed", seconds, f"{nb.source.relative_to(root)}: {problem}")
    executed = nbformat.read(out_ipynb, as_version=4)
    executed.metadata.pop("widgets", None)  # widget state would pull JS from a CDN
    atomic_write_text(executed_path(root, nb), nbformat.writes(executed))
    return Outcome("ok", seconds, warm_kernel=km is not None)


def worker_init(parent: int, forks: bool) -> None:
    """A pipeline worker's start (``--jobs`` > 1): stop signals end it (``stopping.pipeline_worker``),
    and its kernels start from a fork server if the build chose so (``kernel_forks.worth_it``)."""
    from . import kernel_forks

    stopping.pipeline_worker(parent)
    kernel_forks.use(forks)


def run_in_worker(root: Path, nb: Notebook, profile: str, seed: int) -> Outcome:
    """:func:`run` in a pipeline worker (``--jobs`` > 1, ``stopping.pipeline_worker``): a stop signal
    (SystemExit there) ends the notebook's kernel and then this worker, which would otherwise wait
    for its next notebook from a pipeline that may be gone."""
    try:
        return run(root, nb, profile, seed)
    except SystemExit as e:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(e.code if isinstance(e.code, int) else 1)


def remove_stale(root: Path, notebooks: list[Notebook]):
    """Executed notebooks whose source is gone would still be globbed into the book."""
    keep = {executed_path(root, nb) for nb in notebooks}
    base = root / "book" / "_executed"
    if base.is_dir():
        for p in base.rglob("*.ipynb"):
            if p not in keep:
                p.unlink()
        for d in sorted(base.glob("*"), reverse=True):
            if d.is_dir() and not any(d.iterdir()):
                shutil.rmtree(d)
