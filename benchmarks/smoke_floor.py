"""What every notebook of the smoke build costs before it computes anything: the floor under `make test`.

`make test` builds the whole book at profile smoke (tests/conftest.py: 44 notebooks, three at a time,
each in a fresh Jupyter kernel), and that build is most of its time. Each notebook pays, whatever its
smoke settings: a kernel start, its import cell (torch, pandas, scipy.stats, matplotlib, the chapter's
modules), and, where it builds an optimizer, torch's lazy import of ``torch._dynamo`` (torch.optim wraps
its methods in ``torch._disable_dynamo``, which imports dynamo on first call; torch has no switch to
skip it). This script measures each part in fresh interpreters, one at a time, and prints them beside
the last smoke build's notebook-seconds (``_build/summary.json`` when it is a smoke build): no target,
the numbers say how much of the build smaller smoke settings could still remove.

Usage: .venv/bin/python benchmarks/smoke_floor.py [--repeats 1]   (about 4 minutes a repeat on 2 cores)
"""

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from privtrans.book.paths import repo_root
from privtrans.book.pipeline.discover import discover

IMPORT = re.compile(r"^(?:import \S+(?: as \w+)?|from \S+ import .+)$")
DYNAMO = "import torch\ntorch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)\n"


def import_lines(source: Path) -> str:
    """The import statements of a notebook's code cells (one-line imports, which the book's notebooks use)."""
    import jupytext

    nb = jupytext.read(source)
    return "\n".join(ln for c in nb.cells if c.cell_type == "code" for ln in c.source.splitlines()
                     if IMPORT.match(ln.strip()) and not ln.startswith(" "))


def seconds(code: str, repeats: int) -> float:
    """Median wall seconds of ``python -c code`` in a fresh interpreter (so, start-up included)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def kernel_seconds(repeats: int) -> float:
    """Median wall seconds of papermill running a one-cell notebook: the kernel's start and shutdown."""
    import nbformat
    import papermill as pm

    with tempfile.TemporaryDirectory() as d:
        src, out = Path(d) / "one.ipynb", Path(d) / "out.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]), src)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            pm.execute_notebook(str(src), str(out), progress_bar=False, log_output=False, kernel_name="python3")
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    root = repo_root()
    nbs = discover(root)
    cells = {nb: import_lines(nb.source) for nb in nbs}
    python = seconds("pass", args.repeats)
    kernel = kernel_seconds(args.repeats)
    dynamo = seconds(DYNAMO, args.repeats) - seconds("import torch", args.repeats)
    by_cell = {c: seconds(c, args.repeats) - python for c in sorted(set(cells.values()))}
    imports = {nb: by_cell[c] for nb, c in cells.items()}
    print(f"{len(nbs)} notebooks, {len(by_cell)} distinct import cells, median of {args.repeats} fresh run(s) each\n")
    print(f"kernel start + one trivial cell (papermill)  {kernel:6.2f} s per notebook")
    print(f"torch._dynamo on the first optimizer         {dynamo:6.2f} s per notebook that trains")
    for ch in dict.fromkeys(nb.chapter for nb in nbs):
        xs = [imports[nb] for nb in nbs if nb.chapter == ch]
        print(f"import cell, {ch:<14}                 {statistics.mean(xs):6.2f} s per notebook "
              f"(min {min(xs):.2f}, max {max(xs):.2f}, {len(xs)} notebooks)")
    floor = len(nbs) * kernel + sum(imports.values())
    print(f"\nfloor over the {len(nbs)} notebooks: {floor:.0f} CPU-s, {floor + len(nbs) * dynamo:.0f} CPU-s if every "
          f"one builds an optimizer; on 2 cores at least {floor / 2:.0f}-{(floor + len(nbs) * dynamo) / 2:.0f} s of wall")
    summary = root / "_build" / "summary.json"
    if summary.is_file():
        s = json.loads(summary.read_text())
        if s.get("profile") == "smoke":
            total = sum(r["seconds"] or 0 for r in s["notebooks"])
            jobs = max((r.get("jobs") or 1) for r in s["notebooks"])
            print(f"the last smoke build's notebook-seconds: {total:.0f} (up to {jobs} at a time, so each one's "
                  f"seconds include waiting for the others); the floor is {floor / total:.0%} of it")


if __name__ == "__main__":
    main()
