"""The two private alternatives the paper compares NoisyHead with.

- DP-ridge (Remark 3.1, App. B, Table 1): solve the ridge problem on clipped/projected data once
  and add N(0, C^2 G^2 log(1.25/delta) / (lam^2 N^2 eps^2) I). Implemented **as written**. The
  paper calls CG/(lam N) the L2 sensitivity "with high probability": it is not a worst-case bound,
  and the variance lacks the factor 2 of the classical Gaussian mechanism, so this is heuristic DP.
- DP-SGD (§6.4, Fig. 5) with opacus: nn.Linear(D^2, 1) on vec Zt, loss (1/2) mean squared error,
  SGD(lr=eta0, weight_decay=2 lam) (the same objective and step as NoisyHead), Poisson batches of
  expected size 256, per-sample clipping at G(C + RG) (an upper bound on every per-sample
  gradient, so clipping is inactive), noise multiplier from an opacus accountant for T steps at
  q = 256/N, and Pi_R after every step. Opacus certifies add/remove-one DP; the paper's notion is
  replace-one, which ``replace_one=True`` covers conservatively by doubling the noise multiplier.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..book import dry
from . import accounting
from .constants import Hyper
from .task import Stats, expected_feature_norm2, ridge


def dp_ridge_std(hp: Hyper, eps: float, delta: float) -> float:
    """App. B: s.d. of W^dagger = C G sqrt(log(1.25/delta)) / (lam N eps)."""
    if eps <= 0 or not 0 < delta < 1:
        raise ValueError(f"need eps > 0 and 0 < delta < 1; got {eps}, {delta}")
    return hp.C * hp.G * math.sqrt(math.log(1.25 / delta)) / (hp.lam * hp.N * eps)


def dp_ridge_noise_excess(hp: Hyper, eps: float, delta: float) -> float:
    """The excess risk that DP-ridge's noise alone adds, in closed form: E<W, Z>^2 = s^2 E||Z||^2 with
    s = ``dp_ridge_std`` (the clipping bias of the ridge on projected data comes on top)."""
    return dp_ridge_std(hp, eps, delta) ** 2 * expected_feature_norm2(hp.L, hp.D)


def dp_ridge(st_private: Stats, hp: Hyper, eps, delta: float, rng: np.random.Generator) -> np.ndarray:
    """Gamma^dagger + W^dagger for each eps (one row per eps, one shared standard-normal draw)."""
    base = ridge(st_private, hp.lam)
    xi = rng.standard_normal(base.shape)
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    return base + np.array([dp_ridge_std(hp, e, delta) for e in eps])[:, None] * xi


def dpsgd_steps(hp: Hyper, batch_size: int = 256, epochs: bool = False) -> int:
    """How many DP-SGD steps "T" means: T steps (our reading), or T epochs of ceil(N / batch_size)
    steps each. The paper says "identical iteration counts T" and no more, so Figure 5 brackets both."""
    return int(hp.T) * (math.ceil(hp.N / batch_size) if epochs else 1)


def dpsgd_clip(hp: Hyper, clip: str = "sigma") -> float:
    """DP-SGD's max_grad_norm: G(C + RG) = sigma/2, which bounds every per-sample gradient (clipping
    never binds), or the response clip C (the paper's "identical clipping constants", read literally)."""
    if clip == "sigma":
        return hp.G * (hp.C + hp.R * hp.G)
    if clip == "C":
        return hp.C
    raise ValueError(f"unknown DP-SGD clip {clip!r}: allowed values are 'sigma', 'C'")


def dpsgd_noise_multiplier(hp: Hyper, eps: float, delta: float, batch_size: int = 256,
                           accountant: str = "prv", replace_one: bool = False, epochs: bool = False) -> float:
    """z for the DP-SGD steps (``dpsgd_steps``) at sample rate batch_size/N; doubled for replace-one adjacency."""
    q = min(1.0, batch_size / hp.N)
    z = accounting.noise_multiplier(accountant, float(eps), float(delta), dpsgd_steps(hp, batch_size, epochs), q)
    return 2.0 * z if replace_one else z


def dpsgd(Zt: np.ndarray, yt: np.ndarray, hp: Hyper, noise_multiplier: float, gamma0: np.ndarray,
          seed: int, delta: float = 1e-5, batch_size: int = 256, accountant: str = "prv",
          device=None, epochs: bool = False, clip: str = "sigma") -> tuple[np.ndarray, float]:
    """``dpsgd_steps`` steps of opacus DP-SGD on (1/2N) sum (<Gamma, Zt_k> - y_k)^2 + lam |Gamma|^2,
    clipped at ``dpsgd_clip``.

    Returns (Gamma after T steps, epsilon that opacus' accountant reports for the run at delta).
    """
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    from privtrans.book.device import pick_device

    if noise_multiplier <= 0:
        raise ValueError(f"noise multiplier must be > 0, got {noise_multiplier}")
    device = device or pick_device()
    torch.manual_seed(seed)
    N, d = Zt.shape
    data = TensorDataset(torch.as_tensor(Zt, dtype=torch.float32), torch.as_tensor(yt, dtype=torch.float32))
    model = torch.nn.Linear(d, 1, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.as_tensor(gamma0, dtype=torch.float32)[None, :])
    model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=hp.eta0, weight_decay=2 * hp.lam)
    loader = DataLoader(data, batch_size=min(batch_size, N))
    engine = PrivacyEngine(accountant=accountant, secure_mode=False)
    model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                             noise_multiplier=noise_multiplier,
                                             max_grad_norm=dpsgd_clip(hp, clip),
                                             poisson_sampling=True)
    with warnings.catch_warnings():   # opacus' hooks on an input that needs no grad: harmless, noisy
        warnings.filterwarnings("ignore", message="Full backward hook")
        steps, total = 0, dpsgd_steps(hp, batch_size, epochs)
        gate = dry.loop(range(total), "DP-SGD steps")  # yields every step outside a dry run
        while steps < total:
            for xb, yb in loader:
                if steps >= total:
                    break
                if next(gate, None) is None:  # only in a dry run, once its kept steps are done
                    total = steps
                    break
                opt.zero_grad(set_to_none=True)
                xb, yb = xb.to(device), yb.to(device)
                if len(xb) == 0:   # an empty Poisson batch still costs a (noise-only) step
                    loss = (model(torch.zeros(1, d, device=device)) * 0).sum()
                else:
                    loss = 0.5 * torch.mean((model(xb).squeeze(-1) - yb) ** 2)
                loss.backward()
                opt.step()
                with torch.no_grad():
                    w = model._module.weight
                    n = torch.linalg.norm(w)
                    if n > hp.R:
                        w.mul_(hp.R / n)
                steps += 1
        gate.close()
    with torch.no_grad():
        gamma = model._module.weight.detach().cpu().numpy().astype(float)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = {"eps_error": 1e-3} if accountant == "prv" else {}
        spent = float(engine.accountant.get_epsilon(delta=delta, **kw))
    return gamma, spent
