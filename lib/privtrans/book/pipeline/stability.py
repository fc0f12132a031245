"""python -m privtrans.book.pipeline.stability [--seed 100] [--profile ci] [--chapter CH ...]

``make stability``: builds the book again at a disjoint seed set (``--seed`` and the seeds after it;
the book's own build uses 0, 1, ...) in a temporary copy of this checkout, keeps that build's
summary in ``_build/stability/summary.json`` and prints which verdicts differ from this checkout's
``_build/summary.json``. The next ``make book`` (cached notebooks: minutes) shows both verdicts on
every chapter page and the landing page. A reproduction held at one seed set and contradicted at
the other is a defect to explain.
Not part of ``make book`` or ``make test``: it costs a whole cold build.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..chapters import KEYS, check_profile, check_seed, get
from ..paths import repo_root
from ..runcache import atomic_write_text
from .compare import count, differences, verdict
from .report import stability_path
from .seedflip import build_at_seed, only

DEFAULT_SEED = 100


def merged(path: Path, new: dict, chapters: list[str]) -> dict:
    """The stability summary with ``chapters`` replaced by ``new``'s (others kept when seed and profile match)."""
    if path.is_file():
        old = json.loads(path.read_text())
        if old.get("seed") == new.get("seed") and old.get("profile") == new.get("profile"):
            keep = [c for c in old.get("claims", []) if c["chapter"] not in chapters]
            return {**new, "claims": keep + [c for c in new["claims"] if c["chapter"] in chapters]}
    return {**new, "claims": [c for c in new["claims"] if c["chapter"] in chapters]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m privtrans.book.pipeline.stability",
                                 description=__doc__.split("\n\n")[1])
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--profile", default="ci")
    ap.add_argument("--chapter", action="append", default=[], help=f"one of {', '.join(KEYS)} (default: all)")
    ap.add_argument("--root", type=Path, default=None)
    a = ap.parse_args(argv)
    profile, seed = check_profile(a.profile), check_seed(a.seed)
    chapters = [get(c).key for arg in a.chapter for c in arg.split(",") if c] or list(KEYS)
    root = (a.root or repo_root()).resolve()
    base = root / "_build" / "summary.json"
    old = json.loads(base.read_text()) if base.is_file() else None
    if old is not None and (old.get("profile"), old.get("seed")) == (profile, seed):
        raise SystemExit(f"the book's build ({base}) is at profile {profile}, seed {seed} already: "
                         f"a stability build needs a disjoint seed set (another --seed)")
    new = build_at_seed(root, chapters, profile, seed)
    path = stability_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(merged(path, new, chapters), indent=1, ensure_ascii=False))
    print(f"stability build at seed {seed}: {count(new)}; kept in {path.relative_to(root)}")
    if old is None:
        print("no build of this checkout to compare with: run `make book`, which then shows both verdicts")
        return 0
    if old.get("profile") != profile:
        print(f"the book's build is at profile {old.get('profile')!r}, this one at {profile!r}: verdicts not "
              f"compared; run `make book PROFILE={profile}`, which then shows both")
        return 0
    lines = []
    for ch in chapters:
        lines += differences(only(old, ch), only(new, ch))
    print("\n".join(lines) if lines else "no verdict differs from the book's build")
    defects = [c for c in new["claims"] for o in old["claims"]
               if (c["chapter"], c["id"]) == (o["chapter"], o["id"]) and c.get("kind") == "reproduction"
               and {verdict(c), verdict(o)} == {"held", "contradicted"}]
    for c in defects:
        print(f"DEFECT {c['chapter']}/{c['id']}: held at one seed set, contradicted at the other")
    print("run `make book` to show both verdicts on the pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
