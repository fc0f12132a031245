"""privtrans.book.pipeline.compare: two builds' verdicts, listed where they differ."""



def test_compare_lists_the_verdicts_that_differ():
    from privtrans.book.pipeline import compare

    def summary(b, extra=()):
        rows = [{"chapter": "merge", "id": "a", "verdict": "held", "reason": "r"},
                {"chapter": "merge", "id": "b", "verdict": b, "reason": f"why {b}"}]
        return {"profile": "ci", "seed": 0, "claims": rows + list(extra)}

    assert compare.differences(summary("inconclusive"), summary("inconclusive")) == []
    (line,) = compare.differences(summary("contradicted"), summary("inconclusive"))
    assert line.startswith("merge/b: contradicted -> inconclusive") and "why inconclusive" in line
    extra = [{"chapter": "dp_icl", "id": "c", "verdict": "held", "reason": "r"}]
    assert compare.differences(summary("held"), summary("held", extra)) == ["dp_icl/c: only in the new summary"]
    assert compare.count(summary("held")).startswith("2 held, 0 contradicted, 0 inconclusive, 0 not judged")
    # a summary written before the four verdicts still compares (held True/False/None)
    old = {"claims": [{"chapter": "merge", "id": "b", "held": False, "reason": "x"}]}
    assert compare.differences(old, {"claims": [{"chapter": "merge", "id": "b", "verdict": "contradicted",
                                                 "reason": "y"}]})[0].startswith("merge/b: not held -> contradicted")
