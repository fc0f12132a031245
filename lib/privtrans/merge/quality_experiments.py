"""The quality experiments of MERGE (Table 3, Figures 5 and 6) as functions the notebooks call."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd

from privtrans.book import dry, workers
from privtrans.book.paired import seeds as paired_seeds
from privtrans.shared.models.plain_gpt import VARIANT_LABELS
from . import train

#: Table 3's rows: (row label, model variant, decoding); decoding None = the variant's own
TABLE3_ROWS = [
    ("GPT (teacher)", "teacher", "vanilla"),
    ("+ER (no train)", "teacher", "er"),
    ("+MPCformer (sf2relu)", "mpcformer_sf2relu", None),
    ("+MPCformer (sf2quad)", "mpcformer_sf2quad", None),
    ("+THE-X", "thex", None),
    ("+MERGE (ours)", "merge", None),
    ("+MERGE only ER", "only_er", None),
    ("+MERGE only MM", "only_mm", None),
]
METRIC_ORDER = ["BERTScore-proxy", "BARTScore-proxy", "NIST", "ROUGE-L", "METEOR (no synonyms)", "chrF++"]


#: Figure 6: a validation loss is stable if it never exceeds this multiple of its running minimum
STABLE_JUMP = 1.5


def converged(tr: train.Trained) -> bool:
    """Finite losses and a validation loss that fell below its value at step 0 (in a dry run, which
    trains one step and validates at step 0 only, finite losses: the rows still get evaluated)."""
    val = tr.history.get("val", {}).get("total", [])
    if dry.active():
        return (not tr.diverged) and all(map(math.isfinite, val + tr.history.get("train", {}).get("total", [])))
    return (not tr.diverged) and len(val) > 1 and all(map(math.isfinite, val)) and val[-1] < val[0]


def retraining_summary(tr: train.Trained) -> dict:
    """One run's validation (and training) loss in numbers: Figure 6's table."""
    v, t = tr.history["val"]["total"], tr.history["train"]["total"]
    k = max(1, len(t) // 10)
    return {
        "val_start": v[0], "val_first_eval": v[1] if len(v) > 1 else None, "val_end": v[-1], "val_min": min(v),
        "val_end_over_start": v[-1] / v[0] if v[0] else None,
        "val_rises_initially": bool(v[1] > v[0]) if len(v) > 1 else None,
        "train_first_10pct": sum(t[:k]) / k if t else None, "train_last_10pct": sum(t[-k:]) / k if t else None,
        "finite": all(map(math.isfinite, v + t)),
        "converged": converged(tr),
        # after the start, the validation loss never exceeds STABLE_JUMP x its running minimum;
        # None with fewer than three evaluations (nothing to judge)
        "stable": all(v[i] <= STABLE_JUMP * min(v[:i]) for i in range(2, len(v))) if len(v) > 2 else None,
    }


def table3_tasks(cfg: dict, seed: int) -> tuple[pd.DataFrame, dict]:
    """``table3`` for every task of ``cfg["tasks"]``: one frame, and {task: (test examples, {row: hypotheses})}."""
    frames, samples = [], {}
    specs = [train.Spec.from_cfg(task, cfg) for task in cfg["tasks"]]
    train.train_missing(specs, [v for _, v, _ in TABLE3_ROWS], seed)
    for spec in specs:
        df, hyps = table3(spec, seed, cfg["n_new"])
        frames.append(df)
        samples[spec.task] = (train.prepared(spec).task.test, hyps)
    return pd.concat(frames, ignore_index=True), samples


#: the rows whose chrF++ the single-change claim compares (Table 3: ER + MM against each change alone)
SINGLE_CHANGE_VARIANTS = ("merge", "only_er", "only_mm")
#: the baseline MERGE is claimed to be close to (Table 3's BERTScore, §5.4), re-trained at the same seeds
CLOSE_TO = "mpcformer_sf2relu"
#: every row re-trained at each paired student seed
STUDENT_SEED_VARIANTS = (*SINGLE_CHANGE_VARIANTS, CLOSE_TO)


def across_student_seeds(cfg: dict, seed: int, progress=None) -> pd.DataFrame:
    """Table 3's MERGE, only-ER, only-MM and MPCformer (sf2relu) rows re-trained at each paired
    student seed from the one teacher of ``seed``, and that teacher's rows decoded as it is (model
    'teacher') and with ER and no re-training ('er_no_train', status 'no re-training'): one row per
    (task, model, seed) with its six metrics, or NaN and status 'diverged'. The seeds are those of
    ``book.paired.seeds(seed, cfg["seeds"])``."""
    seeds = paired_seeds(seed, cfg["seeds"])
    specs = [train.Spec.from_cfg(task, cfg) for task in cfg["tasks"]]
    train.train_missing(specs, ["teacher", *STUDENT_SEED_VARIANTS], seed, progress=progress, student_seeds=seeds)
    rows, calls = [], []
    for spec in specs:
        prep = train.prepared(spec)
        teacher = train.get_model(spec, "teacher", seed)
        for model, status, decoding in (("teacher", "teacher", "vanilla"), ("er_no_train", "no re-training", "er")):
            rows.append({"task": spec.task, "model": model, "seed": seed, "status": status})
            calls.append(partial(train.evaluate, teacher, teacher.model, prep, n_new=cfg["n_new"], decoding=decoding, seed=seed))
        for v in STUDENT_SEED_VARIANTS:
            for s in seeds:
                rows.append({"task": spec.task, "model": v, "seed": s})
                calls.append(partial(scored, train.get_model(spec, v, s, teacher_seed=seed), teacher, prep, cfg["n_new"], seed=s))
    for row, (res, h) in zip(rows, workers.values_in_parallel(calls, progress=progress)):
        row.setdefault("status", "diverged" if h is None else "trained")
        row.update(res)
    return pd.DataFrame(rows)


def across_teacher_seeds(cfg: dict, seed: int, progress=None) -> pd.DataFrame:
    """Table 3's first two rows at each teacher seed of ``book.paired.seeds(seed, cfg["seeds"])``: a
    teacher trained from scratch per task and seed, decoded as it is (model 'teacher') and with ER and
    no re-training (model 'er_no_train'), on the whole test split; one row per (task, model, seed)
    with the six metrics (NaN for a teacher whose training diverged). ER without re-training depends
    on nothing but its teacher, so the teacher's seed is the replicate its claims are judged over."""
    seeds = paired_seeds(seed, cfg["seeds"])
    specs = [train.Spec.from_cfg(task, cfg) for task in cfg["tasks"]]
    train.train_teachers(specs, seeds, progress=progress)
    rows, calls = [], []
    for spec in specs:
        prep = train.prepared(spec)
        for s in seeds:
            teacher = train.get_model(spec, "teacher", s)
            for model, decoding in (("teacher", "vanilla"), ("er_no_train", "er")):
                rows.append({"task": spec.task, "model": model, "seed": s})
                calls.append(partial(scored, teacher, teacher, prep, cfg["n_new"], decoding, seed=s))
    for row, (res, _) in zip(rows, workers.values_in_parallel(calls, progress=progress)):
        row.update(res)
    return pd.DataFrame(rows)


def robustness_tasks(cfg: dict, seed: int, progress=None) -> pd.DataFrame:
    """``robustness`` for every task of ``cfg["tasks"]`` with its ``variants``, ``noise_levels``,
    ``n_eval``, the re-trained variants at each of ``book.paired.seeds(seed, cfg["seeds"])`` (student
    seeds from the one teacher of ``seed``, the models of the Table 3 seeds notebook)."""
    seeds = paired_seeds(seed, cfg["seeds"])
    specs = [train.Spec.from_cfg(task, cfg) for task in cfg["tasks"]]
    train.train_missing(specs, ["teacher", *cfg["variants"]], seed, progress=progress, student_seeds=seeds)
    return pd.concat([robustness(spec, seed, cfg["variants"], cfg["noise_levels"], cfg["n_new"], cfg["n_eval"],
                                 student_seeds=seeds) for spec in specs], ignore_index=True)


def table3(spec: train.Spec, seed: int, n_new: int) -> tuple[pd.DataFrame, dict]:
    """One task's Table 3: every row's six metrics (two proxies) + training status.

    Returns (frame, {row label: hypotheses}). A row whose training diverged is reported with NaN
    metrics and status 'diverged' (the paper's OOT)."""
    prep = train.prepared(spec)
    teacher = train.get_model(spec, "teacher", seed)
    models = [teacher if variant == "teacher" else train.get_model(spec, variant, seed) for _, variant, _ in TABLE3_ROWS]
    scores = workers.values_in_parallel([partial(scored, tr, teacher, prep, n_new, decoding, seed)
                                         for tr, (_, _, decoding) in zip(models, TABLE3_ROWS)])
    rows, hyps = [], {}
    for tr, (label, variant, decoding), (res, h) in zip(models, TABLE3_ROWS, scores):
        row = {"task": spec.task, "model": label, "decoding": decoding or tr.decoding,
               "status": "trained" if variant != "teacher" else "teacher",
               "train_s": round(tr.seconds, 1)}
        if variant == "teacher" and decoding == "er":
            row["status"], row["train_s"] = "no re-training", 0.0
        row.update(res)
        if h is None:
            row["status"] = "diverged"
        else:
            hyps[label] = h
        rows.append(row)
    return pd.DataFrame(rows), hyps


def scored(tr: train.Trained, teacher: train.Trained, prep, n_new: int, decoding=None, seed: int = 0):
    """(Table 3's metrics, texts) of a converged model; NaN metrics and no texts (None) for a diverged
    one (the paper's OOT), never a score of its garbage."""
    if not converged(tr):
        return {m: np.nan for m in METRIC_ORDER}, None
    return train.evaluate(tr, teacher.model, prep, n_new=n_new, decoding=decoding, seed=seed)


def robustness(spec: train.Spec, seed: int, variants: list[str], noise_levels: list[float], n_new: int,
               n_eval: int | None = None, student_seeds=None) -> pd.DataFrame:
    """Figure 5: quality under U(-ε, ε) noise on the embedding of every generated token, for
    ε = level × RMS(token embeddings) of each model; x-axis = relative MSE = level² / 3.

    Every model at every level with the noise stream of ``seed`` (the figure); at each other seed of
    ``student_seeds``, the re-trained variants of that student seed and the one teacher again, at no
    noise and at the largest level only, with that seed's noise stream (the claim compares the drop
    between the two, paired by seed). Column ``seed``: the student seed and noise stream."""
    prep = train.prepared(spec)
    teacher = train.get_model(spec, "teacher", seed)
    examples = prep.task.test[:n_eval] if n_eval else prep.task.test
    ends = [min(noise_levels), max(noise_levels)]
    rows, calls = [], []
    for s in dict.fromkeys([seed, *(student_seeds or [])]):
        for v in variants:
            tr = teacher if v == "teacher" else train.get_model(spec, v, s, teacher_seed=seed)
            for lvl in noise_levels if s == seed else ends:
                rows.append({"task": spec.task, "model": "vanilla (teacher)" if v == "teacher" else VARIANT_LABELS.get(v, v),
                             "variant": v, "seed": s, "noise": lvl, "rel_mse": lvl**2 / 3})
                calls.append(partial(train.evaluate, tr, teacher.model, prep, n_new=n_new, decoding="vanilla", noise_rel=lvl,
                                     seed=s, examples=examples))
    for row, (res, _) in zip(rows, workers.values_in_parallel(calls)):
        row.update(res)
    return pd.DataFrame(rows)


def loss_curves(tr: train.Trained) -> pd.DataFrame:
    """Figure 6's curves of one run in long form: step, split (train/validation), part, loss."""
    h = tr.history
    out = []
    for split, steps in (("train", h["step"]), ("validation", h["val_step"])):
        for part, vals in h[split if split == "train" else "val"].items():
            aux = "hidden-state MSE" if tr.variant in train.DISTILLED else "alignment (1 - cos + norm term)"
            name = {"total": "total", "ce": "cross-entropy", "aux": aux}[part]
            out += [{"step": s, "split": split, "part": name, "loss": v} for s, v in zip(steps, vals)]
    return pd.DataFrame(out)


def paper_table3_bertscore(root=None) -> pd.DataFrame:
    """The paper's Table 3 BERTScore of MERGE and MPCformer (sf2relu), and the gaps its text states
    (data/merge/table3_bertscore_paper.csv, cited per row)."""
    from privtrans.book.paths import data_dir

    return pd.read_csv(data_dir("merge", root) / "table3_bertscore_paper.csv")


#: the paper's Table 3 tasks, in its order
PAPER_TASKS = ("MultiWOZ", "CommonGen", "DailyDialog")


#: our stand-in task of each of the paper's (data.TASKS in the paper's order)
PAPER_TASK_OF = dict(zip(("acts", "concepts", "chat"), PAPER_TASKS))


def paper_bertscore_span(root=None) -> dict[str, float]:
    """Per our task, the paper's BERTScore of its teacher minus that of the teacher decoded with ER and
    no re-training (Table 3: GPT-2 (124M) − +ER (no train)): the span our BERTScore-proxy is scaled
    to (``readouts.table3_seeds``), on two rows no claim of Table 3's closeness compares."""
    from privtrans.book.paper_values import lookup

    P = lookup("merge", root)
    return {ours: P("table3_paper", task=t, model="GPT-2 (124M)", metric="BERTScore")
            - P("table3_paper", task=t, model="+ER (no train)", metric="BERTScore") for ours, t in PAPER_TASK_OF.items()}


def paper_er_no_train_loss(metric: str = "chrF++", root=None) -> dict[str, float]:
    """The paper's own 1 − (+ER (no train)) / GPT-2 per task on ``metric`` (data/merge/table3_paper.csv):
    the share of its teacher's score that ER without re-training lost, beside ours."""
    from privtrans.book.paper_values import lookup

    P = lookup("merge", root)
    return {t: 1 - P("table3_paper", task=t, model="+ER (no train)", metric=metric)
            / P("table3_paper", task=t, model="GPT-2 (124M)", metric=metric) for t in PAPER_TASKS}
