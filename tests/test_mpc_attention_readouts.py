"""mpc_attention readouts on hand-made tables, and the claims' predicates on them."""

import numpy as np
import pandas as pd
import pytest

from privtrans.book import claims
from privtrans.book.session import _jsonable
from privtrans.mpc_attention import readouts

CLAIMS = {c["id"]: c for c in claims.load("mpc_attention")["claims"]}

ROUNDS = {"softmax": 105, "2relu": 38, "2quad": 30, "scaling": 0, "softmax_freediv": 76, "2quad_freediv": 1}
BYTES = {"softmax": 6000, "2relu": 2000, "2quad": 200, "scaling": 0, "softmax_freediv": 5900, "2quad_freediv": 60}


def verdict(claim_id, values, profile="ci"):
    """The claim's verdict (held / contradicted / inconclusive / not judged) on the readout's output."""
    c = CLAIMS[claim_id]
    (row,) = claims.evaluate("mpc_attention", {"claims": [c]},
                             {c["notebook"]: {"profile": profile, "values": _jsonable(values)}}, profile)
    assert (row["held"] is True) == (row["verdict"] == "held")
    return row["verdict"]


def table(rounds=ROUNDS, nbytes=BYTES, parties=(2, 3)):
    rows = [dict(parties=p, n=n, variant=v, rounds=rounds[v], bytes=nbytes[v], seconds=0.1, max_abs_error=1e-3,
                 **{"LAN s": rounds[v] * 2e-4 + nbytes[v] / 1.25e9})
            for p in parties for n in (16, 32) for v in rounds]
    return pd.DataFrame(rows)


@pytest.fixture
def paper_on_lan(monkeypatch):
    """``made(t1=..., t2=...)``: the paper's Table 1 seconds and Table 2 speed-ups replaced by what the
    stated LAN gives these counts ({attention: (bytes, rounds)}, {"att+act": (bytes, rounds)}), so the
    calibrated link is that LAN and the time claims are judged on it."""
    from privtrans.mpc_attention import calibration
    from privtrans.shared.mpc.network import STATED_LAN as lan

    def made(t1=None, t2=None):
        def P(file, col="value", **k):
            if k["table"] == "Table 1":
                return float(lan.seconds(*t1[k["attention"]]))
            return float(lan.seconds(*t2["softmax+gelu"]) / lan.seconds(*t2[f"{k['attention']}+{k['activation']}"]))
        monkeypatch.setattr(calibration, "_P", lambda root=None: P)
    return made


T1 = {v: (BYTES[v], ROUNDS[v]) for v in ROUNDS}


def test_time_claims_are_not_judged_through_a_link_the_papers_numbers_do_not_calibrate():
    r = readouts.table1_attention_cost(table(), closed())
    assert r["link_2pc"]["calibrated"] is False
    for cid in ("t1_all_cheaper_than_softmax", "t1_softmax_freediv_beats_2quad"):
        assert verdict(cid, r) == "not judged"
    assert "held-out" in r["link_2pc"]["status"]
    # the reason names the held-out error that kept the link from judging
    c = CLAIMS["t1_softmax_freediv_beats_2quad"]
    (row,) = claims.evaluate("mpc_attention", {"claims": [c]},
                             {c["notebook"]: {"profile": "ci", "values": _jsonable(r)}}, "ci")
    assert (f"max_held_out_error = {r['link_2pc']['max_held_out_error']:.4g} <= "
            f"table1_attention_cost.link_2pc.tolerance = 0.1 (false)") in row["reason"]


def closed(rounds=ROUNDS, nbytes=BYTES):
    return pd.DataFrame([dict(n=n, variant=v, rounds=rounds[v], bytes=nbytes[v]) for n in (16, 32) for v in rounds])


def test_table1_readouts_and_claims(paper_on_lan):
    paper_on_lan(t1=T1)
    r = readouts.table1_attention_cost(table(), closed())
    assert r["freediv_cheaper_2pc"] and r["closed_form_exact_2pc"] and r["all_cheaper_than_softmax_2pc"]
    assert r["quad_freediv_minus_scaling_rounds_2pc"] == 1
    assert verdict("t1_freediv_cheaper_2pc", r) == "held" and verdict("t1_all_cheaper_than_softmax", r) == "held"
    assert verdict("t1_softmax_freediv_beats_2quad", r) == "contradicted"  # here the max dominates
    assert verdict("t1_quad_freediv_about_scaling", r) == "held"  # 1 round more in 2PC and 3PC
    assert r["link_2pc"]["calibrated"] is True
    worse = dict(ROUNDS, softmax_freediv=106)
    r2 = readouts.table1_attention_cost(table(rounds=worse), closed())
    assert not r2["freediv_cheaper_2pc"] and not r2["closed_form_exact_2pc"]
    assert verdict("t1_freediv_cheaper_2pc", r2) == "contradicted"


def _cost(rounds, nbytes, norm=10):
    return {"Total": dict(rounds=rounds, bytes=nbytes, seconds=rounds / 100),
            "Softmax": dict(rounds=rounds - norm - 1, bytes=0), "Norm": dict(rounds=norm, bytes=0),
            "Act": dict(rounds=1, bytes=0), "Linear": dict(rounds=0, bytes=nbytes)}  # the groups add up to Total


def _students(after, before=(0.50, 0.52, 0.51)):
    return {k: [{"before": b, "after_stage2": a} for a, b in zip(v, before)] for k, v in after.items()}


COSTS = {"softmax+gelu": _cost(400, 1e7), "2quad+quad": _cost(200, 5e6), "scaling+quad": _cost(120, 4e6),
         "2quad_freediv+quad": _cost(125, 4e6, norm=100)}
TEACHERS = [0.71, 0.72, 0.70]


def test_tables2_6_readouts_and_claims(paper_on_lan):
    paper_on_lan(t2={k: (c["Total"]["bytes"], c["Total"]["rounds"]) for k, c in COSTS.items()})
    after = {"2quad+quad": [0.70, 0.72, 0.69], "scaling+quad": [0.50, 0.51, 0.52], "2quad_freediv+quad": [0.712, 0.721, 0.701]}
    students = _students(after)
    r = readouts.tables2_6_schemes(TEACHERS, students, COSTS, [0, 1, 2])
    assert r["best_speedup_lan"] == pytest.approx((400 * 2e-4 + 1e7 / 1.25e9) / (125 * 2e-4 + 4e6 / 1.25e9))
    assert r["largest_nonlinear_after_conversion"] == "Norm"
    assert r["after"]["scaling+quad"] == pytest.approx(0.51) and r["teacher_metric"] == pytest.approx(0.71)
    # the shares of the converted model's LAN time add up to one; the bound is Softmax + GeLU over what stays
    assert sum(r["best_lan_share"].values()) == pytest.approx(1.0)
    assert r["speedup_bound_lan"] == pytest.approx((400 * 2e-4 + 1e7 / 1.25e9) / (100 * 2e-4 + 4e6 / 1.25e9))
    assert verdict("t3_speedup", r) == "held" and verdict("t6_faster_than_mpcformer", r) == "held"
    # 2x over Softmax + GeLU is not enough: freeDiv's own gain over 2Quad + Quad must be half the
    # paper's (2.26 / 1.84 = 1.23x, so >= 1.11x); a converted model almost as slow as 2Quad + Quad fails it
    near = readouts.tables2_6_schemes(TEACHERS, students, {**COSTS, "2quad_freediv+quad": _cost(190, 4.8e6, norm=100)},
                                      [0, 1, 2])
    assert near["link_table2"]["calibrated"] is True
    assert near["best_speedup_lan"] >= 2 and near["best_over_2quad_lan"] < 1.11
    assert verdict("t3_speedup", near) == "contradicted" and verdict("t6_faster_than_mpcformer", near) == "held"
    # the checks of our construction read rounds and bytes together, so they hold on every link:
    # Scaling + Quad within 10 % of the converted model in both (120/125 rounds, equal bytes) holds;
    # 20 % fewer bytes fails "as fast" however equal the rounds, and more bytes than 2Quad + Quad
    # fails "faster" however few the rounds
    assert r["best_over_scaling_rounds"] == pytest.approx(120 / 125) and r["best_over_scaling_bytes"] == 1.0
    assert verdict("t2_as_fast_as_scaling", r) == "held"
    lean = readouts.tables2_6_schemes(TEACHERS, students, {**COSTS, "scaling+quad": _cost(125, 3.2e6)}, [0, 1, 2])
    assert verdict("t2_as_fast_as_scaling", lean) == "contradicted"
    heavy = readouts.tables2_6_schemes(TEACHERS, students, {**COSTS, "2quad_freediv+quad": _cost(125, 6e6, norm=100)},
                                       [0, 1, 2])
    assert heavy["best_over_2quad_rounds"] > 1 and heavy["best_over_2quad_bytes"] < 1
    assert verdict("t6_faster_than_mpcformer", heavy) == "contradicted"
    # student - teacher = [+0.002, +0.001, +0.001]: within a point on both sides
    assert r["kept"]["mean"] == pytest.approx(0.004 / 3) and verdict("t3_accuracy_kept", r) == "held"
    assert r["kept_within"]["teacher − student"]["mean"] == pytest.approx(-0.004 / 3)
    assert verdict("t2_scaling_collapses", r) == "held"  # 0.51 +- 0.025 lies below 0.55
    # a student 3 points below its teacher on every seed has not kept the accuracy ...
    low = dict(students, **{"2quad_freediv+quad": [{"before": 0.5, "after_stage2": t - 0.03} for t in TEACHERS]})
    assert verdict("t3_accuracy_kept", readouts.tables2_6_schemes(TEACHERS, low, COSTS, [0, 1, 2])) == "contradicted"
    # ... nor one 3 points above it: "within about a point" is two-sided
    high = dict(students, **{"2quad_freediv+quad": [{"before": 0.5, "after_stage2": t + 0.03} for t in TEACHERS]})
    assert verdict("t3_accuracy_kept", readouts.tables2_6_schemes(TEACHERS, high, COSTS, [0, 1, 2])) == "contradicted"
    # +0.6 points with an interval of about [-2.5, +3.7] points contains both outcomes: inconclusive
    wide = dict(students, **{"2quad_freediv+quad": [{"before": 0.5, "after_stage2": t + d}
                                                   for t, d in zip(TEACHERS, (0.018, -0.006, 0.006))]})
    rw = readouts.tables2_6_schemes(TEACHERS, wide, COSTS, [0, 1, 2])
    assert rw["kept"]["lo"] < -0.01 < 0.01 < rw["kept"]["hi"]
    assert verdict("t3_accuracy_kept", rw) == "inconclusive"
    # Scaling at 0.55 +- 0.05 does not clearly lie below 0.55; at 0.70 it clearly does not collapse
    noisy = dict(students, **{"scaling+quad": [{"before": 0.5, "after_stage2": a} for a in (0.50, 0.55, 0.60)]})
    assert verdict("t2_scaling_collapses", readouts.tables2_6_schemes(TEACHERS, noisy, COSTS, [0, 1, 2])) == "inconclusive"
    fine = dict(students, **{"scaling+quad": [{"before": 0.5, "after_stage2": a} for a in (0.70, 0.71, 0.69)]})
    assert verdict("t2_scaling_collapses", readouts.tables2_6_schemes(TEACHERS, fine, COSTS, [0, 1, 2])) == "contradicted"
    one = {k: v[:1] for k, v in students.items()}
    r1 = readouts.tables2_6_schemes(TEACHERS[:1], one, COSTS, [0])
    assert verdict("t3_accuracy_kept", r1) == "not judged"  # one seed: no interval
    assert verdict("t2_scaling_collapses", r1) == "not judged"


def _runs(pairs, seconds=10, work=100):
    return [dict(before=b, after_stage2=a, seconds=seconds, examples_x_epochs=work) for b, a in pairs]


QUAD = ("softmax+quad", "softmax_freediv+quad", "2quad+quad", "2quad_freediv+quad")


def _table4(pairs_by_student, seconds=10, work=100):
    """Table 4's students on one task: the four Quad students (and Softmax freeDiv + GeLU)."""
    out = {k: _runs(p, seconds, work) for k, p in pairs_by_student.items()}
    out["softmax_freediv+gelu"] = _runs([(0.7, 0.71)] * len(next(iter(pairs_by_student.values()))), seconds, work)
    return out


def test_table4_5_readouts():
    t = {"mr2": [{"metric": 0.7}] * 3, "pair": [{"metric": 0.6}] * 3}
    s = {"mr2": _table4({k: [(0.5, 0.70), (0.52, 0.71), (0.51, 0.69)] for k in QUAD}, 10, 100),
         "pair": _table4({k: [(0.5, 0.40), (0.5, 0.45), (0.5, 0.60)] for k in QUAD}, 5, 50)}
    r = readouts.table4_5_tasks(t, s, [0, 1, 2])
    assert set(r["time_follows_work"]) == {"mr2 − pair"} and set(r["raises"]["mr2"]) == set(QUAD)
    assert r["after"]["pair"]["2quad_freediv+quad"] == pytest.approx(0.4833, abs=1e-3)
    assert verdict("t4_distillation_raises_mr2", r) == "held"
    assert verdict("t4_distillation_raises_pair", r) == "inconclusive"  # after - before: -0.1, -0.05, +0.1
    assert verdict("t4_quad_near_chance_before", r) == "held"  # 0.50-0.52 before, below 0.56
    assert verdict("t5_time_follows_work", r) == "held"
    # three of the four raised on pair: what the paper's RTE column shows (one falls, 52.7 -> 47.3)
    three = {k: [(0.5, 0.60), (0.52, 0.61), (0.51, 0.62)] for k in QUAD}
    three["softmax_freediv+quad"] = [(0.5, 0.45), (0.5, 0.46), (0.5, 0.44)]
    r3 = readouts.table4_5_tasks(t, dict(s, pair=_table4(three)), [0, 1, 2])
    assert verdict("t4_distillation_raises_pair", r3) == "held"
    two = dict(three, **{"2quad+quad": [(0.5, 0.45), (0.5, 0.46), (0.5, 0.44)]})
    r2 = readouts.table4_5_tasks(t, dict(s, pair=_table4(two)), [0, 1, 2])
    assert verdict("t4_distillation_raises_pair", r2) == "contradicted"  # two clearly fall: three cannot rise
    # Quad students that lose nothing before distillation are not near chance
    high = _table4({k: [(0.70, 0.71), (0.71, 0.70), (0.69, 0.70)] for k in QUAD})
    rh = readouts.table4_5_tasks(t, dict(s, mr2=high), [0, 1, 2])
    assert verdict("t4_quad_near_chance_before", rh) == "contradicted"
    assert verdict("t4_distillation_raises_mr2", rh) == "inconclusive"


def test_table4_raises_is_judged_per_task_on_the_tasks_teacher():
    t = {"mr2": [{"metric": 0.7}] * 2, "pair": [{"metric": 0.5}] * 2}
    s = {k: _table4({q: [(0.5, 0.7), (0.5, 0.72)] for q in QUAD}) for k in t}
    r = readouts.table4_5_tasks(t, s, [0, 1])
    assert r["teachers_learned"] == {"mr2": True, "pair": False}
    assert verdict("t4_distillation_raises_mr2", r) == "held"
    assert verdict("t4_distillation_raises_pair", r) == "not judged"


def test_near_chance_is_recorded_for_two_class_tasks_only():
    t = {"mr2": [{"metric": 0.7}] * 2, "mrreg": [{"metric": 0.5, "cfg": {"n_out": 1}}] * 2}
    s = {k: _table4({q: [(0.5, 0.7), (0.5, 0.72)] for q in QUAD}) for k in t}
    r = readouts.table4_5_tasks(t, s, [0, 1])
    assert set(r["near_chance"]) == {"mr2"} and set(r["near_chance"]["mr2"]) == set(QUAD)


def test_table5_equal_work_judges_nothing():
    t = {"a": [{"metric": 0.7}], "b": [{"metric": 0.6}]}
    s = {k: {"2quad_freediv+quad": _runs([(0.5, 0.7)], sec, 100)} for k, sec in (("a", 1), ("b", 2))}
    r = readouts.table4_5_tasks(t, s, [0])
    assert r["time_follows_work"] == {} and r["time_follows_work_pairs"] == 0


def _conversions(seconds, work):
    return [dict(seconds=x, examples_x_epochs=w) for x, w in zip(seconds, work)]


def test_table5_is_judged_on_paired_seeds():
    """Per pair of tasks, the interval of (more work's seconds − less work's); work that crosses
    between seeds compares nothing, and a task that took less time for more work contradicts."""
    small, big = [6000, 6100, 5900, 6050, 5950], [8000] * 5
    more = readouts.time_follows_work({"pair": _conversions([7.0, 7.2, 6.9, 7.1, 7.0], small),
                                       "mr2": _conversions([9.0, 9.3, 8.8, 9.1, 9.2], big)})
    assert set(more["time_follows_work"]) == {"mr2 − pair"}
    assert more["time_follows_work"]["mr2 − pair"]["mean"] == pytest.approx(2.04)
    assert verdict("t5_time_follows_work", dict(more, conversion_seconds={})) == "held"
    less = readouts.time_follows_work({"pair": _conversions([9.0, 9.3, 8.8, 9.1, 9.2], small),
                                       "mr2": _conversions([7.0, 7.2, 6.9, 7.1, 7.0], big)})
    assert verdict("t5_time_follows_work", dict(less, conversion_seconds={})) == "contradicted"
    crossing = readouts.time_follows_work({"a": _conversions([1] * 5, [100, 200, 100, 200, 100]),
                                           "b": _conversions([2] * 5, [150] * 5)})
    assert crossing == {"time_follows_work": {}, "time_follows_work_pairs": 0}


def test_null_time_that_does_not_follow_work_is_not_held():
    """More work, the same time plus noise: never held."""
    base = 7.0 + _noise(0, sd=0.3)
    r = readouts.time_follows_work({"pair": _conversions(list(base), [6000] * 5),
                                    "mr2": _conversions(list(7.0 + _noise(1, sd=0.3)), [8000] * 5)})
    assert verdict("t5_time_follows_work", dict(r, conversion_seconds={})) in NOT_HELD


# --- null tests: A = B plus noise (no effect) over 5 seeds must never be "held" ---------------------

#: what a null may come out as: judged, and not held ("not judged" would pass without testing anything)
NOT_HELD = ("inconclusive", "contradicted")
NULL_TESTED = {"t5_time_follows_work", "t2_scaling_collapses", "t4_quad_near_chance_before", "t4_distillation_raises_mr2",
               "t4_distillation_raises_mrreg", "t4_distillation_raises_pair", "t4_freediv_gelu_kept",
               "t4_freediv_gelu_before", "fig5_sublinear", "fig7_quad_sublinear", "fig6_7_constants"}
SEEDS5 = [0, 1, 2, 3, 4]


def _noise(i, sd=0.02):
    return np.random.default_rng(100 + i).normal(0.0, sd, len(SEEDS5))


def test_null_scaling_at_the_threshold_is_not_held():
    after = {"2quad+quad": [0.70] * 5, "2quad_freediv+quad": [0.71] * 5,
             "scaling+quad": list(0.55 + _noise(0))}  # Scaling's accuracy = the 0.55 level plus noise
    r = readouts.tables2_6_schemes([0.71] * 5, _students(after, [0.5] * 5), COSTS, SEEDS5)
    assert verdict("t2_scaling_collapses", r) in NOT_HELD


def test_null_quad_students_at_the_chance_level_are_not_held():
    t = {"mr2": [{"metric": 0.7}] * 5}
    s = {"mr2": _table4({k: [(0.56 + e, 0.7) for e in _noise(i)] for i, k in enumerate(QUAD)})}
    assert verdict("t4_quad_near_chance_before", readouts.table4_5_tasks(t, s, SEEDS5)) in NOT_HELD


@pytest.mark.parametrize("task", ["mr2", "mrreg", "pair"])
def test_null_distillation_that_changes_nothing_is_not_held(task):
    t = {task: [{"metric": 0.7}] * 5}
    s = {task: _table4({k: [(b, b + e) for b, e in zip((0.60, 0.62, 0.58, 0.61, 0.59), _noise(i))]
                        for i, k in enumerate(QUAD)})}
    assert verdict(f"t4_distillation_raises_{task}", readouts.table4_5_tasks(t, s, SEEDS5)) in NOT_HELD


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
    r = readouts.table4_5_tasks(t, s, [0, 1, 2])
    assert r["freediv_gelu_minus_teacher"]["mr2"]["mean"] == pytest.approx(0.0)
    assert verdict("t4_freediv_gelu_kept", r) == "held" and verdict("t4_freediv_gelu_before", r) == "held"
    # 3 points below the teacher on every seed after distillation, 2 points before it: contradicted
    t, s = _freediv_gelu_tasks((-0.03, -0.031, -0.029), (-0.02, -0.021, -0.019))
    r = readouts.table4_5_tasks(t, s, [0, 1, 2])
    assert verdict("t4_freediv_gelu_kept", r) == "contradicted" and verdict("t4_freediv_gelu_before", r) == "contradicted"
    # a teacher at chance and a student beside it agree trivially: no distilled Quad student beats
    # chance either, and the gate (which reads those students, not the compared teacher) says so
    t, s = _freediv_gelu_tasks((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), metrics=(0.51, 0.52, 0.50), quad_after=0.50)
    r = readouts.table4_5_tasks(t, s, [0, 1, 2])
    assert r["quad_students_learned"] == {"mr2": False, "mrreg": True, "pair": False}  # mrreg: correlation 0.5 > 0.1
    assert verdict("t4_freediv_gelu_kept", r) == "not judged" and verdict("t4_freediv_gelu_before", r) == "not judged"
    # the gate does not read the teacher: a teacher below the learned level whose Quad students learned
    # is judged, and a student 3 points below it is contradicted, not hidden as "not judged"
    t, s = _freediv_gelu_tasks((-0.03, -0.031, -0.029), (-0.02, -0.021, -0.019), metrics=(0.54, 0.545, 0.55))
    r = readouts.table4_5_tasks(t, s, [0, 1, 2])
    assert r["teachers_learned"]["mr2"] is False and r["quad_students_learned"]["mr2"] is True
    assert verdict("t4_freediv_gelu_kept", r) == "contradicted" and verdict("t4_freediv_gelu_before", r) == "contradicted"


def test_null_freediv_gelu_at_the_margin_is_not_held():
    """Students at exactly the claim's margin below their teachers, plus noise, must not come out held."""
    base = (0.70, 0.72, 0.71, 0.69, 0.73)
    t, s = _freediv_gelu_tasks(list(-0.02 + _noise(0)), list(-0.01 + _noise(1)), n=5, metrics=base)
    r = readouts.table4_5_tasks(t, s, SEEDS5)
    assert verdict("t4_freediv_gelu_kept", r) in NOT_HELD
    assert verdict("t4_freediv_gelu_before", r) in NOT_HELD


def _fig_teacher(b_softmax=0.5, b_quad=0.8):
    return {"metric": 0.7, "const": {"softmax": (1.0, b_softmax), "2quad": (60.0, b_quad)},
            "const_per_head": {"softmax": ([[1.0, 1.1]], [[b_softmax, b_softmax + 0.1]]),
                               "2quad": ([[60.0, 61.0]], [[b_quad, b_quad + 0.05]])}}


EPS = {"max_abs": 0.02, "median_abs": 0.001, "max_rel": 0.054, "median_rel": 0.012, "entries": 100,
       "n_max": 48, "at_n_max": {"median_rel": 0.02}, "rows": 10, "rows_without_positive": 0, "eps": 0.01}
SPREAD = (0.0, 0.012, -0.015, 0.006, -0.003)  # five seeds' exponents about their mean


def _seed_teachers(b_softmax, b_quad, spread=SPREAD):
    return [_fig_teacher(b_softmax + e, b_quad + e) for e in spread]


def test_fig5_7_exponents_are_judged_across_the_seeds_teachers():
    ts = _seed_teachers(0.40, 0.80)
    r = readouts.fig5_7_denominators(ts[0], EPS, seed_teachers=ts)
    assert r["relu_eps"]["median_rel"] == 0.012 and r["quad2_b"] == 0.8
    assert r["quad2_b_by_seed"] == pytest.approx([0.8 + e for e in SPREAD])
    assert r["quad2_sublinear"]["n"] == 5 and r["quad2_sublinear"]["mean"] == pytest.approx(0.2 - np.mean(SPREAD))
    assert verdict("fig7_quad_sublinear", r) == "held" and verdict("fig5_sublinear", r) == "held"
    assert verdict("relu_eps_small", r) == "held"
    # one seed's teacher below 1 does not make the claim: b = 1 plus noise (the null: linear growth)
    # across the seeds, with the notebook seed's b at 0.99, is not held; b clearly above 1 contradicts
    ts = _seed_teachers(1.0, 1.0, spread=(-0.01, 0.03, -0.02, 0.02, -0.01))
    assert ts[0]["const"]["2quad"][1] == pytest.approx(0.99)
    r = readouts.fig5_7_denominators(ts[0], EPS, seed_teachers=ts)
    assert verdict("fig7_quad_sublinear", r) == "inconclusive" and verdict("fig5_sublinear", r) == "inconclusive"
    ts = _seed_teachers(0.40, 1.05)
    r = readouts.fig5_7_denominators(ts[0], dict(EPS, median_rel=0.2), seed_teachers=ts)
    assert verdict("fig7_quad_sublinear", r) == "contradicted" and verdict("relu_eps_small", r) == "contradicted"
    assert verdict("relu_eps_small", readouts.fig5_7_denominators(_fig_teacher())) == "not judged"
    # without the seeds' teachers there is no interval: not judged, never a one-teacher verdict
    assert verdict("fig7_quad_sublinear", readouts.fig5_7_denominators(_fig_teacher(), EPS)) == "not judged"


def test_fig6_7_constants_is_an_equivalence_on_both_exponents():
    from privtrans.mpc_attention.attention import PAPER_FITS

    ps, pq = PAPER_FITS["softmax"][1], PAPER_FITS["2quad"][1]
    ts = _seed_teachers(ps + 0.02, pq - 0.03)
    assert verdict("fig6_7_constants", readouts.fig5_7_denominators(ts[0], seed_teachers=ts)) == "held"
    # 2Quad's exponent 0.3 above the paper's: one one-sided interval lies below 0
    ts = _seed_teachers(ps, pq + 0.3)
    assert verdict("fig6_7_constants", readouts.fig5_7_denominators(ts[0], seed_teachers=ts)) == "contradicted"
    # at the tolerance's edge, plus noise: cannot tell
    ts = _seed_teachers(ps, pq + 0.1)
    assert verdict("fig6_7_constants", readouts.fig5_7_denominators(ts[0], seed_teachers=ts)) == "inconclusive"


def test_per_head_extension_pairs_the_seeds():
    a = _runs([(0.5, 0.70), (0.5, 0.72)])
    p = _runs([(0.5, 0.71), (0.5, 0.74)])
    r = readouts.per_head_extension(a, p)
    assert r["per_head_minus_all_layers"]["mean"] == pytest.approx(0.015)
    assert r["per_head_minus_all_layers"]["n"] == 2


def spu_rows(scale=1.0, err=1e-3):
    """Whole-model SPU rows: Softmax+GeLU costs 10x the converted model's rounds and bytes (x ``scale``)."""
    cost = {("softmax", "gelu"): (400, 4e6), ("2quad", "quad"): (90, 1.5e6), ("scaling", "quad"): (60, 1e6),
            ("2quad_freediv", "quad"): (40 * scale, 4e5 * scale)}
    return [{"attention": a, "activation": f, "rounds": r, "bytes": b, "protocol": "ABY3", "max_abs_err": err,
             "max_abs_plain": 2.0} for (a, f), (r, b) in cost.items()]


def test_spu_whole_model_readouts_and_claims(paper_on_lan):
    paper_on_lan(t2={f"{r['attention']}+{r['activation']}": (r["bytes"], r["rounds"]) for r in spu_rows()})
    r = readouts.spu_schemes(spu_rows())
    assert r["spu_link_table2"]["calibrated"] is True
    assert r["spu_best_speedup_lan"] == pytest.approx(10.0, rel=0.05)
    assert verdict("t3_speedup_spu_aby3", r) == "held"
    assert verdict("t6_faster_than_mpcformer_spu_aby3", r) == "held"
    assert verdict("spu_model_equals_plaintext", r) == "held"
    slow = readouts.spu_schemes(spu_rows(scale=6.0, err=0.5))  # converted model only 1.7x faster, off by 25 %
    assert verdict("t3_speedup_spu_aby3", slow) == "contradicted"
    rows = [dict(r, rounds=85, bytes=1.4e6) if (r["attention"], r["activation"]) == ("2quad_freediv", "quad") else r
            for r in spu_rows()]  # the converted model within 6 % of 2Quad + Quad: no gain of freeDiv's own
    assert verdict("t3_speedup_spu_aby3", readouts.spu_schemes(rows)) == "contradicted"
    assert verdict("t6_faster_than_mpcformer_spu_aby3", slow) == "contradicted"
    assert verdict("spu_model_equals_plaintext", slow) == "contradicted"
    assert readouts.spu_schemes([])["spu_best_speedup_lan"] is None


def test_lan_seconds_is_rounds_times_rtt_plus_bytes_over_bandwidth():
    from privtrans.shared.mpc.network import LINKS

    lan = LINKS["LAN"]
    got = readouts.lan_seconds({"rounds": 10, "bytes": 1e6})
    assert got == pytest.approx(10 * lan["rtt"] + 1e6 / lan["bandwidth"])
    assert readouts.lan_seconds({"rounds": 0, "bytes": 0}) == 0


def spu_table1(freediv_rounds=5, freediv_lan=0.1):
    """Table 1 SPU rows at n = 16, 32: the freeDiv variants at ``freediv_rounds`` and ``freediv_lan`` s."""
    base = {"softmax": (20, 4e4, 0.3), "2quad": (10, 2e4, 0.2), "2relu": (12, 3e4, 0.25), "scaling": (1, 1e3, 0.01),
            "softmax_freediv": (freediv_rounds, 1e4, freediv_lan), "2quad_freediv": (freediv_rounds, 1e4, freediv_lan)}
    return pd.DataFrame([{"protocol": "ABY3", "n": n, "variant": v, "rounds": r, "bytes": b * n / 16, "LAN s": s * n / 16,
                          "max_abs_error": 1e-3} for n in (16, 32) for v, (r, b, s) in base.items()])


def test_table1_spu_readout_and_its_claims():
    r = readouts.table1_spu(spu_table1())
    assert r["spu_freediv_cheaper_aby3"] and r["spu_all_cheaper_than_softmax_aby3"]
    assert r["spu_softmax_freediv_beats_2quad_aby3"]
    assert r["spu_lan_speedup_aby3"]["2quad"] == pytest.approx(1.5)
    assert r["spu_softmax_freediv_over_2quad_lan_aby3"] == {16: pytest.approx(0.5), 32: pytest.approx(0.5)}
    assert verdict("t1_freediv_cheaper_spu_aby3", r) == "held"
    # freeDiv as many rounds as Softmax: not cheaper; slower than 2Quad: does not beat it
    worse = readouts.table1_spu(spu_table1(freediv_rounds=20, freediv_lan=0.25))
    assert not worse["spu_freediv_cheaper_aby3"] and not worse["spu_softmax_freediv_beats_2quad_aby3"]
    assert verdict("t1_freediv_cheaper_spu_aby3", worse) == "contradicted"


def test_teacher_metrics_table_per_task_and_seed():
    teachers = {"mr2": [{"metric": 0.8, "seconds": 10.0, "cfg": {"n_out": 2}}, {"metric": 0.7, "seconds": 12.0, "cfg": {"n_out": 2}}],
                "mrreg": [{"metric": 0.3, "seconds": 5.0, "cfg": {"n_out": 1}}, {"metric": 0.5, "seconds": 7.0, "cfg": {"n_out": 1}}]}
    out = readouts.teacher_metrics(teachers, [4, 5])
    assert out["by_task"] == {"mr2": [0.8, 0.7], "mrreg": [0.3, 0.5]}
    r = {row["task"]: row for row in out["rows"]}
    assert r["mr2"]["metric"] == "accuracy" and r["mrreg"]["metric"] == "correlation"
    assert r["mr2"]["mean"] == pytest.approx(0.75) and r["mr2"]["sd"] == pytest.approx(np.std([0.8, 0.7], ddof=1))
    assert r["mr2"]["seed 5"] == 0.7 and r["mrreg"]["seconds (mean)"] == pytest.approx(6.0)
    with pytest.raises(ValueError, match="task 'mr2': 2 teachers for 3 seeds"):
        readouts.teacher_metrics(teachers, [4, 5, 6])


def test_table1_every_replacement_below_softmax_at_every_n(paper_on_lan):
    paper_on_lan(t1=T1)
    r = readouts.table1_attention_cost(table(), closed())
    w = r["worst_lan_over_softmax_2pc"]
    assert set(w) == {"relu2", "quad2", "scaling", "softmax_freediv", "quad2_freediv"}
    lan = {v: ROUNDS[v] * 2e-4 + BYTES[v] / 1.25e9 for v in ROUNDS}
    assert w["softmax_freediv"] == pytest.approx(lan["softmax_freediv"] / lan["softmax"])
    assert verdict("t1_all_cheaper_than_softmax", r) == "held"
    # 2ReLU slower than Softmax at one n of two (the shorter; the link is fitted at the longest):
    # the worst ratio is above 1, contradicted
    df = table()
    slow = (df.parties == 2) & (df.n == 16) & (df.variant == "2relu")
    df.loc[slow, ["rounds", "bytes"]] = [1.2 * ROUNDS["softmax"], 1.2 * BYTES["softmax"]]
    r = readouts.table1_attention_cost(df, closed())
    assert r["worst_cal_over_softmax_2pc"]["relu2"] == pytest.approx(1.2)
    assert verdict("t1_all_cheaper_than_softmax", r) == "contradicted"


def test_table1_spu_every_n_claims(paper_on_lan):
    df = spu_table1()
    paper_on_lan(t1={v: (float(df[(df.n == 32) & (df.variant == v)].bytes.iloc[0]),
                         float(df[(df.n == 32) & (df.variant == v)].rounds.iloc[0])) for v in ROUNDS})
    r = readouts.table1_spu(df)
    assert r["spu_link_aby3"]["calibrated"] is True
    assert r["spu_max_softmax_freediv_over_2quad_lan_aby3"] == pytest.approx(0.5)
    assert verdict("t1_all_cheaper_than_softmax_spu_aby3", r) == "held"
    assert verdict("t1_softmax_freediv_beats_2quad_spu_aby3", r) == "held"
    # judged at the largest n on the calibrated link: freeDiv's counts above 2Quad's at n = 32
    worse = df.copy()
    at = (worse.n == 32) & (worse.variant == "softmax_freediv")
    worse.loc[at, ["rounds", "bytes"]] = [25, 4e4]
    w = readouts.table1_spu(worse)
    assert w["spu_softmax_freediv_over_2quad_cal_aby3"] > 1
    assert verdict("t1_softmax_freediv_beats_2quad_spu_aby3", w) == "contradicted"
    # above Softmax's own counts at the shorter n: not faster than Softmax at every n
    slower = df.copy()
    slower.loc[(slower.n == 16) & (slower.variant == "2quad_freediv"), ["rounds", "bytes"]] = [40, 8e4]
    assert verdict("t1_all_cheaper_than_softmax_spu_aby3", readouts.table1_spu(slower)) == "contradicted"


def test_tables2_6_gates_read_an_arm_the_claim_does_not_compare():
    after = {"2quad+quad": [0.70, 0.72, 0.69], "scaling+quad": [0.50, 0.51, 0.52],
             "2quad_freediv+quad": [0.712, 0.721, 0.701]}
    # teachers at chance: every student at chance "collapses" trivially, so Scaling's claim is not judged
    chance = [0.50, 0.51, 0.49]
    flat = {**after, "2quad+quad": [0.50, 0.50, 0.51], "2quad_freediv+quad": [0.50, 0.51, 0.49]}
    r = readouts.tables2_6_schemes(chance, _students(flat), COSTS, [0, 1, 2])
    assert r["teacher_learned"] is False and r["others_learned"] is False
    assert verdict("t2_scaling_collapses", r) == "not judged"
    # the converted model beside a teacher at chance agrees with it trivially: not judged, by the other students
    assert verdict("t3_accuracy_kept", r) == "not judged"
    # the gate of t3 does not read the teacher it compares: other students that learned let a student
    # far from its teacher be contradicted
    far = {**after, "2quad_freediv+quad": [0.55, 0.56, 0.54]}
    r = readouts.tables2_6_schemes(TEACHERS, _students(far), COSTS, [0, 1, 2])
    assert r["others_learned"] is True and verdict("t3_accuracy_kept", r) == "contradicted"


def test_tables2_6_and_table4_keep_every_planned_seed():
    # the converted model's seed 2 lost (NaN): its intervals keep 3 planned, 2 paired, and are not held
    after = {"2quad+quad": [0.70, 0.72, 0.69], "scaling+quad": [0.50, 0.51, 0.52],
             "2quad_freediv+quad": [0.712, 0.721, float("nan")]}
    r = readouts.tables2_6_schemes(TEACHERS, _students(after), COSTS, [0, 1, 2])
    cell = r["kept_within"]["student − teacher"]
    assert cell["n"] == 2 and cell["planned"] == 3 and r["best_minus_teacher"] is None
    assert verdict("t3_accuracy_kept", r) in NOT_HELD
    # one value too few is an error, never a shorter pairing
    short = {**after, "2quad_freediv+quad": [0.712, 0.721]}
    with pytest.raises(ValueError, match="2quad_freediv\\+quad after distillation: 2 values for the 3 planned seeds"):
        readouts.tables2_6_schemes(TEACHERS, _students(short), COSTS, [0, 1, 2])
    # Table 4: a student seed lost after distillation is counted in "raises"
    t = {"mr2": [{"metric": 0.7}] * 3}
    pairs = {k: [(0.5, 0.70), (0.52, 0.71), (0.51, float("nan"))] for k in QUAD}
    r = readouts.table4_5_tasks(t, {"mr2": _table4(pairs)}, [0, 1, 2])
    assert all(c["n"] == 2 and c["planned"] == 3 for c in r["raises"]["mr2"].values())
    assert verdict("t4_distillation_raises_mr2", r) in NOT_HELD
    with pytest.raises(ValueError, match="task 'mr2': teachers: 3 values for the 2 planned seeds"):
        readouts.table4_5_tasks(t, {"mr2": _table4({k: [(0.5, 0.7)] * 2 for k in QUAD})}, [0, 1])
    with pytest.raises(ValueError, match="no teachers"):
        readouts.table4_5_tasks({}, {"mr2": _table4(pairs)}, [0, 1, 2])


def test_the_papers_numbers_are_every_value_a_predicate_reads():
    from privtrans.book import trials

    with_inputs = [c for c in CLAIMS.values() if c["kind"] == "reproduction" and "predicate" in c]
    assert with_inputs and all(c.get("paper_inputs") and c.get("exact") for c in with_inputs)
    for c in with_inputs:
        env = claims.paper_env("mpc_attention", c)
        assert set(trials.read_paths(c["predicate"], env)) <= set(c["paper_inputs"]), c["id"]
        assert claims.truth(c["predicate"], env), c["id"]


def test_gated_claims_never_gate_on_an_arm_they_compare():
    for c in CLAIMS.values():
        if c.get("precondition"):
            assert not set(c["compares"]) & set(c["gate_reads"]), c["id"]
            # the teacher is compared by the claims that keep its accuracy: their gates read students
            if "teacher" in " ".join(c["compares"]):
                assert "teacher" not in c["precondition"], c["id"]
    assert CLAIMS["t2_scaling_collapses"]["precondition"] == "tables2_6_schemes.teacher_learned"
