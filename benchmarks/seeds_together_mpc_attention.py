"""MPC-attention chapter, issue 21: the teacher fine-tune and the two-stage distillation of a
converted student (2Quad-freeDiv + Quad) timed for 1 seed ("one"), for k seeds one after another
("apart", ``train.train_teacher`` / ``train.distill``) and for k seeds as one vectorised model
("together", ``train.train_teachers_together`` / ``train.distill_together``), in this process on
one torch thread.

Settings: the ``ci`` profile of ``tables2_6_schemes`` (task mr2: d_model 64, 2 layers, 48 tokens,
batch 64, vocabulary of about 5 400 words), with fewer training and dev examples (``N_TRAIN``,
``N_DEV``, in the ci proportion) and one epoch per loop (both stages for the distillation): the work
per step is the ci run's, there are only fewer steps. Each loop runs once
untimed first (warm-up). The machine may be shared: "one", "apart" and "together" follow each other
within seconds, so load affects them alike, but not exactly.

``floor`` (see ``seeds_together.py``): one seed's run on its training and dev examples repeated k
times at k × the batch.

Usage: .venv/bin/python benchmarks/seeds_together_mpc_attention.py [--k 5]
"""

import argparse
import inspect
import time
from dataclasses import replace

import torch

from privtrans.book import profiles
from privtrans.mpc_attention import attention as A
from privtrans.mpc_attention import data
from privtrans.mpc_attention import experiments as X
from privtrans.mpc_attention import train

N_TRAIN, N_DEV = 640, 160  # 10 steps of 64 per epoch; dev cut in the same proportion (ci: 4 000, 1 000)
COMBO = ("2quad_freediv", "quad")


def _repeat(task, k: int):
    """The task with its training and dev examples repeated k times (the floor's data)."""
    def rep(sp):
        return data.Split(sp.ids.repeat(k, 1), sp.mask.repeat(k, 1), sp.types.repeat(k, 1),
                          sp.y.repeat(k, *([1] * (sp.y.dim() - 1))))

    return replace(task, train=rep(task.train), dev=rep(task.dev))


def _batch(fn) -> int:
    """The batch ``fn`` trains at when not told (what "one" runs at): the floor takes k times it."""
    return inspect.signature(fn).parameters["batch"].default


def _cut(task):
    def cut(sp, n):
        return data.Split(sp.ids[:n], sp.mask[:n], sp.types[:n], sp.y[:n])

    return replace(task, train=cut(task.train, N_TRAIN), dev=cut(task.dev, N_DEV))


_CPU = {}


def _clock(fn):
    """Wall seconds (and this process's CPU seconds, kept in ``_CPU`` by call order: on a loaded
    machine the CPU time of the one torch thread is the steadier of the two)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    _CPU[len(_CPU)] = time.process_time() - c0
    return time.perf_counter() - t0, out


def measure(k: int = 5) -> list[dict]:
    torch.set_num_threads(1)
    s = profiles.settings("mpc_attention", "tables2_6_schemes", "ci")["tasks"]
    seeds = list(range(k))
    # the ci tasks (vocabulary of the 4 000-example split), then cut: the same model, fewer steps
    tasks = [_cut(X.load_task("mr2", s, sd)) for sd in seeds]
    cfg = X.model_config(tasks[0], s)
    lr = s["teacher_lr"]
    wide = _repeat(tasks[0], k)

    def teach_one(i):
        return train.train_teacher(tasks[i], cfg, 1, lr=lr, seed=seeds[i])[0]

    def teach_together():
        return train.train_teachers_together(tasks, cfg, 1, lr=lr, seeds=seeds)[0]

    def teach_floor():
        return train.train_teacher(wide, cfg, 1, lr=lr, batch=_batch(train.train_teacher) * k, seed=seeds[0])[0]

    teach_one(0), teach_together()  # warm-up
    _CPU.clear()
    one, _ = _clock(lambda: teach_one(0))
    apart, teachers = _clock(lambda: [teach_one(i) for i in seeds])
    together, _ = _clock(teach_together)
    floor, _ = _clock(teach_floor)
    rows = [{"chapter": "mpc_attention", "loop": "teacher fine-tune", "one": one, "apart": apart, "together": together,
             "floor": floor, "one_cpu": _CPU[0], "apart_cpu": _CPU[1], "together_cpu": _CPU[2], "floor_cpu": _CPU[3]}]

    const = A.PAPER_FITS["2quad"]

    def students():
        return [t.converted(*COMBO, const) for t in teachers]

    kw = dict(epochs1=1, epochs2=1, lr1=s["lr1"], lr2=s["lr2"])

    def distil_one(i):
        return train.distill(teachers[i], students()[i], tasks[i], seed=seeds[i], **kw)

    def distil_together():
        return train.distill_together(teachers, students(), tasks, seeds=seeds, **kw)

    def distil_floor():
        return train.distill(teachers[0], students()[0], wide, seed=seeds[0], batch=_batch(train.distill) * k, **kw)

    distil_one(0), distil_together()  # warm-up
    _CPU.clear()
    one, _ = _clock(lambda: distil_one(0))
    apart, _ = _clock(lambda: [distil_one(i) for i in seeds])
    together, _ = _clock(distil_together)
    floor, _ = _clock(distil_floor)
    rows.append({"chapter": "mpc_attention", "loop": "two-stage distillation", "one": one, "apart": apart,
                 "together": together, "floor": floor,
                 "one_cpu": _CPU[0], "apart_cpu": _CPU[1], "together_cpu": _CPU[2], "floor_cpu": _CPU[3]})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    print(f"k = {args.k} seeds; seconds on one torch thread ({N_TRAIN} training and {N_DEV} dev examples "
          "of ci's mr2, 1 epoch per loop)")
    for r in measure(args.k):
        for sfx, what in (("", "wall"), ("_cpu", "cpu ")):
            one, apart, together, floor = (r[c + sfx] for c in ("one", "apart", "together", "floor"))
            print(f"{r['loop']:24s} {what} one {one:7.2f}  apart {apart:7.2f}  together {together:7.2f}  "
                  f"floor {floor:7.2f}  together/one {together / one:5.2f}  floor/one {floor / one:5.2f}  "
                  f"apart/together {apart / together:5.2f}")


if __name__ == "__main__":
    main()
