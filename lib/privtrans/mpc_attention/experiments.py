"""The chapter's runs, cached: a teacher per task with its fitted constants, and distilled students.

``converted(tasks, settings, seeds, combos)`` gives, for every task, the teacher and the distilled
students of every seed, training what the cache lacks on every core (``privtrans.book.workers``);
the chapter's accuracy claims compare them on paired seeds (``privtrans.book.paired``). The
settings travel as ``Settings`` (profile.yaml's ``tasks`` block); a teacher gets only its
``TeacherSettings``. ``teacher(task_name, settings.teacher, seed)`` trains (or reads from
``RunCache("mpc_attention")``) the Softmax + GeLU teacher and fits f(n) on its training-split
denominators: over all layers (the paper) and per layer and head (its future work). Keys hold the
settings a run reads, the key of the teacher a student starts from, and the source of the code
(this module and all it imports).

Teachers go one per seed to every core, and students in jobs per task and seed
(``students_of_teacher``: up to ``STUDENTS_PER_JOB`` students, in jobs of even size, share each
batch's teacher forward, ``train.distill_group``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from functools import partial

import torch

from privtrans.book import workers
from privtrans.book.runcache import RunCache

from . import data, encoder, fit, train
from .attention import FREEDIV

# the code of a cached run: this module and every privtrans module it imports (runcache.source_fingerprint)
CODE = (__name__,)
# converted(): the students of one task and seed share each batch's teacher forward
# (train.distill_group), up to this many per job, in jobs of even size (``student_chunks``): Table 4's
# five fit one job, `paper`'s nine of tables 2-6 go 5 + 4; a student in a group costs about 0.8 of a lone run
STUDENTS_PER_JOB = 5


def student_chunks(combos: list, size: int = STUDENTS_PER_JOB) -> list[list]:
    """``combos`` in the fewest contiguous jobs of at most ``size``, their sizes within one of each
    other: ci's six students of tables 2-6 go 3 + 3, not 5 + 1, whose lone 1-student jobs left one
    core idle at the end (a job's teacher forwards are the same either way: one pass per job)."""
    n = -(-len(combos) // size)
    if n == 0:
        return []
    q, r = divmod(len(combos), n)
    ends = [(k + 1) * q + min(k + 1, r) for k in range(n)]
    return [combos[e - q - (k < r):e] for k, e in enumerate(ends)]


@dataclass(frozen=True)
class TeacherSettings:
    """What a teacher reads: its data, its model, its training and the f(n) fit (profile.yaml's
    ``tasks`` block, less the students' distillation). A teacher's run is given only this, so a
    distillation setting can neither retrain a teacher nor be read by one."""

    max_len: int
    model: dict  # encoder.EncoderConfig's d_model, n_heads, n_layers, d_ff
    teacher_epochs: int
    teacher_lr: float
    fit_batches: int = 8
    vocab_size: int = 8000
    n_train: int | None = None  # None: the task's whole split (the paper)
    n_dev: int | None = None

    def to_dict(self) -> dict:
        """The settings as profile.yaml states them (an unset split size left out): a cache key's part."""
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Settings:
    """A task's teacher and the distillation of its students (profile.yaml's ``tasks`` block)."""

    teacher: TeacherSettings
    epochs1: int
    epochs2: int
    lr1: float
    lr2: float

    @classmethod
    def from_cfg(cls, cfg: dict) -> "Settings":
        """From a notebook's ``tasks`` settings; a key outside both classes is refused by name."""
        teacher_keys = {f.name for f in fields(TeacherSettings)}
        own = {f.name for f in fields(cls)} - {"teacher"}
        unknown = set(cfg) - teacher_keys - own
        if unknown:
            raise ValueError(f"unknown task settings {sorted(unknown)}: allowed are {sorted(teacher_keys | own)}")
        return cls(teacher=TeacherSettings(**{k: v for k, v in cfg.items() if k in teacher_keys}),
                   **{k: v for k, v in cfg.items() if k in own})

    def to_dict(self) -> dict:
        """The settings as one flat dict, as profile.yaml states them: a student's cache key's part."""
        own = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "teacher"}
        return {**self.teacher.to_dict(), **own}


def load_task(name: str, s: TeacherSettings, seed: int):
    return data.load(name, n_train=s.n_train, n_dev=s.n_dev, max_len=s.max_len, seed=seed, vocab_size=s.vocab_size)


def model_config(task, s: TeacherSettings) -> encoder.EncoderConfig:
    return encoder.EncoderConfig(vocab_size=len(task.vocab), max_len=task.max_len, n_out=task.n_out, **s.model)


def _teacher_parts(name: str, s: TeacherSettings, seed: int) -> dict:
    return {"task": name, "settings": s.to_dict(), "seed": seed}


def _student_parts(name: str, s: Settings, seed: int, attention: str, activation: str, per_head: bool) -> dict:
    """A student's key: its settings, and its teacher's key (a retrained teacher retrains it)."""
    teacher_key = RunCache("mpc_attention").key(_teacher_parts(name, s.teacher, seed), CODE)
    return {"task": name, "settings": s.to_dict(), "seed": seed, "attention": attention, "activation": activation,
            "per_head": per_head, "teacher_key": teacher_key}


def _teacher_record(model, task, s: TeacherSettings, secs: float) -> dict:
    """What ``teacher`` stores for a trained model: its metric and the fitted f(n) constants."""
    batches = [b[:3] for b in task.train.batches(256)][: s.fit_batches]
    out = {"state": model.state_dict(), "cfg": model.cfg.to_dict(), "metric": train.metric(model, task.dev),
           "seconds": secs, "const": {}, "const_per_head": {}, "denominators": {}}
    for kind in ("softmax", "2quad"):
        d = fit.collect(model, batches, kind)
        out["denominators"][kind] = (d.n, d.layer, d.head, d.value)
        out["const"][kind] = fit.fit_all(d)
        out["const_per_head"][kind] = fit.fit_per_head(d)
    return out


def teacher(name: str, s: TeacherSettings, seed: int) -> dict:
    """{"state", "cfg", "metric", "seconds", "const": {softmax, 2quad}, "const_per_head": {...},
    "denominators": {kind: (n, layer, head, value) arrays}} for task ``name``."""
    torch.set_num_threads(1)

    def make():
        task = load_task(name, s, seed)
        cfg = model_config(task, s)
        model, secs = train.train_teacher(task, cfg, s.teacher_epochs, lr=s.teacher_lr, seed=seed)
        return _teacher_record(model, task, s, secs)

    return RunCache("mpc_attention").get_or_make("teacher", _teacher_parts(name, s, seed), make, code=CODE)[0]


def _missing(cache: RunCache, kind: str, parts: list[dict]) -> list[int]:
    return [i for i, p in enumerate(parts) if cache.get(kind, cache.key(p, CODE)) is None]


def teacher_model(t: dict) -> encoder.TinyEncoder:
    m = encoder.TinyEncoder(encoder.EncoderConfig(**t["cfg"]))
    m.load_state_dict(t["state"])
    return m.eval()


def _converted_student(t: dict, attention: str, activation: str, per_head: bool):
    """(teacher model, student converted from it with the teacher's f(n) constants)."""
    tm = teacher_model(t)
    base = FREEDIV.get(attention)
    const = None if base is None else (t["const_per_head"] if per_head else t["const"])[base]
    return tm, tm.converted(attention, activation, const)


def student(name: str, s: Settings, seed: int, attention: str, activation: str, per_head: bool = False) -> dict:
    """A converted student distilled from the cached teacher: metric before and after each stage."""
    torch.set_num_threads(1)
    t = teacher(name, s.teacher, seed)

    def make():
        task = load_task(name, s.teacher, seed)
        tm, st = _converted_student(t, attention, activation, per_head)
        before = train.metric(st, task.dev)
        r = train.distill(tm, st, task, s.epochs1, s.epochs2, lr1=s.lr1, lr2=s.lr2, seed=seed)
        return {"before": before, **r, "state": st.state_dict(), "cfg": st.cfg.to_dict()}

    parts = _student_parts(name, s, seed, attention, activation, per_head)
    return RunCache("mpc_attention").get_or_make("student", parts, make, code=CODE)[0]


def students_of_teacher(name: str, s: Settings, seed: int, combos, per_head: bool = False) -> None:
    """Distil the students of ``combos`` that the cache lacks for one task and seed in one pass over
    the batches (``train.distill_group``: each batch's teacher forward computed once; every student's
    weights equal its lone run's) and store each under ``student(...)``'s key."""
    torch.set_num_threads(1)
    cache = RunCache("mpc_attention")
    parts = [_student_parts(name, s, seed, a, f, per_head) for a, f in combos]
    todo = _missing(cache, "student", parts)
    if not todo:
        return
    task = load_task(name, s.teacher, seed)
    t = teacher(name, s.teacher, seed)  # read once: at paper a teacher's record holds BERT-Base's 365 MB of weights
    pairs = [_converted_student(t, *combos[i], per_head) for i in todo]
    before = [train.metric(st, task.dev) for _, st in pairs]
    rs = train.distill_group(pairs[0][0], [st for _, st in pairs], task, s.epochs1, s.epochs2,
                             lr1=s.lr1, lr2=s.lr2, seed=seed)
    for i, (_, st), b, r in zip(todo, pairs, before, rs):
        out = {"before": b, **r, "state": st.state_dict(), "cfg": st.cfg.to_dict()}
        cache.put("student", cache.key(parts[i], CODE), out, parts[i])


def _without_weights(run: dict) -> dict:
    return {k: v for k, v in run.items() if k != "state"}


# One process per seed, not the seeds of a task as one vectorised model: that was exact but gained
# nothing at ci (one torch thread, 5 seeds): 4.7x one seed for a teacher and 5.1x for a
# distillation, against a floor (one model on the data repeated 5 times) of 4.4x and 4.7x, as this
# encoder's step is arithmetic, not per-operation overhead; and one group per task would use one of
# the two cores (`git log -S distill_together` finds that trainer).
def teachers(tasks, s: Settings, seeds: list[int], progress=None) -> dict:
    """{task: [teacher per seed]}: the teachers the cache lacks trained on every core, then read back in order."""
    workers.in_parallel([partial(teacher, t, s.teacher, sd) for t in tasks for sd in seeds], progress=progress)
    return {t: [teacher(t, s.teacher, sd) for sd in seeds] for t in tasks}


def converted(tasks, s: Settings, seeds: list[int], combos, per_head: bool = False, progress=None) -> dict:
    """{task: {"teachers": [teacher per seed], "students": {"att+act": [student per seed]}}}.

    Teachers first (every student distils from its seed's teacher: ``teachers``), then the students
    on every core; the results are then read back from the cache in order. A student comes back
    without its weights (``student`` has them): the tables read its metrics, and at paper 10 schemes
    x 10 seeds of BERT-Base weights would hold 36 GB."""
    teachers(tasks, s, seeds, progress)
    chunks = student_chunks([tuple(c) for c in combos])
    workers.in_parallel([partial(students_of_teacher, t, s, sd, chunk, per_head)
                         for t in tasks for sd in seeds for chunk in chunks], progress=progress)
    return {t: {"teachers": [teacher(t, s.teacher, sd) for sd in seeds],
                "students": {f"{a}+{f}": [_without_weights(student(t, s, sd, a, f, per_head)) for sd in seeds]
                             for a, f in combos}}
            for t in tasks}


# the guards against a hang, per secure forward (combination x rep): a fixed 300 s (CrypTen) and 600 s
# (SPU) for all of Table 2's 10 stopped it at `paper` (BERT-Base sizes, 128 tokens), where one forward
# of 2Quad + Quad took 99 s in CrypTen and 291 s in SPU/ABY3 on 2 shared cores (Softmax's cost more)
SECURE_SECONDS_PER_FORWARD = 1200
SPU_SECONDS_PER_FORWARD = 1200


def secure_costs(t: dict, combos, length: int, reps: int = 1, timeout: float | None = None) -> dict:
    """CrypTen 2PC forward of one input of ``length`` tokens for each (attention, activation).

    Cost does not depend on the weights (same shapes, same protocol), so every combination runs
    with the teacher's weights; the accuracy of each student is measured in plaintext, where the
    tests show the secure forward equals it. Returns {"att+act": meter summary} with every party's
    message traces read together (``cost.protocol_counts``: rounds the longest chain of dependent
    messages, bytes the busiest link one way, seconds the slowest party's). ``timeout`` (default ``SECURE_SECONDS_PER_FORWARD`` per
    forward) stops parties that hang.
    """
    from privtrans.shared.mpc import runner

    from . import normaliser_cost, secure

    cfgs = []
    for att, act in combos:
        c = dict(t["cfg"], attention=att, activation=act)
        c["const"] = t["const"][FREEDIV[att]] if att in FREEDIV else None
        cfgs.append(c)
    ids = [[2] + [4 + (i % 50) for i in range(length - 2)] + [3]]
    mask = [[1.0] * length]
    if timeout is None:
        timeout = SECURE_SECONDS_PER_FORWARD * len(cfgs) * max(1, reps)
    res = runner.run(secure.secure_forward, cfgs, t["state"], ids, mask, None, reps, timeout=timeout)
    return normaliser_cost.parties_meter(res)  # every party's traces: the longest chain, the busiest link one way


def spu_model_costs(t: dict, combos, length: int, seed: int, protocol: str = "ABY3") -> list[dict]:
    """Whole-model secure inference of each (attention, activation) in SecretFlow SPU (the paper's
    framework; ``privtrans.mpc_attention.spu.model_cost``) with the teacher's weights and f(n)
    constants, one sentence of ``length`` tokens. As in ``secure_costs``, cost does not depend on
    the weights; the error against plaintext does, so the teacher's are used. The worker's timeout is
    ``SPU_SECONDS_PER_FORWARD`` per combination."""
    from . import spu

    return spu.model_cost(t["state"], t["cfg"], combos, length, t["const"], seed, protocol,
                          timeout=SPU_SECONDS_PER_FORWARD * len(combos))
