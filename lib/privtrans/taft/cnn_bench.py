"""The linearised CNN's runs on the downstream tasks (Table 7), cached like the ViT's.

The CNN is fine-tuned exactly as TAFT is: the same loss (RSL), regulariser, optimiser, schedule,
validation-split selection and shard partition (``compose.shard_indices``/``shard_seed``), on
cached features of its frozen stem. Only the model differs, so a gap between the two is the
architecture and its pretraining, not the recipe.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from privtrans.book.runcache import RunCache

from . import cnn
from . import compose, data, finetune
from .finetune import FitSpec

CODE = [__name__]  # the modules a cached run executes, followed through the import graph (runcache)


@dataclass
class CNNBench:
    cnn_cfg: dict
    cnn_seed: int
    task_cfg: dict
    train_per_class: int | None = None
    val_fraction: float = data.VAL_FRACTION
    cache: RunCache = field(default_factory=lambda: RunCache("taft"))

    def __post_init__(self):
        self.spec = cnn.CNNSpec.from_cfg(self.cnn_cfg)
        self.backbone, self.backbone_cached = cnn.get_backbone(self.spec, self.cnn_seed, self.cache)
        self.cnn = self.backbone.model()
        self._tasks, self._feats = data.TaskSet(self.task_cfg, self.train_per_class), {}

    def task(self, name: str) -> data.Task:
        return self._tasks(name)

    def split(self, name: str, split: str):
        """``data.evaluation_split`` of the stem features (the ViT bench's splits)."""
        if name not in self._feats:
            t = self.task(name)
            self._feats[name] = (cnn.features(self.cnn, t.x_train), t.y_train, cnn.features(self.cnn, t.x_test), t.y_test)
        return data.evaluation_split(*self._feats[name], split, self.val_fraction)

    def prepare(self, name: str, spec: FitSpec) -> None:
        """Compute the stem features now, so that worker processes share them."""
        self.split(name, "test")

    def model(self, name: str, init_seed: int) -> cnn.LinearisedCNN:
        return cnn.LinearisedCNN(cnn.task_cnn(self.cnn, self.task(name).classes, init_seed))

    def _key(self, name: str) -> dict:
        return {"cnn": asdict(self.spec), "cnn_seed": self.cnn_seed,
                "cnn_key": cnn.backbone_key(self.spec, self.cnn_seed, self.cache), "task": name,
                "task_cfg": self.task_cfg.get(name) or {}, "train_per_class": self.train_per_class}

    def fit_run(self, name: str, spec: FitSpec, seed: int, split: str = "test") -> dict:
        """One fine-tuning run of the linearised CNN (cached): accuracy, seconds, ‖Δw‖."""
        def make():
            x, y, xt, yt = self.split(name, split)
            m = self.model(name, seed)
            r = finetune.fit(m, x, y, spec, seed, classes=self.task(name).classes)
            return {"accuracy": finetune.accuracy(m, xt, yt), "seconds": r.seconds, "delta_norm": r.delta_norm}

        out, _ = self.cache.get_or_make("cnn_fit", {**self._key(name), "spec": spec.as_dict(), "seed": seed,
                                                    "split": split}, make, code=CODE)
        return out

    def composed(self, name: str, spec: FitSpec, n_shards: int, seed: int) -> dict:
        """N shard models from one initialisation, composed by averaging their Δw (cached): the
        composed model's test accuracy and the training seconds of all shards."""
        def make():
            x, y, xt, yt = self.split(name, "test")
            classes = self.task(name).classes
            states, secs = [], []
            for i, idx in enumerate(compose.shard_indices(len(y), n_shards, seed)):
                m = self.model(name, seed)
                idx = torch.as_tensor(np.asarray(idx), dtype=torch.long)
                r = finetune.fit(m, x[idx], y[idx], spec, compose.shard_seed(seed, i), classes=classes)
                states.append(r.state)
                secs.append(r.seconds)
            m = finetune.load_trainable(self.model(name, seed), compose.average(states))
            return {"accuracy": finetune.accuracy(m, xt, yt), "seconds": float(sum(secs))}

        out, _ = self.cache.get_or_make("cnn_shards", {**self._key(name), "spec": spec.as_dict(),
                                                       "n_shards": n_shards, "seed": seed}, make, code=CODE)
        return out
