"""The reproducing page's line on the build's time is read from the summary: summed seconds, the
longest notebook, failures, overlap when notebooks shared the machine, and the reference workload."""

from privtrans.book.pipeline import report


def _nb(name, seconds, status="ok", jobs=1):
    return {"chapter": "taft", "notebook": name, "profile": "ci", "seed": 0, "seconds": seconds,
            "status": status, "error": None, "jobs": jobs}


def _summary(notebooks, reference_s=0.0285):
    return {"built": "2026-11-29T01:02:03+00:00", "profile": "ci", "seed": 0,
            "machine": {"reference_s": reference_s}, "notebooks": notebooks, "claims": []}


def test_build_times_sum_the_notebooks_and_name_the_longest():
    text = report.build_times(_summary([_nb("01_a", 90.0), _nb("02_b", 150.0), _nb("03_c", 0.0, "not run")]))
    assert "built 2026-11-29" in text and "profile `ci`" in text
    assert "2 notebooks in 4.0 minutes" in text  # a notebook that has not run counts for nothing
    assert "longest took 150 s (taft/02_b)" in text
    assert "reference workload took 0.0285 s" in text
    assert "failed" not in text and "at once" not in text


def test_build_times_say_failures_and_overlap_and_an_empty_build():
    text = report.build_times(_summary([_nb("01_a", 60.0, "failed", jobs=3), _nb("02_b", 60.0, jobs=3)], None))
    assert "2 notebooks (1 failed) in 2.0 minutes" in text
    assert "Up to 3 notebooks ran at once" in text
    assert "reference workload" not in text
    assert "has run yet" in report.build_times(_summary([_nb("01_a", 0.0, "not run")]))


def test_the_status_page_writes_the_line_the_reproducing_page_includes(tmp_path):
    report.write_summary(tmp_path, "smoke", 0, [_nb("01_a", 30.0)], [], reference_s=0.1)
    text = (tmp_path / "book" / "_generated" / "build_times.md").read_text()
    assert "1 notebook in 0.5 minutes" in text


def test_build_times_read_a_cached_state_without_seconds_as_none_spent():
    text = report.build_times(_summary([_nb("01_a", None), _nb("02_b", 120.0)]))
    assert "2 notebooks in 2.0 minutes" in text and "longest took 120 s (taft/02_b)" in text


def test_interval_agreement_counts_cells_whose_two_seed_sets_disagree():
    """Two builds at disjoint seeds estimate the same means: intervals as wide as they should be
    disagree about 5 % of the time; too narrow ones far more often."""
    import numpy as np

    from privtrans.book.paired import paired_difference
    from privtrans.book.pipeline.report import interval_agreement

    rng = np.random.default_rng(0)

    def build(scale):  # scale < 1: intervals narrower than the spread between builds
        d = rng.normal(0, 1, 10)
        p = paired_difference(list(d), [0.0] * 10).as_dict()
        half = (p["hi"] - p["lo"]) / 2 * scale
        return {**p, "lo": p["mean"] - half, "hi": p["mean"] + half}

    def rows(scale):
        return [{"chapter": "x", "id": f"c{i}", "cells": {"": build(scale)},
                 "stability": {"cells": {"": build(scale)}}} for i in range(400)]

    right, narrow = interval_agreement(rows(1.0)), interval_agreement(rows(0.3))
    assert right["cells"] == 400 and right["disagree"] / 400 < 0.09 and right["consistent"]
    assert narrow["disagree"] / 400 > 0.3 and abs(narrow["worst"][0][1]) > 3
    assert not narrow["consistent"] and narrow["p"] < 1e-6  # against Binomial(cells, 5 %)


def test_the_dashboard_counts_a_mechanism_study_apart(tmp_path):
    """Extension claims get their own column; the paper's claims (Held ... Not judged) do not count them."""
    claim = {"chapter": "dpformer", "kind": "extension", "verdict": "held"}
    summary = dict(_summary([dict(_nb("09_premise_table", 60.0), chapter="dpformer")]),
                   claims=[claim, dict(claim, verdict="inconclusive"), dict(claim, kind="reproduction")])
    row = next(r for r in report.chapter_rows(summary) if r["chapter"] == "dpformer")
    assert (row["rep_total"], row["rep_held"], row["ext_total"], row["ext_held"]) == (1, 1, 2, 1)
    assert report.study_cell(row) == "1 held, 0 contradicted, 1 inconclusive, 0 not judged of 2"
    report.write_status_page(tmp_path, summary)
    line = next(x for x in (tmp_path / "book" / "_generated" / "status.md").read_text().splitlines()
                if x.startswith("| {doc}`/book/dpformer`"))
    assert "| 1 / 1 | 1 | 0 | 0 | 0 |" in line and "of 2 |" in line
    assert report.study_cell(next(r for r in report.chapter_rows(summary) if r["chapter"] == "taft")) == "–"
