"""Every chapter's claims file against the schema, the paper's own numbers, and the null tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from privtrans.book import claims
from privtrans.book.chapters import KEYS
from privtrans.book.paper_values import PaperValueError, lookup

ROOT = Path(__file__).resolve().parents[1]


def all_claims():
    """Every claim of the chapters whose files load (a file that does not fails the schema test)."""
    out = []
    for ch in KEYS:
        try:
            out += [(ch, c) for c in claims.load(ch, ROOT)["claims"]]
        except claims.ClaimsFileError:
            pass
    return out


@pytest.mark.parametrize("chapter", KEYS)
def test_every_claims_file_follows_the_schema(chapter):
    """Quotes and where on every reproduction, one test per claim, no pre-written outcome."""
    doc = claims.load(chapter, ROOT)  # raises ClaimsFileError naming the claim and the field
    for c in doc["claims"]:
        assert "why_not" not in c and "why_held" not in c
        if c["kind"] == "reproduction":
            assert claims.quotes(c) and c["where"], c["id"]


@pytest.mark.parametrize("chapter,claim", [(ch, c) for ch, c in all_claims() if c.get("paper_test")],
                         ids=lambda x: x["id"] if isinstance(x, dict) else x)
def test_the_paper_passes_our_test_of_its_own_claim(chapter, claim):
    """The claim's condition on the paper's own tabulated point values (taken as exact) holds."""
    verdict, reason = claims.paper_self_test(chapter, claim, ROOT)
    assert verdict == "held", f"{chapter}/{claim['id']}: the paper fails its own claim: {reason}"


def test_a_paper_test_that_the_paper_fails_is_caught(tmp_path):
    d = tmp_path / "data" / "dp_icl"
    d.mkdir(parents=True)
    (d / "paper_tables.csv").write_text("table,method,value\nT1,ours,80.0\nT1,theirs,81.0\n")
    c = {"id": "x", "interval": "nb.d", "margin": 0.0,
         "paper_test": "P('paper_tables', table='T1', method='ours') - P('paper_tables', table='T1', method='theirs')"}
    assert claims.paper_self_test("dp_icl", c, tmp_path)[0] == "contradicted"
    assert claims.paper_self_test("dp_icl", dict(c, margin=-2.0), tmp_path)[0] == "held"
    with pytest.raises(PaperValueError, match="0 rows match"):
        lookup("dp_icl", tmp_path)("paper_tables", table="T2")
    with pytest.raises(PaperValueError, match="allowed values are paper_tables"):
        lookup("dp_icl", tmp_path)("nope")


def _readout_tests(chapter):
    path = ROOT / "tests" / f"test_{chapter}_readouts.py"
    spec = importlib.util.spec_from_file_location(f"_readouts_{chapter}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("chapter", KEYS)
def test_every_comparison_has_a_null_test(chapter):
    """Each "A beats B" claim (an interval against a margin >= 0) is fed A = B plus noise through its
    readout in the chapter's readout tests, which list it in NULL_TESTED."""
    comparisons = {c["id"] for c in claims.load(chapter, ROOT)["claims"]
                   if "interval" in c and c["margin"] >= 0}
    covered = set(getattr(_readout_tests(chapter), "NULL_TESTED", set()))
    assert comparisons <= covered, f"{chapter}: no null test for {sorted(comparisons - covered)}"
    unknown = covered - {c["id"] for c in claims.load(chapter, ROOT)["claims"]}
    assert not unknown, f"{chapter}: NULL_TESTED names claims that do not exist: {sorted(unknown)}"


def test_the_schema_refuses_what_a_reviewer_would_not_sign(tmp_path):
    d = tmp_path / "data" / "dp_icl"
    d.mkdir(parents=True)
    base = ("  - {id: a, paper_item: F, kind: reproduction, quote: q, where: w, statement: s, paper_value: 1, "
            "notebook: nb, value: nb.x, ")

    def problems(extra):
        (d / "claims.yaml").write_text("claims:\n" + base + extra + "}\n")
        with pytest.raises(claims.ClaimsFileError) as e:
            claims.load("dp_icl", tmp_path)
        return str(e.value)

    assert "unknown field(s) ['why_not']" in problems("predicate: nb.x, why_not: 'too small'")
    assert "exactly one of predicate, interval" in problems("predicate: nb.x, interval: nb.d, margin: 0")
    assert "exactly one of predicate, interval" in problems("margin: 0")
    assert "no numeric margin" in problems("interval: nb.d")
    assert "need 'most'" in problems("interval: nb.d, margin: 0, need: most")
    assert "reading but no reading_value" in problems("predicate: nb.x, reading: 'under-trained'")
    assert "applies to interval claims only" in problems("predicate: nb.x, margin: 0")
    assert "without the paper's words" in problems("predicate: nb.x, quote: ''")


def test_the_table_shows_the_verdict_once_and_the_computed_reason_beside_it():
    from privtrans.book.claims import _without_verdict

    assert _without_verdict("held (mean difference +0.01 [-0.01, +0.03] (95%, n = 3) clears the margin -0.02)",
                            "held") == "mean difference +0.01 [-0.01, +0.03] (95%, n = 3) clears the margin -0.02"
    assert _without_verdict("held: x = 1 > 0 (true)", "held") == "x = 1 > 0 (true)"
    assert _without_verdict("contradicted: the data exclude the claim (a); b", "contradicted") == \
        "the data exclude the claim (a); b"


def test_every_claim_row_has_an_anchor_and_links_the_notebook_that_recorded_it(tmp_path):
    from privtrans.book.claims import markdown_table
    from privtrans.book.pipeline.report import executed_docs

    nb = tmp_path / "book" / "_executed" / "taft"
    nb.mkdir(parents=True)
    (nb / "02_table1_finetuning.ipynb").write_text("{}")
    ran = {("taft", "table1_finetuning")}
    assert executed_docs(tmp_path, "taft", ran) == {"table1_finetuning": "/book/_executed/taft/02_table1_finetuning"}
    assert executed_docs(tmp_path, "taft", set()) == {}  # did not run here: no link
    assert "cost" not in executed_docs(tmp_path, "taft", {("taft", "cost")})  # no such notebook
    row = {"id": "x1", "kind": "reproduction", "paper_item": "Table 1", "quote": ["q"], "where": "§1",
           "statement": "s", "paper_value": 1, "value": 2, "verdict": "held", "reason": "held: 2 > 1 (true)",
           "recorded_in": "/book/_executed/taft/02_table1_finetuning"}
    table = markdown_table([row], "ci")
    assert '<a id="claim-x1"></a>Table 1' in table
    assert "{doc}`02_table1_finetuning </book/_executed/taft/02_table1_finetuning>`" in table
    assert "recorded by" not in markdown_table([{**row, "recorded_in": None}], "ci")
