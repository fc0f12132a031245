"""The book's appendix "The library": one page per module of ``lib/privtrans``, its source with line
numbers and a list of what it defines, so a reader follows a figure or a verdict to its code without
leaving the book.

Why not ``sphinx.ext.autodoc`` + ``viewcode``: autodoc imports every module inside the Sphinx build
(CrypTen and SPU's worker included) and renders docstrings as reStructuredText, which ours are not
written in, so ``-W`` would fail on formatting; the pages here are plain MyST around a
``literalinclude`` and cannot drift from the code (they are written again at every build).
"""

from __future__ import annotations

import ast
from pathlib import Path

from ..runcache import atomic_write_text

PAGES = Path("book") / "_library"


def module_name(path: Path, lib: Path) -> str:
    parts = list(path.relative_to(lib).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def page_doc(module: str) -> str:
    """The Sphinx doc path of a module's page (for ``{doc}`` links from other pages)."""
    return f"/{PAGES.as_posix()}/{module}"


def defines(source: str) -> list[tuple[str, int]]:
    """Top-level functions and classes (public first by line) with their line numbers."""
    tree = ast.parse(source)
    return [(n.name, n.lineno) for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def modules(root: Path) -> list[tuple[str, Path]]:
    lib = root / "lib"
    files = sorted(p for p in (lib / "privtrans").rglob("*.py") if "__pycache__" not in p.parts)
    return sorted((module_name(p, lib), p) for p in files)


def write_pages(root: Path) -> list[str]:
    """Write ``book/_library/<module>.md`` for every module (and remove pages of modules that are
    gone); returns the module names. The TOC lists the pages by a glob under the appendix page."""
    out = root / PAGES
    out.mkdir(parents=True, exist_ok=True)
    names = []
    for name, path in modules(root):
        src = path.read_text()
        rel = path.relative_to(root).as_posix()
        lines = [f"# `{name}`", "", f"`{rel}`, {len(src.splitlines())} lines."]
        defs = defines(src)
        if defs:
            lines += ["", "Defines: " + ", ".join(f"`{d}` (line {ln})" for d, ln in defs) + "."]
        lines += ["", "```{literalinclude} /" + rel, ":language: python", ":linenos:", "```", ""]
        atomic_write_text(out / f"{name}.md", "\n".join(lines))
        names.append(name)
    for old in out.glob("*.md"):
        if old.stem not in names:
            old.unlink()
    return names


def chapter_links(chapter: str, root: Path) -> str:
    """The line under a chapter's claims table: links to its package's modules."""
    mods = [n for n, _ in modules(root) if n == f"privtrans.{chapter}" or n.startswith(f"privtrans.{chapter}.")]
    if not mods:
        return ""
    links = ", ".join(f"{{doc}}`{m.split('.', 2)[-1] if m.count('.') > 1 else m} <{page_doc(m)}>`" for m in mods)
    return f"\nThe code behind these numbers (the library appendix): {links}.\n"
