"""privtrans.book.pipeline.warm: the next notebook's kernel, warmed at low priority, runs the notebook
as a cold kernel does, at the build's own priority, and does not outlive it."""

import os
import subprocess
import sys
import threading

import nbformat
import pytest

from privtrans.book.pipeline import execute, warm
from privtrans.book.pipeline.discover import Notebook

needs_priority = pytest.mark.skipif(not warm.can_raise_priority(),
                                    reason="this user cannot give a process back its priority")


def test_imported_modules_are_the_top_level_imports_of_the_code_cells():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("import not_code"),
        nbformat.v4.new_code_cell("import a, b.c\nfrom x.y import z as Z, w\nfrom . import rel\nimport a"),
        nbformat.v4.new_code_cell("%matplotlib inline\nimport skipped_with_its_magic_cell"),
        nbformat.v4.new_code_cell("def f():\n    import inside_a_function\nfrom star import *"),
    ])
    assert warm.imported_modules(nb) == ["a", "b.c", "x.y", "x.y.z", "x.y.w", "star"]


def test_the_warm_up_imports_and_leaves_no_name_behind():
    sys.modules.pop("colorsys", None)
    ns = {}
    exec(warm.warm_up_code(["colorsys", "no_such_module_for_privtrans"]), ns)  # noqa: S102 - the code under test
    assert set(ns) == {"__builtins__"}
    assert "colorsys" in sys.modules


@needs_priority
def test_priority_is_set_on_every_thread_and_back():
    p = subprocess.Popen([sys.executable, "-c", "import threading, time\n"
                          "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\ntime.sleep(30)"])
    try:
        while len(os.listdir(f"/proc/{p.pid}/task")) < 2:
            pass
        tids = [int(t) for t in os.listdir(f"/proc/{p.pid}/task")]
        warm._set_nice(p.pid, warm.NICE)
        assert {os.getpriority(os.PRIO_PROCESS, t) for t in tids} == {warm.NICE}
        warm._set_nice(p.pid, 0)
        assert {os.getpriority(os.PRIO_PROCESS, t) for t in tids} == {0}
    finally:
        p.kill()
        p.wait()


NOTEBOOK = """\
---
jupytext:
  text_representation: {extension: .md, format_name: myst}
kernelspec: {display_name: Python 3, language: python, name: python3}
---
# A notebook
```{code-cell} ipython3
:tags: [parameters]
profile = "ci"
seed = 0
```
```{code-cell} ipython3
import sys
print("warmed:", "mailbox" in sys.modules)
```
```{code-cell} ipython3
import os
import mailbox
print(sorted(k for k in globals() if not k.startswith("_") and k not in ("In", "Out", "exit", "quit", "get_ipython")))
print("priority:", os.getpriority(os.PRIO_PROCESS, 0), "root:", os.environ["PRIVTRANS_ROOT"])
print("pid:", os.getpid())
```
"""


def _outputs(root, nb):
    executed = nbformat.read(execute.executed_path(root, nb), as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"][-2:]  # after the parameters, papermill's
    return [c.execution_count for c in code], ["".join(o.get("text", "") for o in c.outputs) for c in code]


@needs_priority
def test_a_warm_kernel_runs_the_notebook_as_a_cold_one_and_is_shut_down(tmp_path):
    src = tmp_path / "notebooks" / "taft" / "01_tiny.md"
    src.parent.mkdir(parents=True)
    src.write_text(NOTEBOOK)
    nb = Notebook("taft", src)

    res = execute.run(tmp_path, nb, "smoke", 0)
    assert res.status == "ok" and not res.warm_kernel
    cold_counts, cold = _outputs(tmp_path, nb)

    kernel = execute.warm_kernel(tmp_path, nb)
    assert kernel.wait(), kernel.error
    res = execute.run(tmp_path, nb, "smoke", 0, warm=kernel)
    assert res.status == "ok" and res.warm_kernel, res.error
    warm_counts, warmed = _outputs(tmp_path, nb)

    assert cold[0] == "warmed: False\n" and warmed[0] == "warmed: True\n"  # the warm-up imported mailbox (no preload does)
    assert warm_counts == cold_counts  # the warm-up moved no execution count
    # the same names (the warm-up bound none), the build's own priority, the same environment
    assert warmed[1].splitlines()[:2] == cold[1].splitlines()[:2]
    assert f"priority: {os.getpriority(os.PRIO_PROCESS, 0)} root: {tmp_path}" in warmed[1]
    pid = int(warmed[1].split("pid:")[1])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # shut down with the notebook
    # and no client of it is left polling (nbclient does not stop the client of a kernel it was given)
    assert not [t for t in threading.enumerate() if type(t).__name__ == "HBChannel" and t.is_alive()]


def test_no_kernel_is_warmed_when_switched_off(monkeypatch):
    monkeypatch.setenv(warm.ENV, "0")
    assert not warm.enabled()
