"""privtrans.book.budgets: every comparison states what each arm was tuned over, and its arms got the
same budget at every profile unless the claim says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from privtrans.book import budgets, claims
from privtrans.book.chapters import KEYS

from conftest import claims_file_error

ROOT = Path(__file__).resolve().parents[1]

def reproductions(chapter):
    return [c for c in claims.load(chapter, ROOT)["claims"] if c["kind"] == "reproduction"]


@pytest.mark.parametrize("chapter", KEYS)
def test_every_comparison_gives_its_arms_the_same_budget_or_says_why(chapter):
    """Each reproduction states its arms' budgets (or why it compares no trained or tuned arm); arms
    whose grid size, validation seeds or training differ at any profile need ``budgets.unequal``, and
    an ``unequal`` on equal budgets is stale."""
    missing = [c["id"] for c in reproductions(chapter) if "budgets" not in c]
    assert not missing, f"{chapter}: reproductions without budgets: {missing}"
    bad = {c["id"]: p for c in reproductions(chapter) if (p := budgets.problems(chapter, c))}
    assert not bad, bad


def _claim(**arms):
    return {"id": "x", "budgets": {"arms": arms}}


def _arm(steps, lr="profile:table3_seeds.student.lr"):
    return {"grid": {"lr": lr}, "training": {"steps": steps}}


def test_unequal_training_without_a_reason_is_caught_and_a_stale_reason_refused():
    """MERGE's students against a teacher's budget (smoke: 10 student steps, 20 teacher steps), read
    from the chapter's real profile table."""
    c = _claim(MERGE=_arm("profile:table3_seeds.student.steps"), MPCformer=_arm("profile:table3_seeds.teacher.steps"))
    p = budgets.problems("merge", c)
    assert len(p) == 1 and "does not say why" in p[0] and "at profile smoke: training" in p[0]
    assert "MERGE steps 10; MPCformer steps 20" in p[0]
    c["budgets"]["unequal"] = "the teacher is trained from scratch"
    assert budgets.problems("merge", c) == []
    same = _claim(MERGE=_arm("profile:table3_seeds.student.steps"), MPCformer=_arm("profile:table3_seeds.distill.steps"))
    assert budgets.problems("merge", same) == []
    same["budgets"]["unequal"] = "stale"
    assert "equal at every profile" in budgets.problems("merge", same)[0]


def test_a_searched_grid_counts_its_settings_and_needs_its_validation_data_and_seeds():
    c = _claim(A={"grid": {"lr": [1e-4, 1e-3, 1e-2], "wd": [0.0, 0.1]}, "training": "t"},
               B={"grid": {"lr": [1e-3]}, "training": "t"})
    arms = budgets.resolve("merge", c["budgets"], "ci")
    assert arms["A"]["size"] == 6 and arms["B"]["size"] == 1
    p = budgets.problems("merge", c, profiles=("ci",))
    assert any("searches 6 settings" in x for x in p) and any("grid size: A 6; B 1" in x for x in p)
    c["budgets"]["arms"]["A"].update(tuned_on="the shards", seeds=[100, 101])
    c["budgets"]["arms"]["B"]["grid"]["lr"] = [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0]
    c["budgets"]["arms"]["B"].update(tuned_on="the shards", seeds=[100, 101])
    assert budgets.problems("merge", c, profiles=("ci",)) == []  # same size, different values: equal
    assert "searched lr ∈ {0.0001, 0.001, 0.01} × wd ∈ {0, 0.1} (6 settings) on the shards" in \
        budgets.describe(budgets.resolve("merge", c["budgets"], "ci")["A"])


def test_a_reference_that_names_no_experiment_is_an_error_and_a_missing_key_the_default():
    bad = _claim(A=_arm("profile:no_such_experiment.steps"), B=_arm(1))
    assert "no experiment 'no_such_experiment'" in budgets.problems("merge", bad, profiles=("ci",))[0]
    # smoke sets no learning rate for the students: the code's default, the same for both arms
    arms = budgets.resolve("merge", _claim(A=_arm(1), B=_arm(1))["budgets"], "smoke")
    assert arms["A"]["grid"]["lr"] is None and budgets.DEFAULT in budgets.describe(arms["A"])


def test_the_schema_refuses_malformed_budgets(tmp_path):
    base = ("  - {id: a, paper_item: F, kind: reproduction, quote: q, where: w, statement: s, paper_value: 1, "
            "notebook: nb, value: nb.x, predicate: nb.x, exact: c, ")

    def problems(extra):
        return claims_file_error(tmp_path, "claims:\n" + base + extra + "}\n")

    assert "budgets without arms" in problems("budgets: {unequal: x}")
    assert "unknown budgets field(s) ['why']" in problems("budgets: {why: x, arms: {A: {grid: {}, training: t}}}")
    assert "no training in arm 'A'" in problems("budgets: {arms: {A: {grid: {}}}}")
    assert "unknown field(s) ['steps'] in arm 'A'" in problems("budgets: {arms: {A: {grid: {}, training: t, steps: 3}}}")
    assert "a grid maps each hyper-parameter" in problems("budgets: {arms: {A: {grid: [1, 2], training: t}}}")
    assert "empty budgets sentence" in problems("budgets: ' '")


def test_the_chapter_page_says_per_table_what_each_arm_was_tuned_over():
    text = budgets.markdown("merge", claims.load("merge", ROOT)["claims"], "ci")
    assert "| Table 3 | `table3_merge_close_to_mpcformer` | MPCformer (sf2relu) | not tuned; fixed lr 0.001, batch 32; " \
           "training: steps 400" in text
    assert "*unequal*" in text and "Claims that compare no trained or tuned arms" in text


def test_a_one_value_grid_reads_as_fixed_not_searched():
    arm = {"grid": {"lr": [0.01]}, "size": 1, "tuned_on": "x", "seeds": 1, "training": "t"}
    text = budgets.describe(arm)
    assert text.startswith("not tuned") and "fixed lr 0.01" in text, text
    arm = {"grid": {"lr": [0.01, 0.1]}, "size": 2, "tuned_on": "x", "seeds": 1, "training": "t"}
    assert budgets.describe(arm).startswith("searched lr ∈ {0.01, 0.1} (2 settings)")
