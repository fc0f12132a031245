"""Trained models and their metrics on disk, so no model is trained twice in one build.

Table 1 and Figure 6 read the same runs, Figure 2's tied cell at the Table 1 settings is a Table 1
run, Figure 9 inspects Table 1's models: every notebook asks ``RunCache.run(spec, split, data)``
and gets the stored result when one exists.

A run is identified by everything that determines it:

- the full :class:`~privtrans.dpformer.train.RunSpec` (method, ε, seed, epochs, B, lr, sizes, ...);
- a fingerprint of the data (hash of the sequences), so a change of preprocessing is a new run;
- a hash of the source of the code that trains it (this package, the SASRec model, the DP step,
  Phantom, Re-Attention), so editing the method never serves a stale model.

Files: ``_build/cache/dpformer/<method>/<key>.pt`` (``torch.save`` of the result dict, weights
included) next to ``<key>.json`` (the same without weights, for people). Writes are atomic.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

import torch

from . import train
from .data import SeqData, Split

CODE_MODULES = ("privtrans.dpformer.train", "privtrans.dpformer.baselines", "privtrans.dpformer.metrics",
                "privtrans.dpformer.sasrec", "privtrans.shared.dp.phantom", "privtrans.shared.dp.step",
                "privtrans.shared.dp.clipping", "privtrans.shared.dp.accounting", "privtrans.dpformer.reattention",
                "privtrans.dpformer.moments")


@lru_cache(maxsize=None)
def code_version() -> str:
    """Hash of the source files that define how a run trains."""
    import importlib

    h = hashlib.sha256()
    for name in CODE_MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            h.update(f"{name}:missing".encode())
            continue
        h.update(name.encode())
        h.update(Path(mod.__file__).read_bytes())
    return h.hexdigest()[:12]


def default_root() -> Path:
    from privtrans.book.paths import build_dir

    return build_dir() / "cache" / "dpformer"


class RunCache:
    """get / put / run of training results keyed by (spec, data fingerprint, code version)."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else default_root()
        self.hits = 0
        self.misses = 0

    def key(self, spec: train.RunSpec, data_fp: str) -> str:
        blob = json.dumps({"spec": spec.as_dict(), "data": data_fp, "code": code_version()}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:20]

    def path(self, spec: train.RunSpec, data_fp: str) -> Path:
        return self.root / spec.method / f"{self.key(spec, data_fp)}.pt"

    def get(self, spec: train.RunSpec, data_fp: str) -> dict | None:
        p = self.path(spec, data_fp)
        if not p.is_file():
            return None
        try:
            return torch.load(p, map_location="cpu", weights_only=False)
        except Exception:  # noqa: BLE001 - a truncated or foreign file is a miss, not a crash
            return None

    def put(self, spec: train.RunSpec, data_fp: str, result: dict) -> Path:
        p = self.path(spec, data_fp)
        p.parent.mkdir(parents=True, exist_ok=True)
        for target, write in ((p, lambda f: torch.save(result, f)),
                              (p.with_suffix(".json"), lambda f: f.write(json.dumps(
                                  {k: v for k, v in result.items() if k != "state_dict"},
                                  indent=1, default=str).encode()))):
            fd, tmp = tempfile.mkstemp(dir=p.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                write(f)
            os.replace(tmp, target)
        return p

    def run(self, spec: train.RunSpec, split: Split, data: SeqData | str, device=None, log=None) -> dict:
        """The stored result of ``spec`` on these data, training (and storing) it only if absent."""
        fp = data if isinstance(data, str) else data.fingerprint()
        hit = self.get(spec, fp)
        if hit is not None:
            self.hits += 1
            hit["cached"] = True
            return hit
        self.misses += 1
        result = train.train_run(spec, split, device=device, log=log)
        result["data"] = fp
        result["code"] = code_version()
        self.put(spec, fp, result)
        result["cached"] = False
        return result

    def run_many(self, specs, split: Split, data: SeqData | str, device=None, log=None) -> list[dict]:
        fp = data if isinstance(data, str) else data.fingerprint()
        return [self.run(s, split, fp, device=device, log=log) for s in specs]
