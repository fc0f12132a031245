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
