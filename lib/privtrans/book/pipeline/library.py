"""The book's appendix "The library": one page per module of ``lib/privtrans``, its source with line
numbers and a list of what it defines, so a reader follows a figure or a verdict to its code without
leaving the book. Each top-level definition is its own labelled section (``label``), so a claim row
links to the very readout function that computed its value (``privtrans.book.producers``).

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


def page_doc(module: str) -> str:
    """The Sphinx doc path of a module's page (for ``{doc}`` links from other pages)."""
    return f"/{PAGES.as_posix()}/{module}"


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
            lines += ["", "Defines: " + ", ".join(f"{{ref}}`{d} <{label(f'{name}.{d}')}>` (line {ln})"
                                                 for d, ln in defs) + "."]
        for d, first, last in sections(src):
            if d is not None:
                lines += ["", f"({label(f'{name}.{d}')})=", f"## `{d}`"]
            lines += ["", "```{literalinclude} /" + rel, ":language: python", f":lines: {first}-{last}",
                      ":lineno-match:", "```"]
        lines.append("")
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
