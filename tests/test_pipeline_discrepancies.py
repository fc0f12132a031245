"""privtrans.book.pipeline.discrepancies: every contradicted or inconclusive reproduction lands in
exactly one group by its recorded explanation, links its claim row and its evidence, and an
explanation is shown only with the recorded value it rests on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from privtrans.book.pipeline import discrepancies, report


def _row(i, verdict="contradicted", kind="reproduction", **kw):
    return {"chapter": "merge", "id": f"c{i}", "kind": kind, "paper_item": f"Table {i}", "verdict": verdict,
            "reason": f"{verdict}: interval {i}", "deviation": "", "recorded_in": f"/book/_executed/merge/0{i}_nb",
            **kw}


def _summary(rows):
    return {"built": "2026-12-01T00:00:00+00:00", "profile": "ci", "seed": 0, "machine": {}, "notebooks": [],
            "claims": rows}


ROWS = [
    _row(1, erratum="Figure 4's own bytes give 1.23, not 3.42", paper_self_test="contradicted",
         paper_self_test_reason="on the paper's numbers: 9.2 / 7.5 = 1.23 >= 1.71 (false)",
         explanation={"kind": "scale", "why": "w", "evidence": "nb.n", "evidence_value": 5}),  # (a) wins
    _row(2, "inconclusive", explanation={"kind": "scale", "why": "our block has 50k parameters",
                                         "evidence": "nb.n_params", "evidence_value": 50312}),
    _row(3, deviation="our task mix is 50/50 near/far", explanation={"kind": "statement"}),
    _row(4, explanation={"kind": "scale", "why": "w", "evidence": "nb.gone",
                         "evidence_error": "AttributeError: gone"}),  # unreadable: (d)
    _row(5, "inconclusive", reading="under-trained", reading_value=0.3),
    _row(6, erratum="stale", paper_self_test="held"),  # the paper passes: not an erratum, (d)
    _row(7, "held", explanation={"kind": "statement"}, deviation="d"),  # held: not listed
    _row(8, kind="check"),  # a check: not the paper's claim
    _row(9, "not judged"),
]


def test_each_discrepancy_lands_in_the_first_group_its_record_supports():
    g = discrepancies.groups(_summary(ROWS))
    assert {k: [c["id"] for c in v] for k, v in g.items()} == {
        "erratum": ["c1"], "scale": ["c2"], "statement": ["c3"], "none": ["c4", "c5", "c6"]}
    assert discrepancies.counts(_summary(ROWS)) == {"erratum": 1, "scale": 1, "statement": 1, "none": 3}


def test_the_page_shows_the_arithmetic_the_recorded_value_and_the_links():
    text = discrepancies.page(_summary(ROWS))
    assert "| (a) The paper's own numbers fail its sentence | 1 |" in text and "| (d) No explanation found | 3 |" in text
    assert '<a href="merge.html#claim-c1">merge/c1</a>' in text
    assert "9.2 / 7.5 = 1.23 >= 1.71 (false)" in text
    assert "`nb.n_params` = 50312" in text and "our block has 50k parameters" in text
    assert "our task mix is 50/50 near/far" in text
    assert "could not be read in this build (AttributeError: gone)" in text
    assert "*Our reading (not classified):* under-trained (recorded: 0.3)" in text
    assert "{doc}`02_nb </book/_executed/merge/02_nb>`" in text
    for absent in ("claim-c7", "claim-c8", "claim-c9"):
        assert absent not in text
    landing = " ".join(discrepancies.landing_lines(_summary(ROWS)))
    assert "of the 6 contradicted or inconclusive reproductions" in landing and "3 no explanation found" in landing


def test_the_build_writes_the_appendix_and_the_landing_counts(tmp_path):
    nb = {"chapter": "merge", "notebook": "01_nb", "profile": "ci", "seed": 0, "seconds": 1.0, "status": "ok",
          "error": None, "jobs": 1}
    report.write_summary(tmp_path, "ci", 0, [nb], ROWS, reference_s=None)
    out = tmp_path / "book" / "_generated"
    assert "## (b) Our stand-in's scale" in (out / "discrepancies.md").read_text()
    assert "{doc}`/book/discrepancies`" in (out / "status.md").read_text()
    saved = json.loads((tmp_path / "_build" / "summary.json").read_text())["claims"][0]
    assert saved["erratum"] and saved["paper_self_test_reason"] and saved["explanation"]["kind"] == "scale"


#: a complete `ci` summary of an earlier build, for development (not in the repository)
REAL = Path(os.environ.get("PRIVTRANS_CI_SUMMARY", "/work/ci_base/_build/summary.json"))


@pytest.mark.skipif(not REAL.is_file(), reason=f"no ci summary at {REAL} (set PRIVTRANS_CI_SUMMARY)")
def test_a_real_ci_summary_lists_every_discrepancy_once():
    summary = json.loads(REAL.read_text())
    g = discrepancies.groups(summary)
    listed = [(c["chapter"], c["id"]) for v in g.values() for c in v]
    expected = [(c["chapter"], c["id"]) for c in summary["claims"]
                if c["kind"] == "reproduction" and c["verdict"] in ("contradicted", "inconclusive")]
    assert sorted(listed) == sorted(expected) and len(set(listed)) == len(listed)
    text = discrepancies.page(summary)
    assert sum(f'href="{ch}.html#claim-{i}"' in text for ch, i in expected) == len(expected)
