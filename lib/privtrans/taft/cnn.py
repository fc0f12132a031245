"""A small CNN and its linearisation: Table 7's stand-in for the linearised ResNet-50 (L-RN50).

The paper compares TAFT with a ResNet-50 linearised by the same authors' rules (their
``models/linear_resnet.py``: a linear Conv2d, an eval-mode BatchNorm, a ReLU that passes the tangent
where the primal is positive, a linear Linear). Here the CNN has two frozen conv stages (conv, BN,
ReLU, max-pool) and a last stage of two conv-BN-ReLU layers (the first strided), global average pooling and a head; the
last stage and the head are linearised, as TAFT-1 linearises the last block and the head. Its size
is close to one block of the tiny ViT (about 55 K weights in the last stage against 50 K).

Rules (each tested against ``torch.func.jvp``):
- conv: out = conv(x; W0, b0), ȯut = conv(x; ΔW, Δb) + conv(ẋ; W0);
- BatchNorm in eval mode, x̂ = (x − μ)/√(σ² + ε) with the running statistics frozen:
  out = γ0 x̂ + β0, ȯut = Δγ x̂ + Δβ + γ0 ẋ/√(σ² + ε);
- ReLU: ȯut = ẋ · 1[x > 0]; average pooling and the head are linear.
BatchNorm's Δγ, Δβ are parameters of the tangent layer itself rather than a plain leaf module:
Table 7 is not trained with DP, so no per-sample clipper needs to see them.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from privtrans.book import profiles
from privtrans.book.device import resolve
from privtrans.book.runcache import RunCache

from . import data
from .pretrain import accuracy, one_cycle, shift
from .tangent import TangentLinear, keep_frozen


@dataclass(frozen=True)
class CNNSpec:
    """The CNN and its pretraining on MNIST-5k (the same budget as the ViT backbone's: 15 epochs)."""

    widths: tuple = (16, 32, 64)
    epochs: int = 15
    lr: float = 2e-3
    weight_decay: float = 5e-4
    batch: int = 128
    shift: int = 2

    def __post_init__(self):
        object.__setattr__(self, "widths", tuple(self.widths))
        if len(self.widths) != 3 or min(self.widths) < 1:
            raise ValueError(f"widths must be three positive channel counts, got {self.widths}")

    @classmethod
    def from_cfg(cls, cfg: dict) -> "CNNSpec":
        return profiles.build(cls, cfg, "CNN")


def _stage(cin: int, cout: int, stride: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, 3, stride=stride, padding=1), nn.BatchNorm2d(cout), nn.ReLU()]


class CNN(nn.Module):
    """stem (frozen in fine-tuning): 2 × [conv, BN, ReLU, max-pool], 28 → 7; tail (linearised):
    2 × [conv, BN, ReLU] (the first with stride 2, 7 → 4), global average pooling, head."""

    def __init__(self, widths=(16, 32, 64), classes: int = 10):
        super().__init__()
        c1, c2, c3 = widths
        self.stem = nn.Sequential(*_stage(1, c1), nn.MaxPool2d(2), *_stage(c1, c2), nn.MaxPool2d(2))
        self.tail = nn.Sequential(*_stage(c2, c3, stride=2), *_stage(c3, c3))  # 7 → 4: a cheap tail on CPU
        self.head = nn.Linear(c3, classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.stem(x)

    def from_features(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(self.tail(h).mean((2, 3)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.from_features(self.features(x))


class TangentConv2d(nn.Module):
    def __init__(self, base: nn.Conv2d):
        super().__init__()
        keep_frozen(self, "w0", base.weight)
        keep_frozen(self, "b0", base.bias if base.bias is not None else torch.zeros(base.out_channels))
        self.stride, self.padding = base.stride, base.padding
        self.delta = nn.Conv2d(base.in_channels, base.out_channels, base.kernel_size, base.stride, base.padding)
        nn.init.zeros_(self.delta.weight)
        nn.init.zeros_(self.delta.bias)

    def forward(self, x, xd):
        return (F.conv2d(x, self.w0, self.b0, self.stride, self.padding),
                self.delta(x) + F.conv2d(xd, self.w0, None, self.stride, self.padding))


class TangentBatchNorm2d(nn.Module):
    """Eval-mode BatchNorm (running statistics frozen, as in the authors' LinearBatchNorm2d)."""

    def __init__(self, base: nn.BatchNorm2d):
        super().__init__()
        c = base.num_features
        keep_frozen(self, "mean", base.running_mean)
        keep_frozen(self, "inv_std", torch.rsqrt(base.running_var + base.eps))
        keep_frozen(self, "g0", base.weight)
        keep_frozen(self, "beta0", base.bias)
        self.delta_weight = nn.Parameter(torch.zeros(c))
        self.delta_bias = nn.Parameter(torch.zeros(c))

    def forward(self, x, xd):
        ch = (1, -1, 1, 1)
        xhat = (x - self.mean.view(ch)) * self.inv_std.view(ch)
        out = self.g0.view(ch) * xhat + self.beta0.view(ch)
        tan = self.delta_weight.view(ch) * xhat + self.delta_bias.view(ch) + (self.g0 * self.inv_std).view(ch) * xd
        return out, tan


def relu_tangent(x, xd):
    return F.relu(x), xd * (x > 0).to(xd.dtype)


class LinearisedCNN(nn.Module):
    """f_lin(h) = f_w0(h) + J f_w0(h)·Δw of the CNN's tail and head, on the stem's features ``h``
    (``output="sum"``) or the JVP term alone (``output="jvp"``). Trainable: the Δ of every tail
    layer and of the head; the stem's features are computed once and cached outside."""

    def __init__(self, cnn: CNN, output: str = "sum"):
        super().__init__()
        if output not in ("sum", "jvp"):
            raise ValueError(f"output must be 'sum' or 'jvp', got {output!r}")
        layers = []
        for m in cnn.tail:
            if isinstance(m, nn.Conv2d):
                layers.append(TangentConv2d(m))
            elif isinstance(m, nn.BatchNorm2d):
                layers.append(TangentBatchNorm2d(m))
            elif not isinstance(m, nn.ReLU):
                raise TypeError(f"no tangent rule for {type(m).__name__} (allowed: Conv2d, BatchNorm2d, ReLU)")
            else:
                layers.append(None)
        self.layers = nn.ModuleList([m for m in layers if m is not None])
        self._plan = ["relu" if m is None else "layer" for m in layers]
        self.head = TangentLinear(cnn.head)
        self.output = output

    def forward(self, h):
        x, xd, it = h, torch.zeros_like(h), iter(self.layers)
        for step in self._plan:
            x, xd = relu_tangent(x, xd) if step == "relu" else next(it)(x, xd)
        out, jvp = self.head(x.mean((2, 3)), xd.mean((2, 3)))
        return out + jvp if self.output == "sum" else jvp


def task_cnn(cnn: CNN, classes: int, init_seed: int) -> CNN:
    """A copy of the pretrained CNN with a new head for ``classes`` (seeded, as for the ViT)."""
    out = copy.deepcopy(cnn)
    with torch.random.fork_rng():
        torch.manual_seed(init_seed)
        out.head = nn.Linear(cnn.head.in_features, classes)
    return out.eval().requires_grad_(False)


def features(cnn: CNN, images: torch.Tensor, batch: int = 512) -> torch.Tensor:
    cnn.eval()
    with torch.no_grad():
        return torch.cat([cnn.features(images[i:i + batch]) for i in range(0, len(images), batch)])


@dataclass
class CNNBackbone:
    state: dict
    spec: dict
    val_acc: float
    seconds: float
    history: list

    def model(self) -> CNN:
        cnn = CNN(CNNSpec(**self.spec).widths)
        cnn.load_state_dict(self.state)
        return cnn.eval().requires_grad_(False)


def pretrain(spec: CNNSpec, seed: int, device=None) -> CNNBackbone:
    """Supervised pretraining on MNIST-5k with the ViT's recipe (AdamW, one-cycle, random shifts),
    on ``device`` (default: cuda when present), as ``pretrain.pretrain``."""
    dev = resolve(device)
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    task = data.mnist5k()
    x, y = task.x_train, task.y_train
    cnn = CNN(spec.widths).to(dev)
    history, seconds = one_cycle(cnn, list(cnn.parameters()), len(y), spec, g,
                                 lambda idx: F.cross_entropy(cnn(shift(x[idx], spec.shift, g).to(dev)), y[idx].to(dev)),
                                 lambda: accuracy(cnn, task.x_test, task.y_test))
    return CNNBackbone({k: v.detach().cpu().clone() for k, v in cnn.state_dict().items()}, asdict(spec),
                       history[-1]["val_acc"], seconds, history)


def get_backbone(spec: CNNSpec, seed: int = 0, cache: RunCache | None = None) -> tuple[CNNBackbone, bool]:
    """(backbone, cached): from the run cache, pretrained on a miss."""
    cache = cache or RunCache("taft")
    return cache.get_or_make("cnn_backbone", _key_parts(spec, seed), lambda: pretrain(spec, seed), code=[__name__])


def backbone_key(spec: CNNSpec, seed: int, cache: RunCache) -> str:
    """The CNN backbone's cache key, carried by every fine-tune trained from it."""
    return cache.key(_key_parts(spec, seed), code=[__name__])


def _key_parts(spec, seed: int) -> dict:
    """What a backbone's cache key holds besides its code (``get_backbone`` and ``backbone_key`` alike)."""
    return {"spec": asdict(spec), "seed": seed}
