"""Skip a notebook whose inputs did not change: its source, lib/, its chapter's data/, profile, seed.

The build machinery itself (``privtrans.book.pipeline`` and ``privtrans.book.claims``, which run after the
notebooks) is not an input of any notebook, and neither are the claims files and READMEs under
data/ (claims are judged after the notebooks ran), so editing them does not re-run the book."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .discover import Notebook


NOT_INPUTS = ("lib/privtrans/pipeline/", "lib/privtrans/claims.py")


def _judged_after(name: str) -> bool:
    return name == "README.md" or (name.startswith("claims") and name.endswith(".yaml"))


def _hash_tree(h, base: Path, root: Path):
    if not base.exists():
        return
    files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
    for p in files:
        rel = p.relative_to(root).as_posix()
        if ("__pycache__" in p.parts or p.suffix == ".pyc" or ".egg-info" in rel
                or rel.startswith(NOT_INPUTS) or (rel.startswith("data/") and _judged_after(p.name))):
            continue
        h.update(rel.encode())
        h.update(p.read_bytes())


def input_key(root: Path, nb: Notebook, profile: str, seed: int) -> str:
    h = hashlib.sha256()
    h.update(f"{profile}|{seed}|".encode())
    _hash_tree(h, nb.source, root)
    _hash_tree(h, root / "lib", root)
    _hash_tree(h, root / "data" / nb.chapter, root)
    return h.hexdigest()


def state_path(root: Path, nb: Notebook) -> Path:
    return root / "_build" / "state" / nb.chapter / f"{nb.stem}.json"


def load_state(root: Path, nb: Notebook) -> dict | None:
    p = state_path(root, nb)
    return json.loads(p.read_text()) if p.is_file() else None


def save_state(root: Path, nb: Notebook, state: dict):
    p = state_path(root, nb)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(state, indent=1))
