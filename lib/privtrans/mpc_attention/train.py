"""Teacher training and the two-stage distillation of a converted student (paper Sec. 3.3, 5.1).

The recipe is MPCFormer's ``task_distill.py`` (research notes §2.5), scaled to a CPU:

- stage 1: sum over layers of MSE(student scores, teacher scores) with masked keys zeroed, plus
  sum over the L+1 hidden states of MSE (paper eq. 8); constant learning rate;
- stage 2: soft cross-entropy on logits at temperature 1 (eq. 9); for regression, MSE to the gold
  targets (as MPCFormer's code does).
The student starts from the teacher's weights. Deviations: AdamW with a global grad-norm clip of
1.0 (MPCFormer: BertAdam, per-parameter clip); epochs and learning rates come from the profile;
the last epoch's model is kept (MPCFormer keeps the best dev checkpoint, an optimistic choice).
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats

from .encoder import EncoderConfig, TinyEncoder


def _loss_task(logits, y, n_out):
    return F.mse_loss(logits[:, 0], y) if n_out == 1 else F.cross_entropy(logits, y)


def train_teacher(task, cfg: EncoderConfig, epochs: int, lr: float = 1e-3, batch: int = 64,
                  seed: int = 0, progress=None) -> tuple[TinyEncoder, float]:
    """Fine-tune a fresh encoder (Softmax + GeLU) on the task; returns (model, seconds)."""
    torch.manual_seed(seed)
    model = TinyEncoder(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    t0 = time.perf_counter()
    for ep in range(epochs):
        model.train()
        for ids, mask, types, y in task.train.batches(batch, shuffle=True, seed=seed * 1000 + ep):
            loss = _loss_task(model(ids, mask, types)["logits"], y, cfg.n_out)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        if progress:
            progress(ep)
    return model.eval(), time.perf_counter() - t0


@torch.no_grad()
def predict(model, split, batch: int = 256) -> torch.Tensor:
    model.eval()
    return torch.cat([model(ids, mask, types)["logits"] for ids, mask, types, _ in split.batches(batch)])


def metric(model, split) -> float:
    """Accuracy, or (Pearson + Spearman) / 2 for regression (the paper's STS-B number), in [0, 1]."""
    out = predict(model, split)
    if out.size(1) == 1:
        p, y = out[:, 0].numpy(), split.y.numpy()
        if np.std(p) == 0:
            return 0.0
        return float((stats.pearsonr(p, y)[0] + stats.spearmanr(p, y)[0]) / 2)
    return float((out.argmax(1) == split.y).float().mean())


def stage1_loss(s_out, t_out, mask):
    """Eq. 8: attention-score and hidden-state MSE, masked keys set to 0 in both (TinyBERT)."""
    km = mask[:, None, None, :]
    loss = sum(F.mse_loss(s * km, t * km) for s, t in zip(s_out["scores"], t_out["scores"]))
    return loss + sum(F.mse_loss(s, t) for s, t in zip(s_out["hidden"], t_out["hidden"]))


def stage2_loss(s_out, t_out, y, n_out, temperature: float = 1.0):
    """Eq. 9: soft cross-entropy to the teacher's logits (MSE to the targets for regression)."""
    if n_out == 1:
        return F.mse_loss(s_out["logits"][:, 0], y)
    t = F.softmax(t_out["logits"] / temperature, -1)
    return -(t * F.log_softmax(s_out["logits"] / temperature, -1)).sum(-1).mean()


def distill(teacher: TinyEncoder, student: TinyEncoder, task, epochs1: int, epochs2: int,
            lr1: float = 1e-3, lr2: float = 2e-4, batch: int = 64, seed: int = 0) -> dict:
    """Both stages in place on ``student``; returns the metric after each stage and the seconds."""
    teacher.eval()
    n_out = teacher.cfg.n_out
    out = {}
    t0 = time.perf_counter()
    for stage, (epochs, lr) in enumerate(((epochs1, lr1), (epochs2, lr2)), start=1):
        opt = torch.optim.AdamW(student.parameters(), lr=lr, weight_decay=0.01)
        for ep in range(epochs):
            student.train()
            for ids, mask, types, y in task.train.batches(batch, shuffle=True, seed=seed * 1000 + 100 * stage + ep):
                with torch.no_grad():
                    t_out = teacher(ids, mask, types)
                s_out = student(ids, mask, types)
                loss = stage1_loss(s_out, t_out, mask) if stage == 1 else stage2_loss(s_out, t_out, y, n_out)
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(student.parameters(), 1.0)
                opt.step()
        out[f"after_stage{stage}"] = metric(student, task.dev)
    out["seconds"] = time.perf_counter() - t0
    out["examples_x_epochs"] = len(task.train) * (epochs1 + epochs2)
    return out
