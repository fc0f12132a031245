"""The chapter's runs, cached: a teacher per task with its fitted constants, and distilled students.

``converted(tasks, settings, seeds, combos)`` gives, for every task, the teacher and the distilled
students of every seed, training what the cache lacks on every core (``privtrans.book.workers``);
the chapter's accuracy claims compare them on paired seeds (``privtrans.book.paired``).
``teacher(task_name, settings, seed)`` trains (or reads from ``RunCache("mpc_attention")``) the
Softmax + GeLU teacher and fits f(n) on its training-split denominators: over all layers (the
paper) and per layer and head (its future work). Keys include the source of the training code.
"""

from __future__ import annotations

from functools import partial

import torch

from privtrans.book import workers
from privtrans.book.runcache import RunCache

from . import data, encoder, fit, train

CODE = ("privtrans.mpc_attention.attention", "privtrans.mpc_attention.encoder",
        "privtrans.mpc_attention.train", "privtrans.mpc_attention.data", "privtrans.mpc_attention.fit")


def load_task(name: str, s: dict, seed: int):
    return data.load(name, n_train=s.get("n_train"), n_dev=s.get("n_dev"), max_len=s["max_len"], seed=seed,
                     vocab_size=s.get("vocab_size", 8000))


def model_config(task, s: dict) -> encoder.EncoderConfig:
    m = s["model"]
    return encoder.EncoderConfig(vocab_size=len(task.vocab), max_len=task.max_len, n_out=task.n_out, **m)


def teacher(name: str, s: dict, seed: int) -> dict:
    """{"state", "cfg", "metric", "seconds", "const": {softmax, 2quad}, "const_per_head": {...},
    "denominators": {kind: (n, layer, head, value) arrays}} for task ``name``."""
    torch.set_num_threads(1)

    def make():
        task = load_task(name, s, seed)
        cfg = model_config(task, s)
        model, secs = train.train_teacher(task, cfg, s["teacher_epochs"], lr=s["teacher_lr"], seed=seed)
        batches = [b[:3] for b in task.train.batches(256)][: s.get("fit_batches", 8)]
        out = {"state": model.state_dict(), "cfg": cfg.to_dict(), "metric": train.metric(model, task.dev),
               "seconds": secs, "const": {}, "const_per_head": {}, "denominators": {}}
        for kind in ("softmax", "2quad"):
            d = fit.collect(model, batches, kind)
            out["denominators"][kind] = (d.n, d.layer, d.head, d.value)
            out["const"][kind] = fit.fit_all(d)
            out["const_per_head"][kind] = fit.fit_per_head(d)
        return out

    parts = {"task": name, "settings": s, "seed": seed}
    return RunCache("mpc_attention").get_or_make("teacher", parts, make, code=CODE)[0]


def teacher_model(t: dict) -> encoder.TinyEncoder:
    m = encoder.TinyEncoder(encoder.EncoderConfig(**t["cfg"]))
    m.load_state_dict(t["state"])
    return m.eval()


def student(name: str, s: dict, seed: int, attention: str, activation: str, per_head: bool = False) -> dict:
    """A converted student distilled from the cached teacher: metric before and after each stage."""
    torch.set_num_threads(1)
    t = teacher(name, s, seed)

    def make():
        task = load_task(name, s, seed)
        tm = teacher_model(t)
        base = {"softmax_freediv": "softmax", "2quad_freediv": "2quad"}.get(attention)
        const = None if base is None else (t["const_per_head"] if per_head else t["const"])[base]
        st = tm.converted(attention, activation, const)
        before = train.metric(st, task.dev)
        r = train.distill(tm, st, task, s["epochs1"], s["epochs2"], lr1=s["lr1"], lr2=s["lr2"], seed=seed)
        return {"before": before, **r, "state": st.state_dict(), "cfg": st.cfg.to_dict()}

    parts = {"task": name, "settings": s, "seed": seed, "attention": attention, "activation": activation,
             "per_head": per_head}
    return RunCache("mpc_attention").get_or_make("student", parts, make, code=CODE)[0]


def converted(tasks, s: dict, seeds: list[int], combos, per_head: bool = False, progress=None) -> dict:
    """{task: {"teachers": [teacher per seed], "students": {"att+act": [student per seed]}}}.

    Teachers first (every student distils from its seed's teacher), then the students, each phase
    on every core; the results are then read back from the cache in order."""
    workers.in_parallel([partial(teacher, t, s, sd) for t in tasks for sd in seeds], progress=progress)
    workers.in_parallel([partial(student, t, s, sd, a, f, per_head) for t in tasks for a, f in combos for sd in seeds],
                        progress=progress)
    return {t: {"teachers": [teacher(t, s, sd) for sd in seeds],
                "students": {f"{a}+{f}": [student(t, s, sd, a, f, per_head) for sd in seeds] for a, f in combos}}
            for t in tasks}


def secure_costs(t: dict, combos, length: int, reps: int = 1, timeout: float = 300) -> dict:
    """CrypTen 2PC forward of one input of ``length`` tokens for each (attention, activation).

    Cost does not depend on the weights (same shapes, same protocol), so every combination runs
    with the teacher's weights; the accuracy of each student is measured in plaintext, where the
    tests show the secure forward equals it. Returns {"att+act": meter summary}.
    """
    from privtrans.shared.mpc import runner

    from . import secure
    from .attention import FREEDIV

    cfgs = []
    for att, act in combos:
        c = dict(t["cfg"], attention=att, activation=act)
        c["const"] = t["const"][FREEDIV[att]] if att in FREEDIV else None
        cfgs.append(c)
    ids = [[2] + [4 + (i % 50) for i in range(length - 2)] + [3]]
    mask = [[1.0] * length]
    res = runner.run(secure.secure_forward, cfgs, t["state"], ids, mask, None, reps, timeout=timeout)[0]
    return {k: v["cost"] for k, v in res.items()}


def spu_model_costs(t: dict, combos, length: int, seed: int, protocol: str = "ABY3") -> list[dict]:
    """Whole-model secure inference of each (attention, activation) in SecretFlow SPU (the paper's
    framework; ``privtrans.mpc_attention.spu.model_cost``) with the teacher's weights and f(n)
    constants, one sentence of ``length`` tokens. As in ``secure_costs``, cost does not depend on
    the weights; the error against plaintext does, so the teacher's are used."""
    from . import spu

    return spu.model_cost(t["state"], t["cfg"], combos, length, t["const"], seed, protocol)
