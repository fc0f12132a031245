"""The library's layers hold: import-linter's contract passes, lists exactly the registry's chapters,
and fails when a mechanism imports a chapter or one chapter imports another."""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from privtrans.book import chapters

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess:
    env = {"PATH": str(LINT.parent), "PYTHONPATH": str(root / "lib"), "NO_COLOR": "1"}
    return subprocess.run([str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_import_contracts_are_kept():
    proc = lint(REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_the_chapter_layer_is_the_registry():
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in cfg["contracts"] if c["type"] == "layers"]
    top = [s.strip() for s in contract["layers"][0].split("|")]
    assert top == list(chapters.KEYS)
    for key in chapters.KEYS:
        assert (REPO / "lib" / "privtrans" / key / "__init__.py").is_file(), f"no package for chapter {key}"


@pytest.mark.parametrize("module, line", [
    ("shared/dp/clipping.py", "import privtrans.dpformer"),          # a mechanism imports a chapter
    ("dp_icl/task.py", "from privtrans.merge import data"),          # a chapter imports another
    ("book/paths.py", "from privtrans.shared import models"),        # the machinery imports a mechanism
])
def test_a_broken_layer_fails_the_contract(tmp_path, module, line):
    for name in ("pyproject.toml",):
        shutil.copy(REPO / name, tmp_path / name)
    shutil.copytree(REPO / "lib", tmp_path / "lib", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    target = tmp_path / "lib" / "privtrans" / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    proc = lint(tmp_path)
    assert proc.returncode != 0 and "BROKEN" in proc.stdout, proc.stdout[-2000:]


def _layer(module: str) -> str | None:
    """A privtrans module's layer: its chapter's key, "shared" or "book"; None for the package
    itself, its attributes (``privtrans.__version__``) and names of no layer."""
    top = module.split(".")[1] if module.count(".") else None
    return top if top in chapters.KEYS or top in ("shared", "book") else None


def _may_name(module: str, named: str) -> bool:
    """A chapter names its own modules, the mechanisms and the machinery; a mechanism the
    mechanisms and the machinery; the machinery itself only."""
    mine, theirs = _layer(module), _layer(named)
    if mine is None or theirs is None:
        return True
    return theirs == mine or theirs == "book" or (theirs == "shared" and mine != "book")


def test_no_module_imports_or_names_a_module_outside_its_layer():
    """What import-linter cannot see: a module named in a string (a subprocess's ``-m`` module, a
    "module:function" party, a docstring) is run, or at least followed by both caches, as an import
    (book/imports.py). Every such name goes down the layers, as the imports do."""
    from privtrans.book.imports import import_graph

    graph = import_graph(REPO / "lib" / "privtrans")
    wrong = sorted((m, d) for m, (_, deps) in graph.items() for d in deps if not _may_name(m, d))
    assert wrong == []
    # the check reads strings: a mechanism that names a chapter's module fails it
    assert not _may_name("privtrans.shared.mpc.runner", "privtrans.merge.private")
    assert not _may_name("privtrans.dp_icl.task", "privtrans.merge.data")
    assert _may_name("privtrans.merge.private", "privtrans.shared.mpc.runner")


def _built_imports(root: Path) -> list[str]:
    """Where a module under ``root`` imports a name it puts together from parts (an f-string, a sum,
    ``.format``): a name no check of strings can read."""
    import ast

    built = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            called = getattr(node, "func", None)
            if isinstance(node, ast.Call) and getattr(called, "attr", getattr(called, "id", None)) in (
                    "import_module", "__import__", "run_module"):
                arg = node.args[0] if node.args else None
                if isinstance(arg, (ast.JoinedStr, ast.BinOp)) or (
                        isinstance(arg, ast.Call) and getattr(arg.func, "attr", None) == "format"):
                    built.append(f"{path.relative_to(root)}:{node.lineno}")
    return built


def test_the_machinery_reaches_a_chapter_only_by_its_declared_modules():
    """The registry declares each chapter's readouts module (what a session watches); each is a module
    (or a package of modules, one per table) of that chapter's own package, and ``Chapter.module`` is
    the one place such a name is put together: no other import builds its module's name."""
    for c in chapters.CHAPTERS:
        name = c.module(c.readouts)
        assert _layer(name) == c.key and name.startswith(f"privtrans.{c.key}."), name
        path = REPO / "lib" / Path(*name.split("."))
        assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file(), name  # a module or a package
    assert _built_imports(REPO / "lib" / "privtrans") == []


def test_a_name_built_to_be_imported_is_found(tmp_path):
    """The session's import before the registry declared readouts fails the check."""
    (tmp_path / "session.py").write_text('import importlib\n\n\ndef start(chapter):\n'
                                         '    return importlib.import_module(f"privtrans.{chapter}.readouts")\n')
    (tmp_path / "fine.py").write_text('import importlib\nimportlib.import_module("privtrans.book.dry")\n')
    assert _built_imports(tmp_path) == ["session.py:5"]


def test_an_import_in_any_nested_body_is_in_the_graph(tmp_path):
    """The graph's walk visits statements only: imports under a function, a class, a branch, a loop's
    else, a handler, a finally, a with and a match case are all found. Relative ones, so that only the
    walk can find them (a name written out in full is found in the text too)."""
    from privtrans.book.imports import import_graph

    pkg = tmp_path / "privtrans"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text(
        "from . import top\n"
        "def f():\n    from . import in_def\n"
        "class C:\n    from . import in_class\n"
        "if x:\n    pass\nelse:\n    from . import in_else\n"
        "for i in y:\n    pass\nelse:\n    from . import in_for_else\n"
        "try:\n    pass\nexcept E:\n    from . import in_handler\nfinally:\n    from . import in_finally\n"
        "with c:\n    from . import in_with\n"
        "match v:\n    case 1:\n        from . import in_case\n"
        "async def g():\n    while z:\n        from . import in_async_while\n")
    deps = import_graph(pkg)["privtrans.m"][1]
    assert {f"privtrans.{n}" for n in ("top", "in_def", "in_class", "in_else", "in_for_else", "in_handler",
                                       "in_finally", "in_with", "in_case", "in_async_while")} <= deps
