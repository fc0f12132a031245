"""The library's import graph, read from its sources: which privtrans modules a module executes.

Two caches key on it: the notebook cache (``pipeline.cache``: the shared mechanisms a chapter uses)
and the run cache (``runcache.source_fingerprint``: the code that makes a trained artefact). Written
here rather than with grimp: grimp resolves the package through the import system (the installed
copy), while a build must read the checkout it builds.
"""

from __future__ import annotations

import ast
import os
import re
from functools import lru_cache
from pathlib import Path

PACKAGE = "privtrans"
MENTION = re.compile(r"\bprivtrans(?:\.\w+)+")


def module_name(pkg_dir: Path, path: Path) -> str:
    parts = list(path.relative_to(pkg_dir.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# the fields that hold statements (a module's, a function's, a branch's, a handler's, a case's body):
# an import is a statement, so the walk never descends into expressions, most of a tree's nodes
# (ast.walk visited them all: 0.99 CPU-s for the library, this walk 0.71 CPU-s, the same graph)
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def statements(tree: ast.AST):
    """Every statement under ``tree``, nested ones included (imports inside functions count too)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.stmt):
            yield node
        for field in _BODIES:
            todo.extend(getattr(node, field, ()))


@lru_cache(maxsize=8)
def _read(pkg_dir: Path, stamp: tuple) -> dict[str, tuple[Path, frozenset[str]]]:
    graph = {}
    for file, _ in stamp:  # the files the memo is keyed by, as ``stamp`` listed them
        path = Path(file)
        if "__pycache__" in path.parts:
            continue
        name = module_name(pkg_dir, path)
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        text = path.read_text()
        deps = set(MENTION.findall(text))  # modules named in strings too (imported by name at run time)
        for node in statements(ast.parse(text, str(path))):
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


def stamp(pkg_dir: Path) -> tuple:
    """Every source file of the package with its mtime: what a memo of anything read from the
    sources is keyed by, so an edited tree is read again. A build asks for it some 180 times (once
    per claim's trials), so it walks with ``os.walk``: ``Path.rglob`` took 4.5 ms a call, this 1.6."""
    found = []
    for folder, _, files in os.walk(pkg_dir):
        found += [os.path.join(folder, f) for f in files if f.endswith(".py")]
    found.sort(key=lambda f: f.split(os.sep))  # the order of sorted(Path(...)): part by part
    return tuple((f, os.stat(f).st_mtime_ns) for f in found)


def import_graph(pkg_dir: Path, tree: tuple | None = None) -> dict[str, tuple[Path, frozenset[str]]]:
    """{module: (file, privtrans modules it imports or names)} for the package at ``pkg_dir``; read
    again whenever a file's mtime changed (``tree``: its ``stamp``, where the caller has it)."""
    pkg_dir = Path(pkg_dir)
    return _read(pkg_dir, stamp(pkg_dir) if tree is None else tree)


def with_parents(mod: str) -> list[str]:
    parts = mod.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def used_modules(graph: dict, seeds, skip=lambda m: False) -> set[str]:
    """Every privtrans module that importing ``seeds`` executes (parents' ``__init__`` included),
    not following modules for which ``skip`` is true."""
    todo = [m for s in seeds for m in with_parents(s) if m in graph and not skip(m)]
    seen: set[str] = set()
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += [p for d in graph[m][1] for p in with_parents(d) if p in graph and p not in seen and not skip(p)]
    return seen
