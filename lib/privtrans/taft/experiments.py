"""The runs the notebooks share, through the one run cache (``_build/cache/taft``).

A ``Bench`` holds the pretrained backbone and the downstream tasks of one notebook, and caches
the frozen features of each cut. Fine-tuning runs (``fit_run``) and shard sets (``shards``) are
cached by everything that determines them (the backbone's settings, the task and its sizes, the
method's settings, the seed, the source of the code that makes them), so the composition and the
forgetting notebooks train the shard models once.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from privtrans.book.runcache import RunCache

from . import compose, data, finetune, losses, tangent, vit as vit_module
from .finetune import FitSpec
from .pretrain import PretrainSpec, get_backbone

CODE = [finetune, tangent, vit_module, losses, data, compose]
SPLITS = ("test", "val")
VAL_FRACTION = 0.2  # the last fifth of the training set: the validation split for model selection


def set_threads(n: int = 1) -> None:
    """One intra-op thread: on a shared 2-core box two threads ran 18× slower (research notes)."""
    torch.set_num_threads(n)


@dataclass
class Bench:
    backbone_cfg: dict
    backbone_seed: int
    task_cfg: dict  # {task name: generator keywords}
    train_per_class: int | None = None  # smoke: a cut of every training set
    cache: RunCache = field(default_factory=lambda: RunCache("taft"))

    def __post_init__(self):
        self.spec = PretrainSpec.from_cfg(self.backbone_cfg)
        self.backbone, self.backbone_cached = get_backbone(self.spec, self.backbone_seed, self.cache)
        self.vit = self.backbone.model()
        self._tasks, self._feats = {}, {}

    def task(self, name: str) -> data.Task:
        if name not in self._tasks:
            self._tasks[name] = data.subset(data.load(name, **(self.task_cfg.get(name) or {})), self.train_per_class)
        return self._tasks[name]

    def features(self, name: str, cut: int):
        """(x_train, y_train, x_test, y_test) as frozen features after ``cut`` blocks."""
        if (name, cut) not in self._feats:
            t = self.task(name)
            self._feats[name, cut] = (finetune.features(self.vit, t.x_train, cut), t.y_train,
                                      finetune.features(self.vit, t.x_test, cut), t.y_test)
        return self._feats[name, cut]

    def split(self, name: str, cut: int, split: str):
        """Train and evaluation data: ('test') the full training set and the test set, or ('val')
        the first 80 % of the training set and its last 20 % (model selection never sees test)."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        x, y, xt, yt = self.features(name, cut)
        if split == "test":
            return x, y, xt, yt
        k = int(round(len(y) * (1 - VAL_FRACTION)))
        return x[:k], y[:k], x[k:], y[k:]

    def key_parts(self, name: str) -> dict:
        return {"backbone": asdict(self.spec), "backbone_seed": self.backbone_seed, "task": name,
                "task_cfg": self.task_cfg.get(name) or {}, "train_per_class": self.train_per_class}

    def cut(self, spec: FitSpec) -> int:
        return len(self.vit.blocks) - spec.tuned

    def fit_run(self, name: str, spec: FitSpec, seed: int, split: str = "test") -> dict:
        """One fine-tuning run: accuracy, wall time, final loss, ‖Δw‖ (cached)."""
        def make():
            x, y, xt, yt = self.split(name, self.cut(spec), split)
            classes = self.task(name).classes
            m = finetune.make_model(self.vit, spec, classes, init_seed=seed)
            r = finetune.fit(m, x, y, spec, seed, classes=classes)
            return {"accuracy": finetune.accuracy(m, xt, yt), "seconds": r.seconds, "final_loss": r.final_loss,
                    "delta_norm": r.delta_norm, "n_train": len(y)}

        out, _ = self.cache.get_or_make("fit", {**self.key_parts(name), "spec": spec.as_dict(), "seed": seed,
                                                "split": split}, make, code=CODE)
        return out

    def shards(self, name: str, spec: FitSpec, n_shards: int, seed: int) -> compose.ShardSet:
        """The shard models of one method on one task (cached; shared by notebooks 03 and 04)."""
        def make():
            x, y, _, _ = self.features(name, self.cut(spec))
            return compose.train_shards(self.vit, x, y, spec, self.task(name).classes, n_shards, seed)

        out, _ = self.cache.get_or_make("shards", {**self.key_parts(name), "spec": spec.as_dict(),
                                                   "n_shards": n_shards, "seed": seed}, make, code=CODE)
        return out


def spec_from(cfg: dict, **over) -> FitSpec:
    """A FitSpec from a profile mapping (lists become tuples) with overrides."""
    d = dict(cfg, **over)
    if "decay_at" in d:
        d["decay_at"] = tuple(d["decay_at"])
    unknown = set(d) - set(FitSpec.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown fine-tuning settings {sorted(unknown)}; allowed: {sorted(FitSpec.__dataclass_fields__)}")
    return FitSpec(**d)


def seeds(seed: int, n: int) -> list[int]:
    """The notebook's seeds: ``seed`` (the papermill parameter) and the n − 1 after it."""
    return [seed + i for i in range(n)]


def timed(fn, *a, **kw):
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t0


def accuracy_of(pred: torch.Tensor, y: torch.Tensor) -> float:
    return float((pred == y).float().mean())


def mean_sd(values) -> tuple[float, float | None]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), (float(v.std(ddof=1)) if len(v) > 1 else None)
