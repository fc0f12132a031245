"""The claims table of a chapter page: the verdict shown once, its computed reason, anchors and links."""

from privtrans.book import claims_page


def test_the_table_shows_the_verdict_once_and_the_computed_reason_beside_it():
    assert claims_page.without_verdict("held (mean difference +0.01 [-0.01, +0.03] (95%, n = 3) clears the margin -0.02)",
                            "held") == "mean difference +0.01 [-0.01, +0.03] (95%, n = 3) clears the margin -0.02"
    assert claims_page.without_verdict("held: x = 1 > 0 (true)", "held") == "x = 1 > 0 (true)"
    assert claims_page.without_verdict("contradicted: the data exclude the claim (a); b", "contradicted") == \
        "the data exclude the claim (a); b"


def test_every_claim_row_has_an_anchor_and_links_the_notebook_that_recorded_it(tmp_path):
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
    table = claims_page.markdown_table([row], "ci")
    assert '<a id="claim-x1"></a>Table 1' in table
    assert "{doc}`02_table1_finetuning </book/_executed/taft/02_table1_finetuning>`" in table
    assert "recorded by" not in claims_page.markdown_table([{**row, "recorded_in": None}], "ci")
