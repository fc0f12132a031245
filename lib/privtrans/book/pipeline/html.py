"""Jupyter Book 1.x renders what papermill wrote; the new HTML replaces the old one only if it is good."""

from __future__ import annotations

import html as html_lib
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ..chapters import PROFILES, toc_yaml
from ..paths import read_yaml
from ..runcache import atomic_write_text
from . import library
from .discover import Notebook
from .execute import executed_path

SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>", re.S | re.I)
CDN = re.compile(r"""<(?:script|link)[^>]+(?:src|href)=["'](?:https?:)?//[^"']+""", re.I)


def jupyter_book() -> str:
    exe = Path(sys.executable).with_name("jupyter-book")
    return str(exe) if exe.exists() else "jupyter-book"


def offline_problems(html: Path, notebooks: list[Notebook]) -> list[str]:
    """Remote scripts/styles or a script included twice in any page, or a notebook page without
    its .ipynb download."""
    problems = []
    for page in html.rglob("*.html"):
        text = page.read_text(errors="replace")
        for m in CDN.finditer(text):
            problems.append(f"{page.relative_to(html)} loads {m.group(0)[-90:]}")
        scripts = SCRIPT.findall(text)
        twice = {s for s in scripts if scripts.count(s) > 1}
        if twice:
            problems.append(f"{page.relative_to(html)} includes a script twice: {min(twice)[:90]}")
    for nb in notebooks:
        page = html / "book" / "_executed" / nb.chapter / f"{nb.stem}.html"
        src = html / "_sources" / "book" / "_executed" / nb.chapter / f"{nb.stem}.ipynb"
        if not page.is_file():
            problems.append(f"no page for {nb.label}")
        elif not src.is_file() or f"{nb.stem}.ipynb" not in page.read_text(errors="replace"):
            problems.append(f"{nb.label}: page offers no .ipynb download")
    return problems


def toc_problem(root: Path) -> str | None:
    """Why ``_toc.yml`` cannot be used: it must be what the chapter registry writes."""
    toc = root / "_toc.yml"
    if not toc.is_file() or toc.read_text() != toc_yaml():
        return ("_toc.yml does not match the chapter registry (lib/privtrans/book/chapters.py); "
                "write it with `python -m privtrans.book.chapters toc > _toc.yml`")
    return None


def show_parameters_once(notebook) -> bool:
    """The page shows the parameters the notebook ran with (papermill's injected cell) and hides the
    source's defaults, which would otherwise appear just above them."""
    changed = False
    for cell in notebook.cells:
        tags = cell.metadata.get("tags", [])
        if "parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
            changed = True
    return changed


RERUN_TAG = "privtrans-rerun"
BINDER = "https://mybinder.org/v2/gh"
COLAB = "https://colab.research.google.com/github"


def launch_links(repository: dict | None, nb: Notebook) -> list[tuple[str, str]]:
    """(label, url) of the launch buttons for a notebook page, from ``repository`` in ``_config.yml``;
    none while no GitHub url is set. Jupyter Book's own buttons would point at book/_executed/, which
    is not in git, so the book makes its own. Binder opens the .md source (jupytext is in the
    environment Binder builds from environment.yml). Colab opens only .ipynb files from GitHub and the
    book keeps .md only, so Colab appears only when ``ipynb_branch`` names a branch holding the .ipynb
    form (``jupytext --to ipynb notebooks/*/*.md`` committed there)."""
    repo = repository or {}
    m = re.fullmatch(r"https://github\.com/([^/\s]+)/([^/\s]+?)(?:\.git)?/?", (repo.get("url") or "").strip())
    if not m:
        return []
    owner, name = m.groups()
    branch = repo.get("branch") or "main"
    src = f"notebooks/{nb.chapter}/{nb.source.name}"
    links = [("Launch on Binder", f"{BINDER}/{owner}/{name}/{branch}?urlpath=lab/tree/{src}")]
    if repo.get("ipynb_branch"):
        ipynb = src[: -len(nb.source.suffix)] + ".ipynb"
        links.append(("Open in Colab", f"{COLAB}/{owner}/{name}/blob/{repo['ipynb_branch']}/{ipynb}"))
    return links


def repository_config(root: Path) -> dict:
    return (read_yaml(root / "_config.yml") or {}).get("repository") or {}


def add_rerun_note(notebook, nb: Notebook, repository: dict | None = None) -> bool:
    """A line after the page's introduction: the profile and seed this page ran at, the commands that
    re-run it and, where a repository url is configured, the launch buttons. The cell is tagged, so a
    later pass updates it (say, once a url is set) instead of adding a second one. True if changed."""
    params = notebook.metadata.get("papermill", {}).get("parameters", {})
    others = " / ".join(p for p in PROFILES if p != params.get("profile"))
    text = (f"*Ran at profile `{params.get('profile')}`, seed {params.get('seed')}.* Re-run this chapter "
            f"at another profile ({others}) with `make chapter CH={nb.chapter} PROFILE=paper`, or open "
            f"`notebooks/{nb.chapter}/{nb.source.name}` in Jupyter and set `profile` in its first cell.")
    links = launch_links(repository, nb)
    if links:
        text += "\n\n" + " ".join(f'<a class="privtrans-launch" href="{url}">{label}</a>' for label, url in links)
    old = next((c for c in notebook.cells if RERUN_TAG in c.metadata.get("tags", [])), None)
    if old is not None:
        if old.source == text:
            return False
        old.source = text
        return True
    import nbformat

    cell = nbformat.v4.new_markdown_cell(text, metadata={"tags": [RERUN_TAG]})
    first_md = next((i for i, c in enumerate(notebook.cells) if c.cell_type == "markdown"), -1)
    notebook.cells.insert(first_md + 1, cell)
    return True


def write_redirect_page(index: Path) -> None:
    """Jupyter Book's root index.html is one bare <meta refresh> line: no doctype, no title, no icon, so
    the browser asks for /favicon.ico (a 404 in the console) and a reader with redirects off sees a
    blank page. Rewrite it as a small page with the same target, the book's icon and a visible link."""
    m = re.search(r'url=([^"\s]+)"', index.read_text(encoding="utf-8"))
    if not m:
        return  # not the shape this expects (a newer Jupyter Book): leave it as it is
    target = html_lib.escape(m.group(1))
    atomic_write_text(index, (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Refresh" content="0; url={target}">\n'
        '<link rel="icon" href="_static/favicon.svg" type="image/svg+xml">\n'
        '<title>Private Transformers, Reproduced</title>\n</head>\n'
        f'<body><p><a href="{target}">Private Transformers, Reproduced</a></p></body>\n</html>\n'))


def build(root: Path, notebooks: list[Notebook]) -> tuple[bool, str]:
    """Build into _build/jb, check, then swap into _build/html. Returns (ok, message)."""
    import nbformat  # here, not at the top: a build that writes no HTML never pays its import (2 s)

    problem = toc_problem(root)
    if problem:
        return False, problem
    repository = repository_config(root)
    library.write_pages(root)  # the appendix: one page per package of lib/privtrans
    for nb in notebooks:
        path = executed_path(root, nb)
        executed = nbformat.read(path, as_version=4)
        if show_parameters_once(executed) | add_rerun_note(executed, nb, repository):
            atomic_write_text(path, nbformat.writes(executed))
    out = root / "_build" / "jb"
    cmd = [jupyter_book(), "build", str(root), "--path-output", str(out), "-W", "-n", "--keep-going", "--all"]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    log = root / "_build" / "jupyter-book.log"
    log.write_text(proc.stdout + "\n" + proc.stderr)
    new = out / "_build" / "html"
    if proc.returncode != 0 or not (new / "index.html").exists():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        return False, f"jupyter-book failed (full log: {log.relative_to(root)}):\n{tail}"
    write_redirect_page(new / "index.html")
    problems = offline_problems(new, notebooks)
    if problems:
        return False, "the built HTML is not self-contained:\n  " + "\n  ".join(problems[:20])
    final, old = root / "_build" / "html", root / "_build" / "html.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    shutil.copytree(new, final)
    shutil.rmtree(old, ignore_errors=True)
    return True, f"HTML book in {final.relative_to(root)}/ (open index.html)"
