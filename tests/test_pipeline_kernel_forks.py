"""Kernels forked from a server that has the heavy libraries imported (pipeline.kernel_forks) are the
kernels a cold start gives: same results, own session, new random seeds, interruptible, and gone
with the build."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from privtrans.book.pipeline import kernel_forks, warm
from privtrans.book import stopping

linux = pytest.mark.skipif(not kernel_forks.supported(), reason="fork servers need Linux pidfds")

PROBE = textwrap.dedent("""\
    import os, random, sys
    preloaded = sorted(m for m in ("torch", "pandas", "scipy.stats", "opacus", "torch._dynamo") if m in sys.modules)
    from privtrans.book import imports
    graph_read = imports._read.cache_info().currsize  # before any key asked for it
    import numpy as np, torch
    torch.manual_seed(0)
    print(repr({"preloaded": preloaded, "cwd": os.getcwd(), "leader": os.getsid(0) == os.getpid(),
                "ppid": os.getppid(), "graph_read": graph_read, "flag": os.environ.get("KF_FLAG"), "draw": random.random(),
                "legacy": float(np.random.random()), "value": float(torch.randn(50).sum()),
                "rng": float(np.random.default_rng(0).normal(size=50).sum())}))
    """)


async def _run(code: str, env: dict, cwd: str, interrupt_after: float | None = None):
    """Start a kernel as the pipeline does (warm.kernel_manager), run ``code``; (provisioner, its
    process, stdout text, whether the process was gone after shutdown)."""
    km = warm.kernel_manager("python3", None)
    await km.start_kernel(env=env, cwd=cwd)
    prov, proc = km.provisioner, km.provisioner.process
    kc = km.client()
    kc.start_channels()
    out = []
    try:
        await kc.wait_for_ready(timeout=120)
        hook = lambda m: out.append(m["content"].get("text", "")) if m["msg_type"] == "stream" else None  # noqa: E731
        run = asyncio.ensure_future(kc.execute_interactive(code, output_hook=hook, timeout=120))
        if interrupt_after is not None:
            await asyncio.sleep(interrupt_after)
            await km.interrupt_kernel()
        await run
    finally:
        kc.stop_channels()
        await km.shutdown_kernel(now=False)
    return prov, proc, "".join(out), proc.poll() is not None


def _kernel(code, env, cwd, **kw):
    return asyncio.run(_run(code, env, cwd, **kw))


@linux
def test_a_forked_kernel_gives_a_cold_kernels_values_in_its_own_session(tmp_path, monkeypatch):
    env = dict(os.environ, KF_FLAG="on")
    prov, proc, out, gone = _kernel(PROBE, env, str(tmp_path))
    forked = eval(out)
    assert isinstance(proc, kernel_forks.ForkedKernel) and gone
    assert forked["preloaded"] == ["opacus", "pandas", "scipy.stats", "torch", "torch._dynamo"]  # before its first cell
    assert forked["graph_read"] == 1  # the library's import graph, read by the server
    assert forked["cwd"] == str(tmp_path) and forked["leader"] and forked["flag"] == "on"
    assert forked["ppid"] == kernel_forks.server_for(env, str(tmp_path)).proc.pid
    _, proc2, out2, _ = _kernel(PROBE, env, str(tmp_path))
    again = eval(out2)
    assert isinstance(proc2, kernel_forks.ForkedKernel)
    assert again["draw"] != forked["draw"] and again["legacy"] != forked["legacy"]  # seeded anew, not the server's
    monkeypatch.setenv(kernel_forks.ENV, "0")
    _, cold_proc, cold_out, _ = _kernel(PROBE, env, str(tmp_path))
    cold = eval(cold_out)
    assert isinstance(cold_proc, subprocess.Popen) and cold["preloaded"] == [] and cold["graph_read"] == 0
    assert (forked["value"], forked["rng"]) == (cold["value"], cold["rng"])


@linux
def test_an_interrupt_reaches_the_running_cell(tmp_path):
    env = dict(os.environ, KF_FLAG="on")  # the server of the test above, if it ran
    code = "import time\ntry:\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    print('interrupted')\n"
    t0 = time.monotonic()
    _, proc, out, gone = _kernel(code, env, str(tmp_path), interrupt_after=2.0)
    assert isinstance(proc, kernel_forks.ForkedKernel) and out.strip() == "interrupted" and gone
    assert time.monotonic() - t0 < 50


def test_a_server_serves_one_environment_but_for_the_names_set_per_kernel():
    env = {"PATH": "/bin", "PRIVTRANS_ROOT": "/r"}
    key = kernel_forks._env_key(env)
    assert kernel_forks._env_key({**env, "PRIVTRANS_ROOT": "/s"}) != key
    assert kernel_forks._env_key({**env, **{k: "x" for k in kernel_forks.PER_KERNEL}}) == key


def test_the_build_uses_fork_servers_where_each_process_runs_a_few_notebooks(monkeypatch):
    monkeypatch.delenv(kernel_forks.ENV, raising=False)
    assert kernel_forks.worth_it(9, 3) and not kernel_forks.worth_it(8, 3) and not kernel_forks.worth_it(2, 1)
    try:
        kernel_forks.use(False)
        assert not kernel_forks.enabled()
        monkeypatch.setenv(kernel_forks.ENV, "1")  # the environment decides over the build
        assert kernel_forks.enabled() == kernel_forks.supported()
        kernel_forks.use(None)
        monkeypatch.setenv(kernel_forks.ENV, "0")
        assert not kernel_forks.enabled()
    finally:
        kernel_forks.use(None)


@linux
def test_a_server_and_its_kernels_end_with_the_process_that_started_them(tmp_path):
    """A pipeline killed outright: its server notices, and the kernels it forked die with it."""
    marks = tmp_path / "pids"
    marks.mkdir()
    owner = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import asyncio, os, sys, time
        from privtrans.book.pipeline import warm
        async def main():
            km = warm.kernel_manager("python3", None)
            await km.start_kernel(env=dict(os.environ), cwd={str(tmp_path)!r})
            kc = km.client(); kc.start_channels()
            await kc.wait_for_ready(timeout=120)
            open(os.path.join({str(marks)!r}, f"kernel-{{km.provisioner.pid}}"), "w").close()
            time.sleep(600)
        asyncio.run(main())
        """)], start_new_session=True)
    deadline = time.monotonic() + 120
    while not list(marks.iterdir()):
        assert time.monotonic() < deadline and owner.poll() is None, "no kernel started"
        time.sleep(0.2)
    kernel = int(next(marks.iterdir()).name.split("-")[1])
    server = int(open(f"/proc/{kernel}/stat").read().rpartition(")")[2].split()[1])  # its parent
    assert stopping._alive(kernel) and stopping._alive(server)
    owner.send_signal(signal.SIGKILL)
    owner.wait(10)
    deadline = time.monotonic() + 10
    while (stopping._alive(kernel) or stopping._alive(server)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not stopping._alive(server) and not stopping._alive(kernel)
