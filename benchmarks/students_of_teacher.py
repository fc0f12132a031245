"""MPC-attention chapter: the five Table 4 students of one task and seed distilled one after another
("apart", ``train.distill`` each) and in one pass over the batches ("group", ``train.distill_group``:
each batch's teacher forward computed once), in this process on one torch thread, as a notebook's
worker runs them. Prints both wall times and their ratio, measured in one run.

Settings: the ``ci`` profile's task settings (d_model 64, 2 layers, 48 tokens, batch 64) with fewer
training examples (``N_TRAIN``; both stages, one epoch each): the work per step is the ci run's.
The teacher is trained once, untimed. "apart" and "group" follow each other within seconds, so a
shared machine's load affects them alike, but not exactly.

Usage: .venv/bin/python benchmarks/students_of_teacher.py [--task mrreg] [--n-train 1280]
"""

import argparse
import time
from dataclasses import replace

import torch

from privtrans.book import profiles
from privtrans.mpc_attention import data
from privtrans.mpc_attention import experiments
from privtrans.mpc_attention import train


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="mrreg", choices=data.TASKS)
    ap.add_argument("--n-train", type=int, default=1280)
    a = ap.parse_args()
    torch.set_num_threads(1)
    s = profiles.settings("mpc_attention", "table4_5_tasks", "ci")
    combos = [tuple(c) for c in s["combos"]]
    settings = experiments.Settings.from_cfg(s["tasks"])
    task = experiments.load_task(a.task, settings.teacher, 0)
    n = a.n_train
    task = replace(task, train=data.Split(task.train.ids[:n], task.train.mask[:n], task.train.types[:n],
                                          task.train.y[:n]))
    teacher, _ = train.train_teacher(task, experiments.model_config(task, settings.teacher), 1, seed=0)
    kw = dict(epochs1=1, epochs2=1, seed=0)

    def students():
        return [teacher.converted(att, act, (1.2, 0.4) if "freediv" in att else None) for att, act in combos]

    t0 = time.perf_counter()
    for st in students():
        train.distill(teacher, st, task, **kw)
    apart = time.perf_counter() - t0
    t0 = time.perf_counter()
    train.distill_group(teacher, students(), task, **kw)
    group = time.perf_counter() - t0
    print(f"task {a.task}, {len(combos)} students, {n} training examples, 1 + 1 epochs, one thread")
    print(f"apart {apart:.1f} s, group {group:.1f} s, group / apart = {group / apart:.2f}")


if __name__ == "__main__":
    main()
