"""Teacher training and the two-stage distillation of a converted student (paper Sec. 3.3, 5.1).

The recipe is MPCFormer's ``task_distill.py`` (research notes §2.5), scaled to a CPU:

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
from dataclasses import replace
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats
from torch import nn
from torch.func import vmap

from privtrans.book import dry
from privtrans.book.device import placed, resolve
from privtrans.shared import seeds_together as T

from .encoder import EncoderConfig, TinyEncoder
from .encoder import forward as encoder_forward


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


# ---- k seeds of one configuration as one vectorised model (issue 21) ---------------------------
#
# ``train_teachers_together`` and ``distill_together`` give every seed what ``train_teacher`` and
# ``distill`` give it (privtrans.shared.seeds_together explains why the stack is exact): each seed
# keeps its own data (``tasks[i]``), its own batch order (the generator seeds above), its own
# initialisation, AdamW state and grad-norm clip; the stack's loss is the sum of the seeds' losses.
# The encoder has no dropout, so the equality is to float tolerance, not only in distribution.
#
# Seeds whose training splits differ in length (the pair task: pairs closer than MIN_GAP are
# dropped, so each draw keeps a different number) are stacked too. Each seed's steps of a stage run
# as one sequence over its epochs; at stacked step j every seed takes its own j-th step, its batch
# padded to the longest of that step with examples of weight 0 (the loss is the mean over the
# seed's real examples, so a padded example adds nothing). A seed whose sequence is shorter has run
# out only at the end of the stage: its parameters are kept at its last real step and put back when
# the stage ends (the dummy steps after it move only what is then discarded).
#
# Cost: at ci (batch 64 x 48 tokens, d_model 64) a step is arithmetic, not per-operation overhead
# (matmuls and element-wise ops on 10^5-10^6 entries), so k seeds together cost about k single runs
# in CPU time (benchmarks/seeds_together_mpc_attention.py); the gain is at small sizes (smoke).


class _Seeded(nn.Module):
    """One seed's encoder with its f(n) constants as buffers: ``cfg.const`` is a Python constant of
    the config, which a ``Stack`` would take from seed 0's copy; as buffers every seed keeps its own."""

    def __init__(self, enc: TinyEncoder):
        super().__init__()
        self.enc = enc
        self.has_const = enc.cfg.const is not None
        if self.has_const:
            a, b = enc.cfg.const
            self.register_buffer("const_a", torch.as_tensor(a, dtype=torch.float32))
            self.register_buffer("const_b", torch.as_tensor(b, dtype=torch.float32))

    def forward(self, ids, mask01, types):
        cfg = replace(self.enc.cfg, const=(self.const_a, self.const_b)) if self.has_const else self.enc.cfg
        return encoder_forward(self.enc.params(), self.enc.embed(ids, types), mask01, cfg)


def _stack(models, device) -> T.Stack:
    """The models (moved to ``device`` in place) as one stack."""
    cfgs = {tuple((k, v) for k, v in m.cfg.to_dict().items() if k != "const") for m in models}
    if len(cfgs) != 1:
        raise ValueError(f"seeds trained together need one architecture, got {len(cfgs)} configs")
    return T.Stack([_Seeded(m).to(device) for m in models])


def _wmean(per_example, w):
    """Mean over the real examples (weight 1) of a batch padded with weight-0 examples."""
    return (per_example * w).sum() / w.sum().clamp(min=1.0)


def _per_example_task(logits, y, n_out):
    return (logits[:, 0] - y).square() if n_out == 1 else F.cross_entropy(logits, y, reduction="none")


def _per_example_mse(s, t):
    return (s - t).square().flatten(1).mean(1)


def _teacher_loss_one(out, y, w, n_out):
    return _wmean(_per_example_task(out["logits"], y, n_out), w)


def _stage1_loss_one(s_out, t_out, mask, w):
    """``stage1_loss`` of one seed, as a weighted mean over its real examples."""
    km = mask[:, None, None, :]
    per = sum(_per_example_mse(s * km, t * km) for s, t in zip(s_out["scores"], t_out["scores"]))
    per = per + sum(_per_example_mse(s, t) for s, t in zip(s_out["hidden"], t_out["hidden"]))
    return _wmean(per, w)


def _stage2_loss_one(s_out, t_out, y, w, n_out):
    """``stage2_loss`` of one seed (temperature 1), as a weighted mean over its real examples."""
    if n_out == 1:
        return _wmean((s_out["logits"][:, 0] - y).square(), w)
    t = F.softmax(t_out["logits"], -1)
    return _wmean(-(t * F.log_softmax(s_out["logits"], -1)).sum(-1), w)


def _seed_steps(split, batch: int, generator_seeds: list[int]) -> list[torch.Tensor]:
    """One seed's index batches of a stage: ``Split.batches(shuffle=True)`` for each epoch's seed."""
    out = []
    for g in generator_seeds:
        idx = torch.randperm(len(split), generator=torch.Generator().manual_seed(g))
        out += [idx[i:i + batch] for i in range(0, len(split), batch)]
    return out


class _Stacked:
    """Every seed's training split as (k, N_max, ...) tensors (shorter splits padded with row 0)."""

    def __init__(self, splits, device="cpu"):
        n = max(len(s) for s in splits)

        def pad(t):
            return torch.cat([t, t[:1].expand(n - len(t), *t.shape[1:])]) if len(t) < n else t

        self.ids, self.mask, self.types, self.y = (torch.stack([pad(getattr(s, f)) for s in splits]).to(device)
                                                   for f in ("ids", "mask", "types", "y"))

    def batch(self, per_seed: list[torch.Tensor | None]):
        """(ids, mask, types, y, w), each (k, B, ...), B the longest of the seeds' batches; a seed
        with a shorter batch (or none) is padded with its example 0 at weight 0."""
        b = max(len(p) for p in per_seed if p is not None)
        idx = torch.zeros(len(per_seed), b, dtype=torch.long)
        w = torch.zeros(len(per_seed), b)
        for i, p in enumerate(per_seed):
            if p is not None:
                idx[i, :len(p)], w[i, :len(p)] = p, 1.0
        dev = self.ids.device
        idx, w, row = idx.to(dev), w.to(dev), torch.arange(len(per_seed), device=dev)[:, None]
        return self.ids[row, idx], self.mask[row, idx], self.types[row, idx], self.y[row, idx], w


def _run_stage(st: T.Stack, data: _Stacked, steps: list[list[torch.Tensor]], lr: float, loss) -> None:
    """AdamW (weight decay 0.01) + per-seed clip 1.0 over every seed's own step sequence.
    ``loss(out, ids, mask, types, y, w) -> (k,)`` per-seed losses of one stacked batch."""
    opt = torch.optim.AdamW(st.parameters(), lr=lr, weight_decay=0.01)
    n_steps = max(len(s) for s in steps)
    kept = {}
    for j in dry.loop(range(n_steps), "steps of seeds together"):
        ids, mask, types, y, w = data.batch([s[j] if j < len(s) else None for s in steps])
        out = st(ids, mask, types)
        total = loss(out, ids, mask, types, y, w).sum()
        opt.zero_grad()
        total.backward()
        T.clip_grad_norm_per_seed(st.parameters(), 1.0)
        opt.step()
        for i, s in enumerate(steps):
            if len(s) == j + 1 and j + 1 < n_steps:  # seed i is done: keep its parameters
                kept[i] = {n: p[i].detach().clone() for n, p in st.params.items() if p.requires_grad}
    with torch.no_grad():
        for i, params in kept.items():
            for n, v in params.items():
                st.params[n][i] = v


def train_teachers_together(tasks, cfg: EncoderConfig, epochs: int, lr: float = 1e-3, batch: int = 64,
                            seeds: list[int] = (0,), device=None) -> tuple[list[TinyEncoder], float]:
    """``train_teacher(tasks[i], cfg, epochs, lr, batch, seeds[i])`` for every i as one vectorised
    model; returns (models on the CPU, seconds of the whole group)."""
    if len(tasks) != len(seeds):
        raise ValueError(f"need one task per seed, got {len(tasks)} tasks for {len(seeds)} seeds")
    dev = resolve(device)
    models = []
    for sd in seeds:
        torch.manual_seed(sd)
        models.append(TinyEncoder(cfg))
    st = _stack(models, dev)
    data = _Stacked([t.train for t in tasks], dev)
    t0 = time.perf_counter()
    st.train()
    steps = [_seed_steps(t.train, batch, [sd * 1000 + ep for ep in range(epochs)]) for t, sd in zip(tasks, seeds)]
    one = vmap(partial(_teacher_loss_one, n_out=cfg.n_out))
    _run_stage(st, data, steps, lr, lambda out, ids, mask, types, y, w: one(out, y, w))
    st.write_back()
    secs = time.perf_counter() - t0
    return [m.cpu().eval() for m in models], secs


def distill_together(teachers, students, tasks, epochs1: int, epochs2: int, lr1: float = 1e-3,
                     lr2: float = 2e-4, batch: int = 64, seeds: list[int] = (0,), device=None) -> list[dict]:
    """``distill(teachers[i], students[i], tasks[i], ..., seed=seeds[i])`` for every i as one
    vectorised model (students trained in place, the teachers' forward stacked under no_grad).
    Returns each seed's dict as ``distill`` does; "seconds" is the group's wall time divided by the
    number of seeds (``group_seconds`` the whole, ``seeds_together`` the number). Trained on
    ``device``, handed back on the CPU."""
    k = len(seeds)
    if not len(teachers) == len(students) == len(tasks) == k:
        raise ValueError("need one teacher, student and task per seed")
    n_out = teachers[0].cfg.n_out
    for m in teachers:
        m.eval()
    dev = resolve(device)
    tst, sst = _stack(teachers, dev).eval(), _stack(students, dev)
    data = _Stacked([t.train for t in tasks], dev)
    out = [{} for _ in range(k)]
    s1 = vmap(_stage1_loss_one)
    s2 = vmap(partial(_stage2_loss_one, n_out=n_out))
    t0 = time.perf_counter()
    for stage, (epochs, lr) in enumerate(((epochs1, lr1), (epochs2, lr2)), start=1):
        steps = [_seed_steps(t.train, batch, [sd * 1000 + 100 * stage + ep for ep in range(epochs)])
                 for t, sd in zip(tasks, seeds)]

        def loss(s_out, ids, mask, types, y, w, stage=stage):
            with torch.no_grad():
                t_out = tst(ids, mask, types)
            return s1(s_out, t_out, mask, w) if stage == 1 else s2(s_out, t_out, y, w)

        sst.train()
        _run_stage(sst, data, steps, lr, loss)
        sst.write_back()
        for i, (m, t) in enumerate(zip(students, tasks)):
            out[i][f"after_stage{stage}"] = metric(m, t.dev, dev)
    secs = time.perf_counter() - t0
    for m in (*teachers, *students):
        m.cpu()
    for o, t in zip(out, tasks):
        o.update(seconds=secs / k, group_seconds=secs, seeds_together=k,
                 examples_x_epochs=len(t.train) * (epochs1 + epochs2))
    return out
