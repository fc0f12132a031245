"""Tables 4 and 5 (notebook 04): distillation on each task, before and after, on paired seeds, and
whether conversion time follows the work done."""

from __future__ import annotations

from privtrans.book.paired import paired_difference
from privtrans.book.readouts import mean

from .by_seed import _learned, _per_seed, _regression


FREEDIV_GELU = "softmax_freediv+gelu"


FREEDIV_AFTER_MARGIN = -0.02   # Table 4: freeDiv + GeLU vs Softmax + GeLU, +0.1 / +0.3 / -1.8 points


FREEDIV_BEFORE_MARGIN = -0.01  # Table 4, SST-2: 91.3 % before distillation vs 91.5 %


NEAR_CHANCE = 0.56  # "near chance" on a two-class task: below 56 % (the paper's Quad students: 49.2-52.7 %)


def table4_5_tasks(teachers: dict, students: dict, seeds: list[int]) -> dict:
    """Table 4 (before/after distillation per task, mean over seeds; "distillation raises each Quad
    student's metric" as a paired 95 % interval of after - before; "near chance before distillation"
    as the interval of 0.56 - accuracy per Quad student, two-class tasks) and Table 5 (conversion seconds).

    ``teachers``: {task: [teacher dict per seed]}; ``students``: {task: {"att+act": [student dict per seed]}}.
    """
    tm = {k: _per_seed(f"task {k!r}: teachers", [t["metric"] for t in ts], seeds) for k, ts in teachers.items()}
    metric = {k: mean(v) for k, v in tm.items()}
    regression = {k: _regression(ts) for k, ts in teachers.items()}
    # a teacher "learned" its task: accuracy 5 points over chance (0.5), or correlation > 0.1
    learned = {k: _learned(metric[k], regression[k]) for k in teachers}
    out = {"seeds": list(seeds), "n_seeds": len(seeds), "teacher": metric, "before": {}, "after": {}, "raises": {},
           "raises_interval": {}, "near_chance": {}, "teachers_learned": learned, "quad_students_learned": {},
           "conversion_seconds": {}, "examples_x_epochs": {}, "freediv_gelu_minus_teacher": {},
           "freediv_gelu_before_minus_teacher": {}}
    for task, ss in students.items():
        if task not in tm:
            raise ValueError(f"task {task!r} has students but no teachers (tasks with teachers: {sorted(tm)})")
        before = {k: _per_seed(f"task {task!r}: {k} before", [s["before"] for s in runs], seeds) for k, runs in ss.items()}
        after = {k: _per_seed(f"task {task!r}: {k} after", [s["after_stage2"] for s in runs], seeds) for k, runs in ss.items()}
        out["before"][task] = {k: mean(v) for k, v in before.items()}
        out["after"][task] = {k: mean(v) for k, v in after.items()}
        out["raises"][task] = {k: paired_difference(after[k], before[k]).as_dict() for k in ss if k.endswith("+quad")}
        # some distilled Quad student beats chance: the teacher had the task to transfer (the gate of
        # the claims that compare a student with that teacher, which cannot read the teacher itself)
        out["quad_students_learned"][task] = any(_learned(out["after"][task][k], regression.get(task, False))
                                                 for k in ss if k.endswith("+quad"))
        # the table's compact form: [mean, lo, hi] of after − before per Quad student
        out["raises_interval"][task] = {k: [p["mean"], p["lo"], p["hi"]] for k, p in out["raises"][task].items()}
        if not regression.get(task, False):
            # near chance before distillation, per Quad student: the interval of 0.56 − accuracy
            out["near_chance"][task] = {k: paired_difference([NEAR_CHANCE] * len(seeds), before[k]).as_dict()
                                        for k in ss if k.endswith("+quad")}
        # Softmax-freeDiv + GeLU against its own seed's teacher (Softmax + GeLU): after distillation
        # (within 2 points) and before it (within 1 point): paired intervals of student − teacher
        if FREEDIV_GELU in ss:
            out["freediv_gelu_minus_teacher"][task] = paired_difference(
                after[FREEDIV_GELU], tm[task], margin=FREEDIV_AFTER_MARGIN).as_dict()
            out["freediv_gelu_before_minus_teacher"][task] = paired_difference(
                before[FREEDIV_GELU], tm[task], margin=FREEDIV_BEFORE_MARGIN).as_dict()
        runs = ss.get("2quad_freediv+quad")
        if runs:
            out["conversion_seconds"][task] = mean([s["seconds"] for s in runs])
            out["examples_x_epochs"][task] = int(runs[0]["examples_x_epochs"])
    out.update(time_follows_work({t: ss.get("2quad_freediv+quad") or [] for t, ss in students.items()}))
    return out


def time_follows_work(runs: dict) -> dict:
    """Table 5's order on paired seeds. ``runs``: {task: one conversion per seed}, each with
    ``seconds`` and ``examples_x_epochs``. For every pair of tasks where the second did more work at
    every seed (equal or crossing work judges nothing), the paired interval of its conversion seconds
    minus the first's ("b − a" in ``time_follows_work``): more work took more time where it lies
    above zero. Wall time on shared cores is noisy, so one mean against another would decide on
    load, not on work."""
    tasks = [t for t, rs in runs.items() if rs]
    pairs = {}
    for a in tasks:
        for b in tasks:
            wa, wb = [r["examples_x_epochs"] for r in runs[a]], [r["examples_x_epochs"] for r in runs[b]]
            if len(wa) == len(wb) and all(x < y for x, y in zip(wa, wb)):
                pairs[f"{b} − {a}"] = paired_difference([r["seconds"] for r in runs[b]],
                                                        [r["seconds"] for r in runs[a]]).as_dict()
    return {"time_follows_work": pairs, "time_follows_work_pairs": len(pairs)}
