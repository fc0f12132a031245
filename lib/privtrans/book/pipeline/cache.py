"""Skip a notebook whose inputs did not change. The key follows the library's layers:

- the notebook's source, the profile and the seed;
- its chapter: the package ``lib/privtrans/<chapter>/`` (profile tables included) and
  ``data/<chapter>/`` (except the claims files and READMEs, which are judged after the notebooks ran);
- the mechanisms it uses: every module of ``lib/privtrans/shared/`` that the chapter package or the
  notebook imports, followed through their own imports;
- the machinery that runs inside a notebook: ``privtrans/__init__.py`` and ``privtrans/book/``
  except ``pipeline/`` and the judges (``claims``, ``verdicts``, ``paper_values``, ``trials``,
  ``controls`` and what it uses: ``replay``, ``probe``, ``truths``, ``records``; ``budgets``): they run
  after the notebooks, so are no input of any.

So an edit inside one chapter re-runs that chapter only, an edit of a mechanism re-runs the
chapters that import it, and an edit of the build machinery re-runs nothing. The key is a
:func:`privtrans.book.runcache.fingerprint`-style digest; state files are written atomically and a
damaged one counts as a miss.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from ..imports import MENTION, PACKAGE, import_graph, module_name, used_modules
from ..runcache import atomic_write_text, hash_files, read_json
from .discover import Notebook

MACHINERY_NOT_INPUTS = ("book/pipeline/", "book/claims.py", "book/verdicts.py", "book/paper_values.py",
                        "book/trials.py", "book/controls.py", "book/replay.py", "book/probe.py", "book/truths.py",
                        "book/records.py", "book/budgets.py")
FROM_IMPORT = re.compile(r"^\s*from\s+(privtrans[\w.]*)\s+import\s+\(?([\w\s,]+)", re.M)


def _judged_after(name: str) -> bool:
    return name == "README.md" or (name.startswith("claims") and name.endswith(".yaml"))


def _files(base: Path) -> list[Path]:
    if not base.exists():
        return []
    files = [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()]
    return [p for p in files if "__pycache__" not in p.parts and p.suffix != ".pyc"]


def _named_in(text: str) -> set[str]:
    """Modules a notebook names: ``privtrans.x.y`` anywhere, and ``from privtrans.x import y, z``."""
    names = set(MENTION.findall(text))
    for mod, items in FROM_IMPORT.findall(text):
        names |= {f"{mod}.{w.split()[0]}" for w in items.split(",") if w.strip()}
    return names


def input_files(root: Path, nb: Notebook) -> list[Path]:
    """The files whose content decides whether ``nb`` must run again."""
    lib = root / "lib" / PACKAGE
    chapter_pkg = lib / nb.chapter
    seeds = {module_name(lib, p) for p in chapter_pkg.rglob("*.py")} if chapter_pkg.is_dir() else set()
    seeds |= _named_in(nb.source.read_text())
    graph = import_graph(lib)
    shared = [graph[m][0] for m in used_modules(graph, seeds) if m.startswith(f"{PACKAGE}.shared")]
    machinery = [p for p in _files(lib / "book")
                 if not p.relative_to(lib).as_posix().startswith(MACHINERY_NOT_INPUTS)]
    data = [p for p in _files(root / "data" / nb.chapter) if not _judged_after(p.name)]
    return [nb.source, lib / "__init__.py", *machinery, *_files(chapter_pkg), *shared, *data]


def input_key(root: Path, nb: Notebook, profile: str, seed: int) -> str:
    h = hashlib.sha256(f"{profile}|{seed}|".encode())
    return hash_files([p for p in input_files(root, nb) if p.is_file()], root, h).hexdigest()


def state_path(root: Path, nb: Notebook) -> Path:
    return root / "_build" / "state" / nb.chapter / f"{nb.stem}.json"


def load_state(root: Path, nb: Notebook) -> dict | None:
    """The notebook's last run; None when there is none or its file is damaged (then it re-runs)."""
    return read_json(state_path(root, nb))


def save_state(root: Path, nb: Notebook, state: dict):
    atomic_write_text(state_path(root, nb), json.dumps(state, indent=1))
