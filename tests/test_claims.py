"""privtrans.book.claims: every chapter's claims file against the schema, the paper's own numbers and the null
tests; claims judged in a book root of their own, with computed reasons, and the claims page the pipeline's
report writes from them (stale results, the stability build)."""

from __future__ import annotations

import csv
import importlib.util
import json
import re
from pathlib import Path

import pytest

from privtrans.book import claims, claims_page, paper_values
from privtrans.book.chapters import KEYS
from privtrans.book.paper_values import PaperValueError, lookup

from conftest import claims_file_error


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
        if c["kind"] in claims.QUOTED:
            assert claims.quotes(c) and c["where"], c["id"]


@pytest.mark.parametrize("chapter,claim", [(ch, c) for ch, c in all_claims() if claims.has_paper_numbers(c)],
                         ids=lambda x: x["id"] if isinstance(x, dict) else x)
def test_the_paper_passes_our_test_of_its_own_claim(chapter, claim):
    """The claim's own test on the paper's own tabulated point values (taken as exact) holds: an interval
    claim's paper differences against its margin or band, a predicate claim's own predicate on the
    paper's numbers (``paper_inputs``). Where it does not, the claim states an ``erratum`` (the paper's
    numbers do not support its sentence), shown on the page beside the computed arithmetic; an
    erratum on a claim the paper passes is stale and fails here too."""
    verdict, reason = claims.paper_self_test(chapter, claim, ROOT)
    if claim.get("erratum"):
        assert verdict != "held", f"{chapter}/{claim['id']}: states an erratum, but the paper passes: {reason}"
    else:
        assert verdict == "held", f"{chapter}/{claim['id']}: the paper fails its own claim (no erratum): {reason}"


def test_an_erratum_is_shown_as_the_papers_with_its_arithmetic(tmp_path):
    d = tmp_path / "data" / "dp_icl"
    d.mkdir(parents=True)
    (d / "paper_tables.csv").write_text("table,method,value\nT1,ours,1.2\n")
    base = ("claims:\n  - {id: e, paper_item: F, kind: reproduction, quote: q, where: w, statement: s, "
            "paper_value: 1, notebook: nb, value: nb.x, predicate: 'nb.x >= 1.7', exact: 'a ratio', "
            "paper_inputs: {nb.x: \"P('paper_tables', table='T1', method='ours')\"}")
    (d / "claims.yaml").write_text(base + "}\n")
    assert any("no erratum" in p for p in claims.lint("dp_icl", tmp_path))
    (d / "claims.yaml").write_text(base + ", erratum: 'its own figure gives 1.2'}\n")
    assert claims.lint("dp_icl", tmp_path) == []
    doc = claims.load("dp_icl", tmp_path)
    rows = claims.evaluate("dp_icl", doc, {"nb": {"profile": "ci", "values": {"x": 2.0}}}, "ci", tmp_path)
    assert rows[0]["verdict"] == "held" and rows[0]["paper_self_test"] == "contradicted"
    page = claims_page.markdown_table(rows, "ci")
    assert "Erratum of the paper" in page and "its own figure gives 1.2" in page and "nb.x = 1.2 >= 1.7" in page
    (d / "paper_tables.csv").write_text("table,method,value\nT1,ours,1.8\n")
    paper_values._rows.cache_clear()  # the same path, new contents
    assert any("but the paper passes its own claim" in p for p in claims.lint("dp_icl", tmp_path))


def test_an_explanation_names_an_allowed_kind_and_is_shown_only_with_its_recorded_value(tmp_path):
    """``explanation`` (the discrepancies appendix groups by it): scale needs the recorded value that
    shows it and is shown only when this build recorded it; statement needs the claim's deviation."""
    d = tmp_path / "data" / "dp_icl"
    d.mkdir(parents=True)
    base = ("claims:\n  - {id: e, paper_item: F, kind: reproduction, quote: q, where: w, statement: s, "
            "paper_value: 1, notebook: nb, value: nb.x, predicate: 'nb.x >= 1.7', exact: 'a ratio', ")

    def problems(extra):
        return claims_file_error(tmp_path, base + extra + "}\n")

    assert "kind 'luck'; allowed values are scale, statement" in problems("explanation: {kind: luck}")
    assert "stated in the claim's erratum field" in problems("explanation: {kind: erratum}")
    assert "without evidence" in problems("explanation: {kind: scale, why: small}")
    assert "without why" in problems("explanation: {kind: scale, evidence: nb.n}")
    assert "no deviation saying how" in problems("explanation: {kind: statement}")
    assert "unknown explanation field(s) ['value']" in problems("explanation: {kind: statement, value: 3}")
    (d / "claims.yaml").write_text(base + "explanation: {kind: scale, why: 'a 50k-parameter block', "
                                          "evidence: nb.n_params}}\n")
    doc = claims.load("dp_icl", tmp_path)
    res = {"nb": {"profile": "ci", "values": {"x": 1.0, "n_params": 50312}}}
    row = claims.evaluate("dp_icl", doc, res, "ci", tmp_path)[0]
    assert row["verdict"] == "contradicted" and row["explanation"]["evidence_value"] == 50312
    assert "Explained by our stand-in's scale: a 50k-parameter block (recorded: 50312)" in claims_page.markdown_table([row], "ci")
    del res["nb"]["values"]["n_params"]  # not recorded in this build: not shown
    row = claims.evaluate("dp_icl", doc, res, "ci", tmp_path)[0]
    assert "evidence_value" not in row["explanation"] and "n_params" in row["explanation"]["evidence_error"]
    assert "Explained by" not in claims_page.markdown_table([row], "ci")


def test_a_paper_test_that_the_paper_fails_is_caught(tmp_path):
    d = tmp_path / "data" / "dp_icl"
    d.mkdir(parents=True)
    (d / "paper_tables.csv").write_text("table,method,value\nT1,ours,80.0\nT1,theirs,81.0\n")
    c = {"id": "x", "interval": "nb.d", "margin": 0.0,
         "paper_test": "P('paper_tables', table='T1', method='ours') - P('paper_tables', table='T1', method='theirs')"}
    assert claims.paper_self_test("dp_icl", c, tmp_path)[0] == "contradicted"
    assert claims.paper_self_test("dp_icl", dict(c, margin=-2.0), tmp_path)[0] == "held"
    # a predicate claim: the paper's numbers become the values its own predicate reads, all of them
    p = {"id": "y", "predicate": "nb.ours > nb.theirs and nb.n >= 1", "exact": "x",
         "paper_inputs": {"nb.ours": "P('paper_tables', table='T1', method='theirs')",
                          "nb.theirs": "P('paper_tables', table='T1', method='ours')", "nb.n": "2"}}
    verdict, reason = claims.paper_self_test("dp_icl", p, tmp_path)
    assert verdict == "held" and reason.startswith("on the paper's numbers: held: nb.ours = 81 > nb.theirs = 80")
    partial = dict(p, paper_inputs={k: v for k, v in p["paper_inputs"].items() if k != "nb.n"})
    with pytest.raises(claims.EVAL_ERRORS):  # a value the paper does not give cannot be assumed
        claims.paper_self_test("dp_icl", partial, tmp_path)
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
    """Each "A beats B" claim (an interval against a margin >= 0, or a size band) is fed A = B plus noise
    through its readout in the chapter's readout tests, which list it in NULL_TESTED (the trials run the
    claim's own test on a null too, beyond its readout)."""
    comparisons = {c["id"] for c in claims.load(chapter, ROOT)["claims"]
                   if "interval" in c and ("band" in c or c["margin"] >= 0)}
    covered = set(getattr(_readout_tests(chapter), "NULL_TESTED", set()))
    assert comparisons <= covered, f"{chapter}: no null test for {sorted(comparisons - covered)}"
    unknown = covered - {c["id"] for c in claims.load(chapter, ROOT)["claims"]}
    assert not unknown, f"{chapter}: NULL_TESTED names claims that do not exist: {sorted(unknown)}"


def test_the_schema_refuses_what_a_reviewer_would_not_sign(tmp_path):
    base = ("  - {id: a, paper_item: F, kind: reproduction, quote: q, where: w, statement: s, paper_value: 1, "
            "notebook: nb, value: nb.x, ")

    def problems(extra):
        return claims_file_error(tmp_path, "claims:\n" + base + extra + "}\n")

    assert "unknown field(s) ['why_not']" in problems("predicate: nb.x, exact: c, why_not: 'too small'")
    assert "exactly one of predicate, interval" in problems("predicate: nb.x, interval: nb.d, margin: 0")
    assert "exactly one of predicate, interval" in problems("margin: 0")
    assert "no numeric margin" in problems("interval: nb.d")
    assert "need 'most'" in problems("interval: nb.d, margin: 0, need: most")
    assert "reading but no reading_value" in problems("predicate: nb.x, exact: c, reading: 'under-trained'")
    assert "applies to interval claims only" in problems("predicate: nb.x, exact: c, margin: 0")
    assert "without the paper's words" in problems("predicate: nb.x, quote: '', exact: 'a count'")
    # a predicate reproduction is deterministic, says why, and runs the paper's numbers through itself
    assert "without `exact`" in problems("predicate: nb.x > 1")
    assert "paper_inputs)" in problems("predicate: nb.x > 1, exact: 'a count', paper_test: 'True'")
    assert "not a mapping of recorded values" in problems("predicate: nb.x > 1, exact: c, paper_inputs: {x: '1'}")
    # a size claim is judged against a band, not a margin too
    assert "both a margin and a band" in problems("interval: nb.d, margin: 0, band: [0.1, 0.3]")
    assert "a band is [low, high]" in problems("interval: nb.d, band: [0.3, 0.1]")
    assert "lost_seeds 'ignore'" in problems("interval: nb.d, margin: 0, lost_seeds: ignore")
    # a gate says what it reads and what the claim compares, and they differ
    assert "without compares" in problems("interval: nb.d, margin: 0, precondition: nb.ok")
    assert "reads the arms it gates: ['B']" in problems(
        "interval: nb.d, margin: 0, precondition: nb.ok, compares: [A, B], gate_reads: [B]")
    assert "reads what the claim compares: ['nb.d']" in problems(
        "interval: nb.d, margin: 0, precondition: 'nb.d.n > 2', compares: [A, B], gate_reads: [C]")


# ------------------------------------------------------------------------------------ the paper's numbers
_NUMBER = re.compile(r"(?<![\w.§])[-−+]?\d+\.\d+(?:e[-+−]?\d+)?")
_REFERENCE = re.compile(r"(?:§|Thm\.? |Theorem |Eq\.? |Sec\.? |App\.? |Appendix |Table |Figure |Fig\. |Claim |C\.)\s*$")


def file_numbers(chapter: str) -> set[float]:
    out = set()
    for f in (ROOT / "data" / chapter).glob("*.csv"):
        for row in csv.reader(f.open()):
            for x in row:
                try:
                    out.add(float(x))
                except ValueError:
                    pass
    return out


def _clauses(text: str) -> list[str]:
    """``text`` split at the semicolons outside parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == ";" and depth == 0:
            out.append(text[start:i])
            start = i + 1
    return out + [text[start:]]


def unsourced_numbers(text: str, numbers: set[float]) -> list[str]:
    """Decimal numbers of a paper_value text found in none of the chapter's data files (as printed, or
    as a percentage of a fraction there). Arithmetic on them is exempt where it says so: a clause that
    says "derived" before its first number, or a parenthesis that says "derived"; so are section and
    equation references (§4.2, (5.3))."""
    out = []
    for clause in _clauses(str(text)):
        first = _NUMBER.search(clause)
        if "derived" in clause[:first.start() if first else len(clause)]:
            continue
        while True:  # innermost parentheses that say "derived" hold arithmetic, not cited numbers
            new = re.sub(r"\([^()]*derived[^()]*\)", " ", clause)
            if new == clause:
                break
            clause = new
        clause = re.sub(r"\(\d+\.\d+\)", " ", clause)  # an equation number
        for m in _NUMBER.finditer(clause):
            if _REFERENCE.search(clause[:m.start()]):
                continue
            token = m.group().replace("−", "-")
            x = abs(float(token))
            digits = len(token.split(".")[1].split("e")[0])
            tol = 0.5 * 10 ** -digits * (10 ** int(token.split("e")[1]) if "e" in token else 1) + 1e-12
            if not any(min(abs(abs(v) - x), abs(100 * abs(v) - x), 100 * abs(abs(v) / 100 - x)) <= tol
                       for v in numbers):
                out.append(m.group())
    return out


@pytest.mark.parametrize("chapter", KEYS)
def test_every_paper_value_shown_is_read_from_the_cited_files(chapter):
    """The paper's numbers on a page come from the chapter's data files (the paper's tables as cited)
    or the claim's verbatim quote, so a mistyped number cannot stand beside a verdict."""
    numbers = file_numbers(chapter)
    bad = {}
    for c in claims.load(chapter, ROOT)["claims"]:
        if c["kind"] not in claims.QUOTED:
            continue
        quoted = {float(m.group().replace("−", "-")) for q in claims.quotes(c) for m in _NUMBER.finditer(q)}
        miss = unsourced_numbers(c["paper_value"], numbers | quoted)  # the quote is the paper's, verbatim
        if miss:
            bad[c["id"]] = miss
    assert not bad, f"{chapter}: paper_value numbers in no data file (nor marked derived): {bad}"


def test_an_unsourced_paper_number_is_caught():
    nums = {11.13, 14.31, 8.69}
    assert unsourced_numbers("HIT@10 (%) 11.29 / 14.31 vs 8.69", nums) == ["11.29"]
    assert unsourced_numbers("HIT@10 (%) 11.13 / 14.31 vs 8.69 (+28%, derived: 11.13 / 8.69 − 1 = 0.281)", nums) == []
    assert unsourced_numbers("as §4.2 and (5.3) say, 0.1113", nums) == []  # a reference; a fraction of 11.13 %


def _write_claims(root, text):
    d = root / "data" / "dp_icl"
    d.mkdir(parents=True, exist_ok=True)
    (d / "claims.yaml").write_text(text)


CLAIMS = """
paper: "A paper"
claims:
  - {id: a, paper_item: "Fig 1", kind: reproduction, quote: "it rises", where: "§1", statement: s, paper_value: 1, notebook: nb1, value: "nb1.x", predicate: "nb1.x > 0", exact: "a count"}
  - {id: b, paper_item: "Fig 2", kind: reproduction, quote: "it rises a lot", where: "§2", statement: s, paper_value: 1, notebook: nb1, value: "nb1.x", predicate: "nb1.x > 5", exact: "a count",
     reading: "too small at ci", reading_value: "nb1.x"}
  - {id: c, paper_item: "Fig 3", kind: check, kind_why: "ours", statement: s, paper_value: 1, notebook: nb2, value: "nb2.y", predicate: "nb2.y"}
  - {id: d, paper_item: "Fig 4", kind: reproduction, quote: q, where: w, statement: s, paper_value: 1, notebook: nb1, value: "nb1.missing", predicate: "nb1.missing", exact: "a count"}
  - {id: e, paper_item: "Fig 5", kind: reproduction, quote: q, where: w, statement: s, paper_value: 1, notebook: nb1, value: "nb1.d.k", predicate: "nb1.d.k == 2", exact: "a count",
     profiles: [ci, paper]}
"""


def test_claims_are_judged_with_computed_reasons(root):
    _write_claims(root, CLAIMS)
    doc = claims.load("dp_icl", root)
    results = {"nb1": {"profile": "smoke", "values": {"x": 2.0, "d": {"k": 2}}}}
    rows = {r["id"]: r for r in claims.evaluate("dp_icl", doc, results, "smoke")}
    assert rows["a"]["verdict"] == "held" and rows["a"]["held"] is True and rows["a"]["value"] == 2.0
    assert rows["a"]["reason"] == "held: nb1.x = 2 > 0 (true)"
    # the reason names the recorded number, not a sentence written before the build
    assert rows["b"]["verdict"] == "contradicted" and rows["b"]["held"] is False
    assert rows["b"]["reason"] == "contradicted: nb1.x = 2 > 5 (false)"
    assert rows["b"]["reading"] == "too small at ci" and rows["b"]["reading_value"] == 2.0
    assert rows["c"]["held"] is None and "has not run" in rows["c"]["reason"]
    assert rows["d"]["verdict"] == "not judged" and "cannot evaluate" in rows["d"]["reason"]
    assert rows["e"]["held"] is None and "not judged at profile 'smoke'" in rows["e"]["reason"]
    assert rows["a"]["quote"] == ["it rises"] and rows["a"]["where"] == "§1"
    table = claims_page.markdown_table(list(rows.values()), "smoke")
    assert ("of the paper's 4 claims reproduced here, 1 held, 1 contradicted, 0 inconclusive, 2 not judged"
            in table)
    assert "of 1 checks of our own construction, 0 held, 0 contradicted, 0 inconclusive, 1 not judged" in table
    assert "“it rises” (§1)" in table and "Our reading: too small at ci (recorded: 2)" in table
    assert table.count("\n| ") == 2 + 5, "two tables: two header rows, 4 reproductions and 1 check"
    assert rows["a"]["kind"] == "reproduction" and rows["a"]["seeds"] == [None]


def test_a_failed_precondition_is_not_judged_with_its_reason(root):
    extra = ("  - {id: f, paper_item: F, kind: reproduction, quote: q, where: w, statement: s, paper_value: 1, notebook: nb1, "
             "value: nb1.x, predicate: 'nb1.x > 5', exact: 'a count', precondition: 'nb1.best > nb1.floor', "
             "precondition_why: 'every model ends at the floor', compares: [x], gate_reads: [best, floor]}\n")
    _write_claims(root, CLAIMS + extra)
    doc = claims.load("dp_icl", root)
    res = {"nb1": {"profile": "ci", "seed": 3, "values": {"x": 2.0, "best": 0.1, "floor": 0.1, "seeds": [3, 4]}}}
    (row,) = [r for r in claims.evaluate("dp_icl", doc, res, "ci") if r["id"] == "f"]
    assert row["verdict"] == "not judged"
    assert row["reason"] == ("not judged: the setting cannot show the effect (every model ends at the floor): "
                             "nb1.best = 0.1 > nb1.floor = 0.1 (false)")
    assert row["seeds"] == [3, 4]
    res["nb1"]["values"]["best"] = 0.2
    (row,) = [r for r in claims.evaluate("dp_icl", doc, res, "ci") if r["id"] == "f"]
    assert row["verdict"] == "contradicted"


def test_a_claim_value_holding_recorded_dicts_is_plain_json(root):
    extra = ("  - {id: g, paper_item: G, kind: reproduction, quote: q, where: w, statement: s, paper_value: 1, notebook: nb1, "
             "value: \"{'by': nb1.d, 'both': [nb1.d, nb1.x]}\", predicate: 'nb1.d.k > 1', exact: 'a count'}\n")
    _write_claims(root, CLAIMS + extra)
    doc = claims.load("dp_icl", root)
    res = {"nb1": {"profile": "smoke", "values": {"x": 2.0, "d": {"k": 2, "e": {"f": 1}}}}}
    (row,) = [r for r in claims.evaluate("dp_icl", doc, res, "smoke") if r["id"] == "g"]
    assert row["held"] is True
    assert row["value"] == {"by": {"k": 2, "e": {"f": 1}}, "both": [{"k": 2, "e": {"f": 1}}, 2.0]}
    json.dumps(row)  # a recorded dict inside the value's own dict or list once broke summary.json


def test_a_claim_needs_a_known_kind(root):
    _write_claims(root, CLAIMS.replace("kind: reproduction", "kind: replication", 1))
    with pytest.raises(claims.ClaimsFileError, match="allowed values are reproduction, extension, check"):
        claims.load("dp_icl", root)


def test_results_from_another_profile_are_not_judged(root):
    _write_claims(root, CLAIMS)
    rows = claims.evaluate("dp_icl", claims.load("dp_icl", root),
                           {"nb1": {"profile": "ci", "values": {"x": 2.0}}}, "paper")
    assert all(r["held"] is None for r in rows)


def test_claims_file_errors_are_clear(root):
    _write_claims(root, "claims:\n  - {id: a, paper_item: x}\n")
    with pytest.raises(claims.ClaimsFileError, match="lacks"):
        claims.load("dp_icl", root)


@pytest.mark.parametrize("escape", [
    "__import__('os')", "().__class__", "nb1.__class__", "nb1.x.__class__.__mro__",
    "[c for c in ().__class__.__base__.__subclasses__()]", "math.__loader__", "open('/etc/passwd')",
    "eval('1')", "getattr(nb1, '__dict__')", "nb1._hidden",
])
def test_claim_expressions_refuse_imports_and_attribute_escapes(root, escape):
    _write_claims(root, CLAIMS.replace('predicate: "nb1.x > 0"', f'predicate: "{escape}"'))
    rows = claims.evaluate("dp_icl", claims.load("dp_icl", root),
                           {"nb1": {"profile": "smoke", "values": {"x": 1, "_hidden": 2}}}, "smoke")
    assert rows[0]["held"] is None and "cannot evaluate" in rows[0]["reason"], rows[0]


def test_claim_expressions_keep_what_the_claims_files_use(root):
    env = {"nb": claims._namespace({"x": [1.0, 2.0], "d": {"merge": 0.25}, "flag": True})}
    assert claims.expression("all(v > 0 for v in nb.x) and nb.flag", env) is True
    assert claims.expression("abs(math.log(nb.d.merge) - math.log(0.25)) < 1e-12", env) is True
    assert claims.expression("f'{nb.x[-1]:.1f} ' + ', '.join(f'{v:.0f}x' for v in nb.x)", env) == "2.0 1x, 2x"
    assert claims.expression("{'a': [round(100 * v, 1) for v in nb.x]}", env) == {"a": [100.0, 200.0]}


def test_stale_results_of_notebooks_that_did_not_run_decide_nothing(root):
    from privtrans.book.pipeline import report

    _write_claims(root, CLAIMS)
    out = root / "book" / "_generated" / "dp_icl" / "nb1"
    out.mkdir(parents=True)
    (out / "results.json").write_text(json.dumps({"profile": "smoke", "values": {"x": 2.0}}))
    judged = {r["id"]: r for r in report.judge_claims(root, "smoke", {("dp_icl", "nb1")})}
    assert judged["a"]["held"] is True
    stale = {r["id"]: r for r in report.judge_claims(root, "smoke", set())}
    assert stale["a"]["held"] is None and "has not run" in stale["a"]["reason"]
    assert "4 claims reproduced here, 0 held" in (root / "book" / "_generated" / "dp_icl" / "claims.md").read_text()


def test_the_stability_build_is_shown_beside_each_verdict(root):
    from privtrans.book.pipeline import report

    _write_claims(root, CLAIMS)
    out = root / "book" / "_generated" / "dp_icl" / "nb1"
    out.mkdir(parents=True)
    (out / "results.json").write_text(json.dumps({"profile": "smoke", "values": {"x": 2.0}}))
    other = {"profile": "smoke", "seed": 100, "claims": [
        {"chapter": "dp_icl", "id": "a", "kind": "reproduction", "verdict": "contradicted", "reason": "r"}]}
    path = report.stability_path(root)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(other))
    rows = {r["id"]: r for r in report.judge_claims(root, "smoke", {("dp_icl", "nb1")}, seed=0)}
    assert rows["a"]["stability"] == {"seed": 100, "verdict": "contradicted", "cells": None} and "stability" not in rows["b"]
    page = (root / "book" / "_generated" / "dp_icl" / "claims.md").read_text()
    assert "At the stability seeds" in page and "**contradicted** (seed 100)" in page
    lines = report.stability_lines({"seed": 0, "claims": [dict(rows["a"], kind="reproduction")]})
    assert "0 of 1 reproductions keep their verdict" in lines[1]
    assert any("dp_icl/a | held | contradicted (a defect to explain)" in ln for ln in lines)
    # a stability build at the book's own seed, or another profile, is not shown
    assert "stability" not in report.judge_claims(root, "smoke", {("dp_icl", "nb1")}, seed=100)[0]


def test_a_value_that_could_not_be_computed_is_not_judged_and_says_so(root):
    _write_claims(root, CLAIMS)
    rows = claims.evaluate("dp_icl", claims.load("dp_icl", root),
                           {"nb1": {"profile": "smoke", "values": {"x": None}}}, "smoke")
    assert rows[0]["held"] is None and "not computed" in rows[0]["reason"]


def test_a_predicate_that_is_none_is_not_judged(root):
    _write_claims(root, CLAIMS.replace('predicate: "nb1.x > 0"', 'predicate: "nb1.x and nb1.x > 0"'))
    rows = claims.evaluate("dp_icl", claims.load("dp_icl", root),
                           {"nb1": {"profile": "smoke", "values": {"x": None}}}, "smoke")
    assert rows[0]["held"] is None and "not computed" in rows[0]["reason"]


# ------------------------------------------------------------------------------------ mechanism studies
def _extension_file(tmp_path, claim: str):
    d = tmp_path / "data" / "dp_icl"
    d.mkdir(parents=True)
    (d / "claims.yaml").write_text("paper: P\nclaims:\n" + claim)
    return tmp_path


def test_an_extension_quotes_the_paper_like_a_reproduction(tmp_path):
    """A mechanism study tests the paper's own words: without them (or where they stand) it is refused."""
    bare = ("  - {id: m, paper_item: F, kind: extension, statement: s, paper_value: 1, notebook: nb, "
            "value: nb.x, interval: nb.d, margin: 0}\n")
    with pytest.raises(claims.ClaimsFileError, match="extension without the paper's words"):
        claims.load("dp_icl", _extension_file(tmp_path, bare))
    quoted = bare.replace("statement: s", "quote: q, where: w, statement: s")
    assert claims.load("dp_icl", _extension_file(tmp_path / "ok", quoted))["claims"][0]["kind"] == "extension"


def test_extensions_are_counted_apart_from_the_papers_claims():
    """A mechanism study's verdicts never swell the paper's claims: their own count and their own table."""
    row = {"kind": "reproduction", "paper_item": "Table 1", "quote": ["q"], "where": "§1", "statement": "s",
           "paper_value": 1, "value": 2, "verdict": "held", "reason": "held: 2 > 1 (true)"}
    rows = [dict(row, id="r"), dict(row, id="e1", kind="extension"),
            dict(row, id="e2", kind="extension", verdict="contradicted", reason="contradicted: 0 > 1 (false)")]
    t = claims.tally(rows)
    assert t["reproduction"]["total"] == 1 and t["reproduction"]["held"] == 1
    assert t["extension"] == {"held": 1, "contradicted": 1, "inconclusive": 0, "not_judged": 0, "total": 2}
    table = claims_page.markdown_table(rows, "ci")
    assert "of the paper's 1 claims reproduced here, 1 held, 0 contradicted" in table
    assert "of 2 claims of a mechanism study" in table and "1 held, 1 contradicted" in table
    paper, study = table.split("**Mechanism study")
    assert '<a id="claim-r"></a>' in paper and '<a id="claim-e1"></a>' not in paper
    assert '<a id="claim-e1"></a>' in study and '<a id="claim-e2"></a>' in study
    assert "Mechanism study" not in claims_page.markdown_table([dict(row, id="r")], "ci")  # no empty section
