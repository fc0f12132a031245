"""privtrans.mpc_attention.readouts as a whole: the claims' predicates read only what the readouts record, and
NULL_TESTED lists every comparison the per-module test files feed a null through its readout
(tests/test_claims.py requires the list complete)."""

from __future__ import annotations

from privtrans.book import claims

from mpc_attention_readout_inputs import CLAIMS


# every null-tested claim: its readout is fed A = B plus noise in tests/test_mpc_attention_readouts_*.py;
# tests/test_claims.py requires the list to be complete
NULL_TESTED = {"t5_time_follows_work", "t2_scaling_collapses", "t4_quad_near_chance_before", "t4_distillation_raises_mr2",
               "t4_distillation_raises_mrreg", "t4_distillation_raises_pair", "t4_freediv_gelu_kept",
               "t4_freediv_gelu_before", "fig5_sublinear", "fig7_quad_sublinear", "fig6_7_constants"}


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
