"""The context every notebook opens in its first cell after ``parameters``.

    nb = session.start("dp_icl", "fig1_low_dim", profile, seed)
    nb.cfg          # this experiment's settings at this profile (from lib/privtrans/<chapter>/profile*.yaml)
    nb.record(excess_at_max_n=...)      # headline numbers -> results.json, read by the claims
    nb.figure(fig, "fig1")              # shown inline, saved as PNG + SVG for the chapter page
    nb.table(df, "table1")              # shown inline, saved as CSV
    nb.finish()                         # writes results.json with profile, seed, versions, wall time

It validates ``profile`` and ``seed`` first, so a bad parameter stops the notebook at once with a
message that names the allowed values.
"""

from __future__ import annotations

import importlib
import json
import math
import pickle
import platform
import random
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from privtrans import __version__

from . import chapters, dry, producers, profiles
from .paths import generated_dir, repo_root
from .runcache import atomic_write

INPUTS = "inputs.pkl"  # beside results.json: the readout calls' arguments (:func:`load_inputs`)


def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if math.isfinite(f) else None if math.isnan(f) else ("inf" if f > 0 else "-inf")
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if hasattr(v, "item") and callable(v.item):  # torch scalars
        return _jsonable(v.item())
    return v


VERSIONED = ("torch", "opacus", "crypten", "numpy", "pandas", "scikit-learn", "papermill", "jupyter-book")


def versions() -> dict:
    """Python's and the main packages' versions, read from their metadata (nothing is imported)."""
    from importlib import metadata

    out = {"python": platform.python_version(), "privtrans": __version__}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:  # an optional package that is not installed
            pass
    return out


def seed_everything(seed: int) -> np.random.Generator:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch

        torch.manual_seed(seed)
        from .device import deterministic

        deterministic()  # on a GPU only: a re-run records the same values
    except ImportError:
        pass
    return np.random.default_rng(seed)


@dataclass
class Session:
    chapter: str
    notebook: str
    profile: str
    seed: int
    cfg: dict
    rng: np.random.Generator
    outdir: Path
    values: dict = field(default_factory=dict)
    made_by: dict = field(default_factory=dict)  # {key: the readout function that computed it}
    inputs: list = field(default_factory=list)  # the readout calls behind the recorded keys (inputs.pkl)
    started: float = field(default_factory=time.perf_counter)

    @property
    def device(self):
        from .device import pick_device

        return pick_device()

    def record(self, **values):
        """Headline numbers of this notebook; the chapter's claims read them by name."""
        self.values.update(_jsonable(values))
        calls = producers.calls_of(values)
        self.made_by.update({k: call[0] for k, call in calls.items()})
        self._keep_inputs(calls)
        return values if len(values) != 1 else next(iter(values.values()))

    def _keep_inputs(self, calls: dict) -> None:
        """Pickle each readout call's arguments now (a later cell may change a frame it was given),
        once per call, with the recorded keys it produced: what the whole-path controls
        (:mod:`privtrans.book.controls`) generate again and put through the same readout."""
        by_call = {}
        for key, (fn, args, kwargs) in calls.items():
            by_call.setdefault((fn, id(args), id(kwargs)), (fn, args, kwargs, []))[3].append(key)
        for fn, args, kwargs, keys in by_call.values():
            kept = {"function": fn, "keys": keys}
            try:
                kept["call"] = pickle.dumps((args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as e:  # noqa: BLE001 - said where the controls would read it
                kept["error"] = f"its arguments cannot be kept: {type(e).__name__}: {e}"
            self.inputs = [c for c in self.inputs if not set(c["keys"]) & set(keys)] + [kept]


    def figure(self, fig, name: str):
        """Save a matplotlib figure as PNG and SVG under book/_generated/<chapter>/<notebook>/."""
        self.outdir.mkdir(parents=True, exist_ok=True)
        for ext in ("png", "svg"):
            fig.savefig(self.outdir / f"{name}.{ext}", bbox_inches="tight", dpi=120 if ext == "png" else None)
        return self.outdir / f"{name}.png"

    def table(self, df, name: str, floatfmt: str = "{:.4g}"):
        """Save a DataFrame as CSV and return it styled for display."""
        self.outdir.mkdir(parents=True, exist_ok=True)
        df.to_csv(self.outdir / f"{name}.csv", index=False)
        return (df.style.format(floatfmt, subset=df.select_dtypes("number").columns, na_rep="–")
                .hide(axis="index").set_table_attributes('class="dataframe"'))

    def finish(self) -> dict:
        """Write results.json (values + provenance) and return it."""
        out = {
            "chapter": self.chapter,
            "notebook": self.notebook,
            "profile": self.profile,
            "seed": self.seed,
            "settings": _jsonable(self.cfg),
            "values": self.values,
            "made_by": self.made_by,
            "seconds": round(wall := time.perf_counter() - self.started, 3),
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "versions": versions(),
        }
        if dry.active():
            out["dry"] = dry.report(wall)
        self.outdir.mkdir(parents=True, exist_ok=True)
        kept = pickle.dumps({"calls": self.inputs}, protocol=pickle.HIGHEST_PROTOCOL)
        atomic_write(self.outdir / INPUTS, lambda f: f.write(kept))
        (self.outdir / "results.json").write_text(json.dumps(out, indent=1))
        return out


def start(chapter: str, notebook: str, profile, seed, experiment: str | None = None) -> Session:
    """Validate the papermill parameters, seed every RNG, load this experiment's settings."""
    profiles.check_chapter(chapter)
    profiles.check_profile(profile)
    profiles.check_seed(seed)
    dry.activate(profile == profiles.DRY)
    cfg = profiles.settings(chapter, experiment or notebook, profile)
    rng = seed_everything(seed)
    producers.forget()
    # a claim links to the readout that computed its value: the chapter's declared readouts module
    declared = chapters.get(chapter)
    producers.watch(importlib.import_module(declared.module(declared.readouts)))
    outdir = generated_dir(chapter, repo_root()) / notebook
    return Session(chapter, notebook, profile, seed, cfg, rng, outdir)


def load_inputs(chapter: str, notebook: str, root: Path | None = None) -> list[dict]:
    """The readout calls a notebook's recorded values came from: [{function, keys, call (pickled
    (args, kwargs)) or error}]; [] where the notebook kept none (it ran before they were kept)."""
    f = generated_dir(chapter, root) / notebook / INPUTS
    if not f.is_file():
        return []
    return pickle.loads(f.read_bytes())["calls"]


def load_results(chapter: str, root: Path | None = None) -> dict[str, dict]:
    """{notebook: results.json} for every notebook of a chapter that has run."""
    out = {}
    base = generated_dir(chapter, root)
    if base.is_dir():
        for f in sorted(base.glob("*/results.json")):
            out[f.parent.name] = json.loads(f.read_text())
    return out
