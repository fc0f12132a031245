"""privtrans.book.session: a notebook's results.json with its provenance, and a bad profile refused before
anything runs."""

import json

import pytest

from privtrans.book import profiles, session


def test_session_writes_results_with_provenance(root):
    nb = session.Session("dp_icl", "x", "smoke", 3, {"n": 1}, session.seed_everything(3),
                         root / "book" / "_generated" / "dp_icl" / "x")
    nb.record(a=1.5, arr=[1, 2])
    out = nb.finish()
    saved = json.loads((nb.outdir / "results.json").read_text())
    assert saved["values"] == {"a": 1.5, "arr": [1, 2]} and saved["profile"] == "smoke" and saved["seed"] == 3
    assert "numpy" in saved["versions"] and out["seconds"] >= 0
    assert session.load_results("dp_icl", root)["x"]["values"]["a"] == 1.5


def test_session_start_rejects_a_bad_profile_before_anything_else():
    with pytest.raises(profiles.ParameterError, match="allowed values are smoke, ci, paper"):
        session.start("dp_icl", "anything", "quick", 0)
