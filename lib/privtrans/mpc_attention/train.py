"""Teacher training and the two-stage distillation of a converted student (paper Sec. 3.3, 5.1).

The recipe is MPCFormer's ``task_distill.py`` (its repository's distillation script), scaled to a CPU:

- stage 1: sum over layers of MSE(student scores, teacher scores) with masked keys zeroed, plus
  sum over the L+1 hidden states of MSE (paper eq. 8); constant learning rate;
- stage 2: soft cross-entropy on logits at temperature 1 (eq. 9); for regression, MSE to the gold
  targets (as MPCFormer's code does).
The student starts from the teacher's weights. Deviations: AdamW with a global grad-norm clip of
1.0 (MPCFormer: BertAdam, per-parameter clip); epochs and learning rates come from the profile;
the last epoch's model is kept (MPCFormer keeps the best dev checkpoint, an optimistic choice).

Device: training runs on ``device`` (default ``book.device.pick_device()``: cuda when present, so
``paper``'s BERT-Base sizes need no code change); models are built on the CPU (the same initial
weights on every device) and handed back on the CPU, so what the cache stores loads anywhere.
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats
from torch import nn

from privtrans.book import dry
from privtrans.book.device import placed, resolve

from .encoder import EncoderConfig, TinyEncoder


def _to(device, batch):
    return [t.to(device) for t in batch]


def _loss_task(logits, y, n_out):
    return F.mse_loss(logits[:, 0], y) if n_out == 1 else F.cross_entropy(logits, y)


def train_teacher(task, cfg: EncoderConfig, epochs: int, lr: float = 1e-3, batch: int = 64,
                  seed: int = 0, progress=None, device=None) -> tuple[TinyEncoder, float]:
    """Fine-tune a fresh encoder (Softmax + GeLU) on the task; returns (model on the CPU, seconds)."""
    dev = resolve(device)
    torch.manual_seed(seed)
    model = TinyEncoder(cfg).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    t0 = time.perf_counter()
    for ep in dry.loop(range(epochs), "teacher epochs"):
        model.train()
        for ids, mask, types, y in dry.loop(task.train.batches(batch, shuffle=True, seed=seed * 1000 + ep),
                                            "teacher batches"):
            ids, mask, types, y = _to(dev, (ids, mask, types, y))
            loss = _loss_task(model(ids, mask, types)["logits"], y, cfg.n_out)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        if progress:
            progress(ep)
    secs = time.perf_counter() - t0
    return model.cpu().eval(), secs


@torch.no_grad()
def predict(model, split, batch: int = 256, device=None) -> torch.Tensor:
    """Logits of every example of ``split`` (on the CPU), computed on ``device`` (default: cuda when
    present); the model is put back where it was."""
    model.eval()
    with placed(model, device) as dev:
        return torch.cat([model(*_to(dev, (ids, mask, types)))["logits"].cpu() for ids, mask, types, _ in
                          dry.loop(split.batches(batch), "evaluation batches")])


def metric(model, split, device=None) -> float:
    """Accuracy, or (Pearson + Spearman) / 2 for regression (the paper's STS-B number), in [0, 1].
    (In a dry run ``predict`` covers only the first batch: the metric is that batch's.)"""
    out = predict(model, split, device=device)
    gold = split.y[:len(out)]  # all of it, except in a dry run
    if out.size(1) == 1:
        p, y = out[:, 0].numpy(), gold.numpy()
        if np.std(p) == 0:
            return 0.0
        return float((stats.pearsonr(p, y)[0] + stats.spearmanr(p, y)[0]) / 2)
    return float((out.argmax(1) == gold).float().mean())


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
            lr1: float = 1e-3, lr2: float = 2e-4, batch: int = 64, seed: int = 0, device=None) -> dict:
    """Both stages in place on ``student``; returns the metric after each stage and the seconds."""
    return distill_group(teacher, [student], task, epochs1, epochs2, lr1, lr2, batch, seed, device)[0]


def distill_group(teacher: TinyEncoder, students: list[TinyEncoder], task, epochs1: int, epochs2: int,
                  lr1: float = 1e-3, lr2: float = 2e-4, batch: int = 64, seed: int = 0,
                  device=None) -> list[dict]:
    """``distill(teacher, s, task, ...)`` for every ``s`` of ``students`` in one pass over the
    batches: the teacher's forward of a batch (a quarter of a student's step at ci) is computed once
    for all of them. Every student takes the steps it would take alone, in the same order (same
    batches; the encoder has no dropout and its teacher is frozen), so its weights equal a lone run's
    bit for bit (tests/test_mpc_attention_train.py). A student's ``seconds`` is what its lone run would
    spend: the teacher's forwards plus its own steps and evaluations. Teacher and students are
    trained on ``device`` and handed back on the CPU."""
    dev = resolve(device)
    teacher.to(dev).eval()
    for st in students:
        st.to(dev)
    n_out = teacher.cfg.n_out
    outs = [{} for _ in students]
    own = [0.0] * len(students)
    shared = 0.0
    for stage, (epochs, lr) in enumerate(((epochs1, lr1), (epochs2, lr2)), start=1):
        opts = [torch.optim.AdamW(st.parameters(), lr=lr, weight_decay=0.01) for st in students]
        for ep in dry.loop(range(epochs), f"distillation stage {stage} epochs"):
            for st in students:
                st.train()
            for ids, mask, types, y in dry.loop(
                    task.train.batches(batch, shuffle=True, seed=seed * 1000 + 100 * stage + ep),
                    f"distillation stage {stage} batches"):
                t0 = time.perf_counter()
                ids, mask, types, y = _to(dev, (ids, mask, types, y))
                with torch.no_grad():
                    t_out = teacher(ids, mask, types)
                shared += time.perf_counter() - t0
                for i, (st, opt) in enumerate(zip(students, opts)):
                    t0 = time.perf_counter()
                    s_out = st(ids, mask, types)
                    loss = stage1_loss(s_out, t_out, mask) if stage == 1 else stage2_loss(s_out, t_out, y, n_out)
                    opt.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(st.parameters(), 1.0)
                    opt.step()
                    own[i] += time.perf_counter() - t0
        for i, st in enumerate(students):
            t0 = time.perf_counter()
            outs[i][f"after_stage{stage}"] = metric(st, task.dev, dev)
            own[i] += time.perf_counter() - t0
    teacher.cpu()
    for st in students:
        st.cpu()
    for out, secs in zip(outs, own):
        out["seconds"] = shared + secs
        out["examples_x_epochs"] = len(task.train) * (epochs1 + epochs2)
    return outs
