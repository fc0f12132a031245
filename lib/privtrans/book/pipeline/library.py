"""The book's appendix "The library": one page per package of ``lib/privtrans``, each of its modules'
source with line numbers and a list of what it defines, so a reader follows a figure or a verdict to
its code without leaving the book. Each module and each top-level definition is its own labelled
section (``module_label``, ``label``), so a claim row links to the very readout function that
computed its value (``privtrans.book.producers``).

A page per package rather than per module: every page of a Jupyter Book renders the whole sidebar,
so the build's cost grows with pages times sidebar entries. With a page per module (177 pages), the
sidebar was half of the HTML build (cProfile); with a page per package (18 pages), ``jupyter-book
build`` of one smoke build's sources took 33 s instead of 76 s.

Why not ``sphinx.ext.autodoc`` + ``viewcode``: autodoc imports every module inside the Sphinx build
(CrypTen and SPU's worker included) and renders docstrings as reStructuredText, which ours are not
written in, so ``-W`` would fail on formatting; the pages here are plain MyST around a
``literalinclude`` of each definition's lines and cannot drift from the code (they are written again
at every build).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ..runcache import atomic_write_text

PAGES = Path("book") / "_library"


def module_name(path: Path, lib: Path) -> str:
    parts = list(path.relative_to(lib).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def package_of(module: str, path: Path) -> str:
    """The package whose page shows ``module``: itself for a package's ``__init__``, else its parent."""
    return module if path.name == "__init__.py" else module.rsplit(".", 1)[0]


def module_label(module: str) -> str:
    """The Sphinx label of a module's section ("lib-mod-privtrans.<chapter>.readouts"), for ``{ref}``
    links from other pages; "lib-mod-" keeps it apart from every definition's ``label``."""
    return "lib-mod-" + label(module).removeprefix("lib-")


def defines(source: str) -> list[tuple[str, int]]:
    """Top-level functions and classes with their first line (a decorator's, where there is one)."""
    tree = ast.parse(source)
    return [(n.name, min([n.lineno] + [d.lineno for d in n.decorator_list])) for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def label(qualname: str) -> str:
    """The Sphinx label of a top-level definition's section ("lib-privtrans.<chapter>.readouts.<name>"), for
    ``{ref}`` links from other pages (a claim row links the readout that computed its value). Sphinx
    labels ignore case, and a module may define both ``Bench`` and ``bench``: an upper-case letter
    is written as "-" and the letter ("-bench"), which no Python name can be."""
    return "lib-" + re.sub(r"[A-Z]", lambda m: "-" + m.group().lower(), qualname)


def sections(source: str) -> list[tuple[str | None, int, int]]:
    """(definition or None for the module's head, first line, last line): consecutive line ranges
    that cover the file once, one per top-level definition."""
    n = len(source.splitlines())
    starts = defines(source)
    out = []
    if not starts or starts[0][1] > 1:
        out.append((None, 1, (starts[0][1] - 1) if starts else n))
    for i, (name, a) in enumerate(starts):
        out.append((name, a, (starts[i + 1][1] - 1) if i + 1 < len(starts) else n))
    return [(name, a, b) for name, a, b in out if b >= a]


def modules(root: Path) -> list[tuple[str, Path]]:
    lib = root / "lib"
    files = sorted(p for p in (lib / "privtrans").rglob("*.py") if "__pycache__" not in p.parts)
    return sorted((module_name(p, lib), p) for p in files)


def module_section(name: str, path: Path, root: Path) -> list[str]:
    """A module's section of its package's page: its label, heading, file, definitions and source."""
    src = path.read_text()
    rel = path.relative_to(root).as_posix()
    lines = [f"({module_label(name)})=", f"## `{name}`", "", f"`{rel}`, {len(src.splitlines())} lines."]
    defs = defines(src)
    if defs:
        lines += ["", "Defines: " + ", ".join(f"{{ref}}`{d} <{label(f'{name}.{d}')}>` (line {ln})"
                                             for d, ln in defs) + "."]
    for d, first, last in sections(src):
        if d is not None:
            lines += ["", f"({label(f'{name}.{d}')})=", f"### `{d}`"]
        lines += ["", "```{literalinclude} /" + rel, ":language: python", f":lines: {first}-{last}",
                  ":lineno-match:", "```"]
    return lines + [""]


def write_pages(root: Path) -> list[str]:
    """Write ``book/_library/<package>.md`` for every package (and remove pages of packages that are
    gone); returns the package names. The TOC lists the pages by a glob under the appendix page."""
    out = root / PAGES
    out.mkdir(parents=True, exist_ok=True)
    pages: dict[str, list[tuple[str, Path]]] = {}
    for name, path in modules(root):  # sorted by name: a package's __init__ comes before its modules
        pages.setdefault(package_of(name, path), []).append((name, path))
    for package, members in pages.items():
        lines = [f"# `{package}`", "", "Modules: " + ", ".join(f"{{ref}}`{name} <{module_label(name)}>`"
                                                            for name, _ in members) + ".", ""]
        for name, path in members:
            lines += module_section(name, path, root)
        atomic_write_text(out / f"{package}.md", "\n".join(lines))
    for old in out.glob("*.md"):
        if old.stem not in pages:
            old.unlink()
    return list(pages)


def chapter_links(chapter: str, root: Path) -> str:
    """The line under a chapter's claims table: links to its package's modules."""
    mods = [n for n, _ in modules(root) if n == f"privtrans.{chapter}" or n.startswith(f"privtrans.{chapter}.")]
    if not mods:
        return ""
    links = ", ".join(f"{{ref}}`{m.split('.', 2)[-1] if m.count('.') > 1 else m} <{module_label(m)}>`" for m in mods)
    return f"\nThe code behind these numbers (the library appendix): {links}.\n"
