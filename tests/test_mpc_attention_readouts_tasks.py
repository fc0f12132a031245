"""privtrans.mpc_attention.readouts.tasks on hand-made teachers and students, and the claims of
Tables 4 and 5 on them."""

from __future__ import annotations

import pytest

from privtrans.mpc_attention.readouts import tasks

from mpc_attention_readout_inputs import NOT_HELD, QUAD, SEEDS5, _noise, _runs, _table4, verdict


def test_table4_5_readouts():
    t = {"mr2": [{"metric": 0.7}] * 3, "pair": [{"metric": 0.6}] * 3}
    s = {"mr2": _table4({k: [(0.5, 0.70), (0.52, 0.71), (0.51, 0.69)] for k in QUAD}, 10, 100),
         "pair": _table4({k: [(0.5, 0.40), (0.5, 0.45), (0.5, 0.60)] for k in QUAD}, 5, 50)}
    r = tasks.table4_5_tasks(t, s, [0, 1, 2])
    assert set(r["time_follows_work"]) == {"mr2 − pair"} and set(r["raises"]["mr2"]) == set(QUAD)
    assert r["after"]["pair"]["2quad_freediv+quad"] == pytest.approx(0.4833, abs=1e-3)
    assert verdict("t4_distillation_raises_mr2", r) == "held"
    assert verdict("t4_distillation_raises_pair", r) == "inconclusive"  # after - before: -0.1, -0.05, +0.1
    assert verdict("t4_quad_near_chance_before", r) == "held"  # 0.50-0.52 before, below 0.56
    assert verdict("t5_time_follows_work", r) == "held"
    # three of the four raised on pair: what the paper's RTE column shows (one falls, 52.7 -> 47.3)
    three = {k: [(0.5, 0.60), (0.52, 0.61), (0.51, 0.62)] for k in QUAD}
    three["softmax_freediv+quad"] = [(0.5, 0.45), (0.5, 0.46), (0.5, 0.44)]
    r3 = tasks.table4_5_tasks(t, dict(s, pair=_table4(three)), [0, 1, 2])
    assert verdict("t4_distillation_raises_pair", r3) == "held"
    two = dict(three, **{"2quad+quad": [(0.5, 0.45), (0.5, 0.46), (0.5, 0.44)]})
    r2 = tasks.table4_5_tasks(t, dict(s, pair=_table4(two)), [0, 1, 2])
    assert verdict("t4_distillation_raises_pair", r2) == "contradicted"  # two clearly fall: three cannot rise
    # Quad students that lose nothing before distillation are not near chance
    high = _table4({k: [(0.70, 0.71), (0.71, 0.70), (0.69, 0.70)] for k in QUAD})
    rh = tasks.table4_5_tasks(t, dict(s, mr2=high), [0, 1, 2])
    assert verdict("t4_quad_near_chance_before", rh) == "contradicted"
    assert verdict("t4_distillation_raises_mr2", rh) == "inconclusive"


def test_table4_raises_is_judged_per_task_on_the_tasks_teacher():
    t = {"mr2": [{"metric": 0.7}] * 2, "pair": [{"metric": 0.5}] * 2}
    s = {k: _table4({q: [(0.5, 0.7), (0.5, 0.72)] for q in QUAD}) for k in t}
    r = tasks.table4_5_tasks(t, s, [0, 1])
    assert r["teachers_learned"] == {"mr2": True, "pair": False}
    assert verdict("t4_distillation_raises_mr2", r) == "held"
    assert verdict("t4_distillation_raises_pair", r) == "not judged"


def test_near_chance_is_recorded_for_two_class_tasks_only():
    t = {"mr2": [{"metric": 0.7}] * 2, "mrreg": [{"metric": 0.5, "cfg": {"n_out": 1}}] * 2}
    s = {k: _table4({q: [(0.5, 0.7), (0.5, 0.72)] for q in QUAD}) for k in t}
    r = tasks.table4_5_tasks(t, s, [0, 1])
    assert set(r["near_chance"]) == {"mr2"} and set(r["near_chance"]["mr2"]) == set(QUAD)


def test_table5_equal_work_judges_nothing():
    t = {"a": [{"metric": 0.7}], "b": [{"metric": 0.6}]}
    s = {k: {"2quad_freediv+quad": _runs([(0.5, 0.7)], sec, 100)} for k, sec in (("a", 1), ("b", 2))}
    r = tasks.table4_5_tasks(t, s, [0])
    assert r["time_follows_work"] == {} and r["time_follows_work_pairs"] == 0


def _conversions(seconds, work):
    return [dict(seconds=x, examples_x_epochs=w) for x, w in zip(seconds, work)]


def test_table5_is_judged_on_paired_seeds():
    """Per pair of tasks, the interval of (more work's seconds − less work's); work that crosses
    between seeds compares nothing, and a task that took less time for more work contradicts."""
    small, big = [6000, 6100, 5900, 6050, 5950], [8000] * 5
    more = tasks.time_follows_work({"pair": _conversions([7.0, 7.2, 6.9, 7.1, 7.0], small),
                                       "mr2": _conversions([9.0, 9.3, 8.8, 9.1, 9.2], big)})
    assert set(more["time_follows_work"]) == {"mr2 − pair"}
    assert more["time_follows_work"]["mr2 − pair"]["mean"] == pytest.approx(2.04)
    assert verdict("t5_time_follows_work", dict(more, conversion_seconds={})) == "held"
    less = tasks.time_follows_work({"pair": _conversions([9.0, 9.3, 8.8, 9.1, 9.2], small),
                                       "mr2": _conversions([7.0, 7.2, 6.9, 7.1, 7.0], big)})
    assert verdict("t5_time_follows_work", dict(less, conversion_seconds={})) == "contradicted"
    crossing = tasks.time_follows_work({"a": _conversions([1] * 5, [100, 200, 100, 200, 100]),
                                           "b": _conversions([2] * 5, [150] * 5)})
    assert crossing == {"time_follows_work": {}, "time_follows_work_pairs": 0}


def test_null_time_that_does_not_follow_work_is_not_held():
    """More work, the same time plus noise: never held."""
    base = 7.0 + _noise(0, sd=0.3)
    r = tasks.time_follows_work({"pair": _conversions(list(base), [6000] * 5),
                                    "mr2": _conversions(list(7.0 + _noise(1, sd=0.3)), [8000] * 5)})
    assert verdict("t5_time_follows_work", dict(r, conversion_seconds={})) in NOT_HELD


def test_null_quad_students_at_the_chance_level_are_not_held():
    t = {"mr2": [{"metric": 0.7}] * 5}
    s = {"mr2": _table4({k: [(0.56 + e, 0.7) for e in _noise(i)] for i, k in enumerate(QUAD)})}
    assert verdict("t4_quad_near_chance_before", tasks.table4_5_tasks(t, s, SEEDS5)) in NOT_HELD


@pytest.mark.parametrize("task", ["mr2", "mrreg", "pair"])
def test_null_distillation_that_changes_nothing_is_not_held(task):
    t = {task: [{"metric": 0.7}] * 5}
    s = {task: _table4({k: [(b, b + e) for b, e in zip((0.60, 0.62, 0.58, 0.61, 0.59), _noise(i))]
                        for i, k in enumerate(QUAD)})}
    assert verdict(f"t4_distillation_raises_{task}", tasks.table4_5_tasks(t, s, SEEDS5)) in NOT_HELD


def _freediv_gelu_tasks(after_minus_teacher, before_minus_teacher, n=3, metrics=(0.70, 0.72, 0.71), quad_after=0.68):
    """Three tasks whose Softmax-freeDiv + GeLU students sit at teacher + the given offsets (per seed),
    beside the four Quad students, distilled to ``quad_after`` (their metric is the gate: above
    chance, the teacher had the task to keep)."""
    tasks = ("mr2", "mrreg", "pair")
    teachers = {k: [{"metric": m} for m in metrics[:n]] for k in tasks}
    teachers["mrreg"] = [dict(t, cfg={"n_out": 1}) for t in teachers["mrreg"]]
    students = {k: {"softmax_freediv+gelu": [dict(before=m + b, after_stage2=m + a, seconds=1, examples_x_epochs=1)
                                             for m, a, b in zip(metrics[:n], after_minus_teacher, before_minus_teacher)],
                    **{q: _runs([(0.5, quad_after + e / 100) for e in range(n)], 1, 1) for q in QUAD}}
                for k in tasks}
    return teachers, students


def test_table4_freediv_gelu_against_its_teacher():
    t, s = _freediv_gelu_tasks((0.001, -0.003, 0.002), (-0.002, 0.001, -0.001))
    r = tasks.table4_5_tasks(t, s, [0, 1, 2])
    assert r["freediv_gelu_minus_teacher"]["mr2"]["mean"] == pytest.approx(0.0)
    assert verdict("t4_freediv_gelu_kept", r) == "held" and verdict("t4_freediv_gelu_before", r) == "held"
    # 3 points below the teacher on every seed after distillation, 2 points before it: contradicted
    t, s = _freediv_gelu_tasks((-0.03, -0.031, -0.029), (-0.02, -0.021, -0.019))
    r = tasks.table4_5_tasks(t, s, [0, 1, 2])
    assert verdict("t4_freediv_gelu_kept", r) == "contradicted" and verdict("t4_freediv_gelu_before", r) == "contradicted"
    # a teacher at chance and a student beside it agree trivially: no distilled Quad student beats
    # chance either, and the gate (which reads those students, not the compared teacher) says so
    t, s = _freediv_gelu_tasks((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), metrics=(0.51, 0.52, 0.50), quad_after=0.50)
    r = tasks.table4_5_tasks(t, s, [0, 1, 2])
    assert r["quad_students_learned"] == {"mr2": False, "mrreg": True, "pair": False}  # mrreg: correlation 0.5 > 0.1
    assert verdict("t4_freediv_gelu_kept", r) == "not judged" and verdict("t4_freediv_gelu_before", r) == "not judged"
    # the gate does not read the teacher: a teacher below the learned level whose Quad students learned
    # is judged, and a student 3 points below it is contradicted, not hidden as "not judged"
    t, s = _freediv_gelu_tasks((-0.03, -0.031, -0.029), (-0.02, -0.021, -0.019), metrics=(0.54, 0.545, 0.55))
    r = tasks.table4_5_tasks(t, s, [0, 1, 2])
    assert r["teachers_learned"]["mr2"] is False and r["quad_students_learned"]["mr2"] is True
    assert verdict("t4_freediv_gelu_kept", r) == "contradicted" and verdict("t4_freediv_gelu_before", r) == "contradicted"


def test_null_freediv_gelu_at_the_margin_is_not_held():
    """Students at exactly the claim's margin below their teachers, plus noise, must not come out held."""
    base = (0.70, 0.72, 0.71, 0.69, 0.73)
    t, s = _freediv_gelu_tasks(list(-0.02 + _noise(0)), list(-0.01 + _noise(1)), n=5, metrics=base)
    r = tasks.table4_5_tasks(t, s, SEEDS5)
    assert verdict("t4_freediv_gelu_kept", r) in NOT_HELD
    assert verdict("t4_freediv_gelu_before", r) in NOT_HELD
