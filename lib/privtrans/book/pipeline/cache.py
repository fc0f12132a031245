"""Skip a notebook whose inputs did not change. The key follows the library's layers:

- the notebook's source, the profile and the seed;
- its chapter: the package ``lib/privtrans/<chapter>/`` (profile tables included) and
  ``data/<chapter>/`` (except the claims files and READMEs, which are judged after the notebooks ran);
- the mechanisms it uses: every module of ``privtrans.shared`` that the chapter package or the
  notebook imports, followed through their own imports;
- the machinery that runs inside a notebook: ``privtrans/__init__.py`` and ``privtrans/book/``
  except ``pipeline/`` and ``claims.py`` (they run after the notebooks, so are no input of any).

So an edit inside one chapter re-runs that chapter only, an edit of a mechanism re-runs the
chapters that import it, and an edit of the build machinery re-runs nothing. The key is a
:func:`privtrans.book.runcache.fingerprint`-style digest; state files are written atomically and a
damaged one counts as a miss.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path

from ..runcache import atomic_write_text, hash_files, read_json
from .discover import Notebook

PACKAGE = "privtrans"
MACHINERY_NOT_INPUTS = ("book/pipeline/", "book/claims.py", "book/verdicts.py", "book/paper_values.py")
MENTION = re.compile(r"\bprivtrans(?:\.\w+)+")
FROM_IMPORT = re.compile(r"^\s*from\s+(privtrans[\w.]*)\s+import\s+\(?([\w\s,]+)", re.M)


def _judged_after(name: str) -> bool:
    return name == "README.md" or (name.startswith("claims") and name.endswith(".yaml"))


def _files(base: Path) -> list[Path]:
    if not base.exists():
        return []
    files = [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()]
    return [p for p in files if "__pycache__" not in p.parts and p.suffix != ".pyc"]


def _module_name(pkg_dir: Path, path: Path) -> str:
    parts = list(path.relative_to(pkg_dir.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@lru_cache(maxsize=8)
def import_graph(pkg_dir: Path, stamp: tuple) -> dict[str, tuple[Path, frozenset[str]]]:
    """{module: (file, privtrans modules it imports or names)} read from the sources with ``ast``.

    Written here rather than with grimp: grimp resolves the package through the import system
    (the installed copy), while a build must read the checkout it builds. ``stamp`` (file mtimes)
    keys the memo so an edited tree is read again."""
    graph = {}
    for path in sorted(pkg_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        name = _module_name(pkg_dir, path)
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        text = path.read_text()
        deps = set(MENTION.findall(text))  # modules named in strings too (imported by name at run time)
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level:
                    up = base[: len(base) - (node.level - 1)]
                    mod = ".".join(up + ([mod] if mod else []))
                deps.add(mod)
                deps |= {f"{mod}.{a.name}" for a in node.names}
        graph[name] = (path, frozenset(d for d in deps if d == PACKAGE or d.startswith(PACKAGE + ".")))
    return graph


def _graph(pkg_dir: Path) -> dict[str, tuple[Path, frozenset[str]]]:
    return import_graph(pkg_dir, tuple((str(p), p.stat().st_mtime_ns) for p in sorted(pkg_dir.rglob("*.py"))))


def _named_in(text: str) -> set[str]:
    """Modules a notebook names: ``privtrans.x.y`` anywhere, and ``from privtrans.x import y, z``."""
    names = set(MENTION.findall(text))
    for mod, items in FROM_IMPORT.findall(text):
        names |= {f"{mod}.{w.split()[0]}" for w in items.split(",") if w.strip()}
    return names


def _with_parents(mod: str) -> list[str]:
    parts = mod.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def used_modules(graph: dict, seeds) -> set[str]:
    """Every privtrans module that importing ``seeds`` executes (parents' ``__init__`` included)."""
    todo = [m for s in seeds for m in _with_parents(s) if m in graph]
    seen: set[str] = set()
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += [p for d in graph[m][1] for p in _with_parents(d) if p in graph and p not in seen]
    return seen


def input_files(root: Path, nb: Notebook) -> list[Path]:
    """The files whose content decides whether ``nb`` must run again."""
    lib = root / "lib" / PACKAGE
    chapter_pkg = lib / nb.chapter
    seeds = {_module_name(lib, p) for p in chapter_pkg.rglob("*.py")} if chapter_pkg.is_dir() else set()
    seeds |= _named_in(nb.source.read_text())
    graph = _graph(lib)
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
