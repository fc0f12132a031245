"""A stopped build leaves nothing running (privtrans.book.stopping): the pipeline's kernels, its
workers, and the pool workers of a notebook's busy cell all end within seconds of SIGINT or SIGTERM,
and workers end with a parent killed outright."""

import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from privtrans.book import stopping, workers
from privtrans.book.pipeline import kernel_forks

psutil = pytest.importorskip("psutil")
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")
REPO = Path(__file__).resolve().parents[1]


def _gone(pids, within: float) -> list[int]:
    """The pids still running (zombies count as ended) after waiting up to ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        left = [p for p in pids if stopping._alive(p)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _wait_for(path: Path, n: int, timeout: float = 120.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = sorted(int(p.name.split("-")[1]) for p in path.glob("*-*"))
        if len(got) >= n:
            return got
        time.sleep(0.2)
    raise AssertionError(f"only {sorted(p.name for p in path.iterdir())} started in {timeout:.0f} s")


SPIN = "import time\nwhile True: time.sleep(0.01)\n"


@linux
def test_ending_a_session_ends_the_processes_its_leader_orphaned(tmp_path):
    """A kernel's workers, re-parented to init when it died, are still in its session."""
    leader = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, subprocess, sys
        for _ in range(2):
            p = subprocess.Popen([sys.executable, "-c", {SPIN!r}])
            open(os.path.join({str(tmp_path)!r}, f"child-{{p.pid}}"), "w").close()
        os._exit(0)  # the children live on, orphaned
        """)], start_new_session=True)
    children = _wait_for(tmp_path, 2, 30)
    leader.wait(10)
    assert all(psutil.Process(p).ppid() != leader.pid for p in children)
    assert set(stopping.end_session(leader.pid)) == set(children)
    assert _gone(children, 3) == []
    with pytest.raises(ValueError, match="refusing"):
        stopping.end_session(os.getsid(0))


@linux
def test_a_process_that_asked_to_die_with_its_parent_does(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, signal, time
        pid = os.fork()
        if pid == 0:
            from privtrans.book import stopping
            assert stopping.die_with_parent(signal.SIGKILL, os.getppid())
            open(os.path.join({str(tmp_path)!r}, f"child-{{os.getpid()}}"), "w").close()
            while True:
                time.sleep(0.01)
        time.sleep(60)
        """)])
    (child,) = _wait_for(tmp_path, 1, 30)
    parent.kill()
    parent.wait(10)
    assert _gone([child], 3) == []


def _pdeathsig() -> int:
    sig = ctypes.c_int(0)
    ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0)  # PR_GET_PDEATHSIG
    return sig.value


@linux
def test_a_notebooks_pool_workers_die_with_the_kernel():
    assert workers.values_in_parallel([_pdeathsig, _pdeathsig], workers=2) == [signal.SIGKILL] * 2
    assert _pdeathsig() == 0  # the calling process (a kernel) is not bound to its own parent


def test_a_second_signal_waits_for_the_cleanup_then_stops_it():
    with stopping.raise_on_signals():
        done = []
        with pytest.raises(KeyboardInterrupt):
            with stopping.held():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.2)  # the handler runs here and is held back
                done.append("cleanup")
        assert done == ["cleanup"] and stopping.received() == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is not stopping._handler


BUSY = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
---

# Busy

```{code-cell} ipython3
:tags: [parameters]
profile = "smoke"
seed = 0
```

```{code-cell} ipython3
import os
import time
from functools import partial
from pathlib import Path

from privtrans.book import workers

marks = Path(os.environ["STOPPING_TEST_PIDS"])
(marks / f"kernel-{os.getpid()}").touch()


def busy(i):  # occupied with its task for 5 minutes; sleeping, not spinning: the test's two cores are shared
    (marks / f"worker-{os.getpid()}").touch()
    t = time.time()
    while time.time() - t < 300:
        time.sleep(0.05)


workers.in_parallel([partial(busy, i) for i in range(4)], workers=2)
```
"""


@linux
@pytest.mark.parametrize("sig, jobs, forks", [(signal.SIGINT, 1, "1"), (signal.SIGTERM, 1, "0"),
                                              (signal.SIGTERM, 2, "0"), (signal.SIGKILL, 2, "1")])
def test_a_stopped_build_leaves_no_process_it_started(tmp_path, sig, jobs, forks):
    """A build whose notebook keeps two pool workers busy is stopped; within seconds, the pipeline,
    its kernels (the running one, and at --jobs 1 the next notebook's warm one), its workers and
    theirs are gone, and so is a kernel fork server (``forks``: kernels forked from one, as a build
    of many notebooks starts them; else started cold, as a build of one or two). SIGKILL leaves the
    pipeline no cleanup: its kernel exits on its own (ipykernel watches its parent; a forked one dies
    with its server, which ends when the process that started it has gone) and the workers follow
    their parents."""
    root, marks = tmp_path / "root", tmp_path / "pids"
    (root / "notebooks" / "dp_icl").mkdir(parents=True)
    (root / "lib" / "privtrans").mkdir(parents=True)
    (root / "_config.yml").write_text("title: t\n")
    for name in ("01_busy.md", "02_busy.md"):
        (root / "notebooks" / "dp_icl" / name).write_text(BUSY)
    marks.mkdir()
    env = {**os.environ, "STOPPING_TEST_PIDS": str(marks), "PRIVTRANS_WORKERS": "2", kernel_forks.ENV: forks}
    log = open(tmp_path / "build.log", "w")
    build = subprocess.Popen([sys.executable, "-m", "privtrans.book.pipeline", "--root", str(root), "--profile",
                              "smoke", "--no-html", "--jobs", str(jobs), "--notebook", "dp_icl/01_busy",
                              *(["--notebook", "dp_icl/02_busy"] if jobs == 1 else [])],
                             cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    started: list = []
    try:
        marked = _wait_for(marks, 3)  # the kernel and two busy workers
        kids = psutil.Process(build.pid).children(recursive=True)
        started = kids + [psutil.Process(p) for p in marked if p not in {k.pid for k in kids}]
        # a fork server, and the kernels it forked (a fork keeps its parent's command line)
        forked = [k for k in kids if "kernel_forks" in " ".join(k.cmdline())]
        assert bool(forked) == (forks == "1"), [k.cmdline() for k in kids]
        build.send_signal(sig)
        t0 = time.monotonic()
        code = build.wait(15)
        left = _gone(sorted(p.pid for p in started), 10)
        seconds = time.monotonic() - t0
    finally:  # whatever a failing run left (psutil signals no process that reused a pid)
        for p in [psutil.Process(build.pid), *started] if build.poll() is None else started:
            try:
                p.kill()
            except psutil.Error:
                pass
        build.wait()
    out = (tmp_path / "build.log").read_text()
    assert left == [], f"still running after {seconds:.1f} s: {left}\n{out[-2000:]}"
    assert code == (-sig if sig == signal.SIGKILL else 128 + sig), out[-2000:]
    if sig != signal.SIGKILL:
        assert "interrupted during dp_icl/01_busy" in out
