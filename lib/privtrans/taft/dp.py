"""DP fine-tuning (Table 3): full-batch DP gradient descent on the tangent Δ or the original weights.

The paper gives: cross-entropy, 50 epochs, gradients "aggregated over the entire dataset" (so 50
full-batch steps, sampling rate q = 1), no learning-rate decay, prediction from the JVP term only
for the tangent model, ε ∈ {1, 3, 8}. It does not give δ, the clip norm, σ, the optimiser, the
learning rate or the accountant; ours (stated on the chapter page): δ = 1e-5, Abadi clipping at
C = 1, σ from opacus's RDP accountant for q = 1 and T steps (``privtrans.shared.dp.accounting``),
Adam on the noised mean gradient (post-processing, no privacy cost).

Nothing computed from the private data outside the noised gradient is returned: a statistic such as
the fraction of per-sample gradients that were clipped would be a release that the ε accounting does
not cover, so it is not computed (the chapter page says so).

Per-sample gradient norms and the clipped sum come from the book's Phantom clipper
(``privtrans.shared.dp.phantom``, the DPFormer chapter's mechanism): every trainable tensor of the
tangent and the plain model lives in a plain ``nn.Linear`` / ``nn.LayerNorm`` leaf, whose per-sample
norms it computes exactly from small Gram matrices without building B per-sample gradients, and it
checks on the first backward that the recorded leaves rebuild autograd's gradient. A step equals the
clipped sum of torch.func's per-sample gradients (tests/test_taft_dp.py). Opacus's hooks build every
per-sample gradient: a Table 3 run on all weights took 2.9-3.8× as long with them (measured).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from privtrans.book import dry
from privtrans.book.device import resolve
from privtrans.shared.dp.accounting import opacus_noise_multiplier
from privtrans.shared.dp.clipping import clip_factors
from privtrans.shared.dp.phantom import PhantomClipper

from .finetune import FitSpec, accuracy, make_model

ACCOUNTANT = "rdp"


@dataclass(frozen=True)
class DPSpec:
    epsilon: float
    delta: float = 1e-5
    steps: int = 50  # full-batch steps = epochs
    clip: float = 1.0
    lr: float = 1e-2
    chunk: int = 256  # samples per per-sample-gradient pass (memory, not privacy)

    def noise_multiplier(self) -> float:
        """σ for (ε, δ) after ``steps`` full-batch steps (q = 1) by opacus's RDP accountant."""
        return opacus_noise_multiplier(self.epsilon, self.delta, sample_rate=1.0, steps=self.steps,
                                       accountant=ACCOUNTANT)


@dataclass
class DPResult:
    accuracy: float
    sigma: float
    seconds: float
    spec: dict


def dp_fit(model, x, y, spec: DPSpec, seed: int, sigma: float | None = None, device=None) -> float:
    """Full-batch DP-GD with Adam: each step clips every per-sample gradient to ``spec.clip``, sums,
    adds N(0, σ²C²) and divides by n. Returns σ (a function of ε, δ and the steps only); the only
    thing of the private data it releases is the trained model. Trains on ``device`` (default: cuda
    when present; the noise is drawn on the CPU, the same on every device) and leaves the model on
    the CPU."""
    dev = resolve(device)
    model.to(dev)

    sigma = spec.noise_multiplier() if sigma is None else sigma
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=spec.lr)
    model.train()
    clipper = PhantomClipper(model)  # validates its norms against autograd on the first chunk
    gen = torch.Generator().manual_seed(seed)
    n = len(y)
    for _ in dry.loop(range(spec.steps), "DP steps"):
        total = [torch.zeros_like(p) for p in params]
        for i in dry.loop(range(0, n, spec.chunk), "DP chunks"):
            with clipper.capture():
                losses = F.cross_entropy(model(x[i:i + spec.chunk].to(dev)), y[i:i + spec.chunk].to(dev),
                                         reduction="none")
            norms = clipper.backward(losses)
            clipper.write_clipped_sum(clip_factors(norms, spec.clip, "abadi"))  # p.grad = Σ_i c_i g_i
            for t, p in zip(total, params):
                t += p.grad
                p.grad = None
        for t, p in zip(total, params):
            noise = torch.normal(0.0, sigma * spec.clip, t.shape, generator=gen)
            p.grad = (t + noise.to(dev)) / n
        opt.step()
    model.cpu().eval()
    return sigma


def fit_spec(method: str, regime: str, pt: bool = True) -> FitSpec:
    """The trained part of one Table 3 cell: the last block and the head (tuned = 1), or for FC the
    head alone (tuned = 0), which then reads the features after every block, as FC does without DP
    (``FitSpec`` sets FC's tuned to 0). The caller's features must be cut at depth − tuned."""
    return FitSpec("fc" if regime == "head" and method == "fc" else method, tuned=1, loss="ce", pt=pt, regime=regime)


def privatised_parameters(vit, method: str, regime: str, classes: int) -> int:
    """How many parameters one Table 3 cell trains under DP: the noise DP-SGD adds grows with their
    number (its norm as the square root), so this is the scale a claim about noise degrading the
    whole block is read at (the paper's ViT-L/16 block has 12·1024² ≈ 12.6 M weights)."""
    model = make_model(vit, fit_spec(method, regime), classes, init_seed=0, output="jvp")
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def run(vit, x, y, xt, yt, classes: int, method: str, regime: str, spec: DPSpec, seed: int,
        pt: bool = True) -> DPResult:
    """One cell of Table 3: ``method`` 'taft' (tangent Δ, JVP-only prediction) or 'nlft' (the
    original weights) in ``regime`` ('full', 'bitfit', 'ln', 'head'), or 'fc' in 'head'; ``x``, ``xt``:
    the features after depth − ``fit_spec(method, regime).tuned`` blocks."""
    trained = fit_spec(method, regime, pt)
    torch.manual_seed(seed)
    model = make_model(vit, trained, classes, init_seed=seed, output="jvp")
    t0 = time.perf_counter()
    sigma = dp_fit(model, x, y, spec, seed)
    return DPResult(accuracy(model, xt, yt), sigma, time.perf_counter() - t0,
                    dict(asdict(spec), method=method, regime=regime, pt=pt, seed=seed))
