"""python -m privtrans.book.pipeline.verify [--chapter CH] [--notebook CH/NAME ...] [--n 3] [--pick 0]

How a reader trusts a cached book: re-run some of its notebooks from a cold cache and compare every
value they record with the cached build's. The notebooks run in a temporary copy of this checkout
without ``_build`` (no notebook cache, no run cache: every model is trained again) at the profile and
seed of this checkout's ``_build/summary.json``; the build here is left alone.

Values are compared exactly (numbers within ``--rtol``, default 1e-9), except wall-clock ones: a value
whose path names a time, a speed or a ratio of them (``TIMING``, by name: results.json does not mark
them) depends on the machine's load, so it is only counted, never failed. Exit status 0 when every
other value agrees. ``make verify`` runs it; ``make test`` runs it on the smoke book's fastest notebook.

A cached notebook whose inputs (its source, the code it imports, its data) changed since it ran is
*stale*: a re-run is expected to differ from it, so it is named, not re-run, and the exit status is
not 0 (``make book`` first brings the cache up to date).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
from pathlib import Path

from ..chapters import get
from ..paths import repo_root
from . import cache
from .discover import discover
from .seedflip import pipeline_in_copy

# the words of a wall-clock value (seconds, a time share, a speed-up, taft/cost's time-ratio table)
TIMING = re.compile(r"second|time|speed|latency|throughput|wall|(^|[._ ])(ms|sec)($|[._ ])|_m?s$"
                    r"|ratio\.(train|inference)|(train|inference)_ratio", re.I)


def flatten(obj, path: str = "") -> dict[str, object]:
    """{"a.b[0]": leaf} for nested dicts and lists (what two builds' values are compared by)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out.update(flatten(v, f"{path}.{k}" if path else str(k)))
        return out
    if isinstance(obj, list):
        out = {}
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{path}[{i}]"))
        return out
    return {path: obj}


def _same(a, b, rtol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a == b
    if math.isnan(a) and math.isnan(b):
        return True
    return math.isclose(a, b, rel_tol=rtol, abs_tol=rtol * 1e-3)


def compare(old: dict, new: dict, rtol: float = 1e-9) -> tuple[list[str], list[str]]:
    """(differences, wall-clock paths) between two results' ``values``; a missing or extra value is
    a difference."""
    a, b = flatten(old), flatten(new)
    diffs, timing = [], []
    for k in sorted(set(a) | set(b)):
        if TIMING.search(k):
            timing.append(k)
        elif k not in a or k not in b:
            diffs.append(f"{k}: {'only in the re-run' if k not in a else 'missing from the re-run'}")
        elif not _same(a[k], b[k], rtol):
            diffs.append(f"{k}: cached {a[k]!r}, re-run {b[k]!r}")
    return diffs, timing


def stale(root: Path, notebooks: list[str], profile: str, seed: int) -> list[str]:
    """The notebooks whose cached run is not of their present inputs (``cache.input_key``)."""
    by_label = {f"{nb.chapter}/{nb.name}": nb for nb in discover(root)}
    out = []
    for label in notebooks:
        st = cache.load_state(root, by_label[label]) or {}
        if st.get("key") != cache.input_key(root, by_label[label], profile, seed):
            out.append(label)
    return out


def choose(root: Path, chapter: str | None, named: list[str], n: int, pick: int) -> list[str]:
    """The notebooks to re-run as chapter/name: the named ones, else ``n`` drawn (seed ``pick``) from
    the notebooks that ran ok in the cached build (of ``chapter`` when given)."""
    summary = json.loads((root / "_build" / "summary.json").read_text())
    ok = [f"{r['chapter']}/{nb.name}" for r in summary["notebooks"] if r["status"] == "ok"
          for nb in discover(root) if nb.chapter == r["chapter"] and nb.stem == r["notebook"]]
    if named:
        bad = [x for x in named if x not in ok]
        if bad:
            raise SystemExit(f"not in the cached build (or it did not run ok): {bad}; allowed: {', '.join(ok)}")
        return named
    pool = [x for x in ok if chapter is None or x.startswith(chapter + "/")]
    if not pool:
        raise SystemExit(f"no notebook of {chapter or 'the book'} ran ok in {root / '_build' / 'summary.json'}")
    return sorted(random.Random(pick).sample(pool, min(n, len(pool))))


def rerun(root: Path, notebooks: list[str], profile: str, seed: int) -> dict[str, dict]:
    """Run ``notebooks`` cold in a temporary copy; {chapter/name: results.json} of the re-run."""
    args = ["--profile", profile, "--seed", str(seed), "--no-html"] + [a for nb in notebooks for a in ("--notebook", nb)]
    with pipeline_in_copy(root, "verify-", args,
                          f"re-running {', '.join(notebooks)} cold at profile {profile}, seed {seed}") as (copy, proc):
        out = {}
        for nb in notebooks:
            ch, name = nb.split("/")
            f = copy / "book" / "_generated" / ch / name / "results.json"
            if proc.returncode != 0 and not f.is_file():
                raise SystemExit(f"the re-run of {nb} failed (exit {proc.returncode}); see its output above")
            out[nb] = json.loads(f.read_text())
        return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m privtrans.book.pipeline.verify", description=__doc__.split("\n\n")[1])
    ap.add_argument("--chapter", default=None, help="draw the notebooks from this chapter only")
    ap.add_argument("--notebook", action="append", default=[], help="chapter/name to re-run (repeatable)")
    ap.add_argument("--n", type=int, default=3, help="how many notebooks to draw (default 3)")
    ap.add_argument("--pick", type=int, default=0, help="seed of the draw (printed, so a run can be repeated)")
    ap.add_argument("--rtol", type=float, default=1e-9)
    ap.add_argument("--root", type=Path, default=None)
    a = ap.parse_args(argv)
    root = (a.root or repo_root()).resolve()
    summary_path = root / "_build" / "summary.json"
    if not summary_path.is_file():
        raise SystemExit(f"no cached build to verify: {summary_path} does not exist (run `make book` first)")
    summary = json.loads(summary_path.read_text())
    chapter = get(a.chapter).key if a.chapter else None
    notebooks = choose(root, chapter, a.notebook, a.n, a.pick)
    print(f"verifying {len(notebooks)} notebook(s) (draw seed {a.pick}): {', '.join(notebooks)}")
    old = stale(root, notebooks, summary["profile"], summary["seed"])
    for nb in old:
        print(f"{nb}: stale (its source, code or data changed since the cached run): not compared; "
              "run `make book` first")
    notebooks = [nb for nb in notebooks if nb not in old]
    fresh = rerun(root, notebooks, summary["profile"], summary["seed"]) if notebooks else {}
    bad = 0
    for nb in notebooks:
        ch, name = nb.split("/")
        cached = json.loads((root / "book" / "_generated" / ch / name / "results.json").read_text())
        diffs, timing = compare(cached["values"], fresh[nb]["values"], a.rtol)
        n_values = len(set(flatten(cached["values"])) | set(flatten(fresh[nb]["values"])))
        print(f"{nb}: {n_values - len(timing) - len(diffs)} values equal, {len(diffs)} differ"
              + (f", {len(timing)} wall-clock values not compared" if timing else ""))
        for d in diffs:
            print(f"    {d}")
        bad += bool(diffs)
    if bad:
        print(f"{bad} notebook(s) differ from the cached build")
    elif notebooks:
        print("every re-run value equals the cached one" + (f"; {len(old)} stale, not compared" if old else ""))
    else:
        print("nothing verified: every chosen notebook is stale")
    return 1 if bad or old else 0


if __name__ == "__main__":
    sys.exit(main())
