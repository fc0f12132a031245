"""The book's machinery: profiles, sessions, claims, cache keys, papermill checks."""

import json

import nbformat
import pytest

from privtrans.book import claims, profiles, session
from privtrans.book.pipeline import cache, execute
from privtrans.book.pipeline.discover import Notebook, discover


@pytest.fixture
def root(tmp_path, monkeypatch):
    (tmp_path / "_config.yml").write_text("title: t\n")
    (tmp_path / "lib" / "privtrans").mkdir(parents=True)
    monkeypatch.setenv("PRIVTRANS_ROOT", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("bad", ["fast", "", None, 1, "CI"])
def test_unknown_profile_names_the_allowed_values(bad):
    with pytest.raises(profiles.ParameterError, match="smoke, ci, paper"):
        profiles.check_profile(bad)


@pytest.mark.parametrize("bad", ["0", 1.5, True, -1])
def test_seed_must_be_a_non_negative_int(bad):
    with pytest.raises(profiles.ParameterError, match="seed"):
        profiles.check_seed(bad)


def test_every_experiment_defines_every_profile():
    for ch in ("dp_icl", "dpformer", "merge"):
        try:
            names = profiles.experiments(ch)
        except FileNotFoundError:
            continue
        for exp in names:
            for p in ("smoke", "ci", "paper"):
                assert isinstance(profiles.settings(ch, exp, p), dict)


def test_every_notebook_has_a_profile_entry_and_a_parameters_cell():
    from pathlib import Path

    import jupytext

    repo = Path(__file__).resolve().parents[1]
    for nb in discover(repo):
        assert nb.name in profiles.experiments(nb.chapter), f"{nb.label}: no entry in profile_tables"
        src = jupytext.read(nb.source)
        tagged = [c for c in src.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{nb.label}: needs exactly one cell tagged parameters"
        assert "profile" in tagged[0].source and "seed" in tagged[0].source
        heads = [ln for c in src.cells if c.cell_type == "markdown" for ln in c.source.splitlines()
                 if ln.startswith("# ")]
        assert len(heads) == 1, f"{nb.label}: exactly one top-level heading (the page title), found {heads}"


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


def _write_claims(root, text):
    d = root / "data" / "dp_icl"
    d.mkdir(parents=True, exist_ok=True)
    (d / "claims.yaml").write_text(text)


CLAIMS = """
paper: "A paper"
claims:
  - {id: a, paper_item: "Fig 1", statement: s, paper_value: 1, notebook: nb1, value: "nb1.x", predicate: "nb1.x > 0"}
  - {id: b, paper_item: "Fig 2", statement: s, paper_value: 1, notebook: nb1, value: "nb1.x", predicate: "nb1.x > 5",
     why_not: "too small at ci"}
  - {id: c, paper_item: "Fig 3", statement: s, paper_value: 1, notebook: nb2, value: "nb2.y", predicate: "nb2.y"}
  - {id: d, paper_item: "Fig 4", statement: s, paper_value: 1, notebook: nb1, value: "nb1.missing", predicate: "nb1.missing"}
  - {id: e, paper_item: "Fig 5", statement: s, paper_value: 1, notebook: nb1, value: "nb1.d.k", predicate: "nb1.d.k == 2",
     profiles: [ci, paper]}
"""


def test_claims_are_judged_held_not_held_or_not_judged(root):
    _write_claims(root, CLAIMS)
    doc = claims.load("dp_icl", root)
    results = {"nb1": {"profile": "smoke", "values": {"x": 2.0, "d": {"k": 2}}}}
    rows = {r["id"]: r for r in claims.evaluate("dp_icl", doc, results, "smoke")}
    assert rows["a"]["held"] is True and rows["a"]["value"] == 2.0
    assert rows["b"]["held"] is False and rows["b"]["reason"] == "too small at ci"
    assert rows["c"]["held"] is None and "has not run" in rows["c"]["reason"]
    assert rows["d"]["held"] is None and "cannot evaluate" in rows["d"]["reason"]
    assert rows["e"]["held"] is None and "not judged at profile 'smoke'" in rows["e"]["reason"]
    table = claims.markdown_table(list(rows.values()), "smoke")
    assert "1 of 5 claims held, 1 not held, 3 not judged" in table and table.count("\n| ") == 6


def test_results_from_another_profile_are_not_judged(root):
    _write_claims(root, CLAIMS)
    rows = claims.evaluate("dp_icl", claims.load("dp_icl", root),
                           {"nb1": {"profile": "ci", "values": {"x": 2.0}}}, "paper")
    assert all(r["held"] is None for r in rows)


def test_claims_file_errors_are_clear(root):
    _write_claims(root, "claims:\n  - {id: a, paper_item: x}\n")
    with pytest.raises(claims.ClaimsFileError, match="lacks"):
        claims.load("dp_icl", root)


def test_claim_expressions_cannot_reach_builtins(root):
    _write_claims(root, CLAIMS.replace('predicate: "nb1.x > 0"', 'predicate: "__import__(\'os\')"'))
    rows = claims.evaluate("dp_icl", claims.load("dp_icl", root),
                           {"nb1": {"profile": "smoke", "values": {"x": 1}}}, "smoke")
    assert rows[0]["held"] is None and "NameError" in rows[0]["reason"]


def test_cache_key_follows_source_lib_data_profile_and_seed(root):
    src = root / "notebooks" / "dp_icl" / "01_x.md"
    src.parent.mkdir(parents=True)
    src.write_text("a")
    (root / "lib" / "privtrans" / "m.py").write_text("x = 1")
    nb = Notebook("dp_icl", src)
    k0 = cache.input_key(root, nb, "smoke", 0)
    assert k0 == cache.input_key(root, nb, "smoke", 0)
    assert k0 != cache.input_key(root, nb, "ci", 0) != cache.input_key(root, nb, "smoke", 1)
    (root / "lib" / "privtrans" / "m.py").write_text("x = 2")
    k1 = cache.input_key(root, nb, "smoke", 0)
    (root / "data" / "dp_icl").mkdir(parents=True)
    (root / "data" / "dp_icl" / "paper_values.csv").write_text("c")
    k2 = cache.input_key(root, nb, "smoke", 0)
    (root / "data" / "dp_icl" / "claims.yaml").write_text("judged after the notebooks ran")
    (root / "data" / "dp_icl" / "README.md").write_text("docs")
    assert cache.input_key(root, nb, "smoke", 0) == k2, "claims and READMEs are not notebook inputs"
    src.write_text("b")
    k3 = cache.input_key(root, nb, "smoke", 0)
    assert len({k0, k1, k2, k3}) == 4
    (root / "lib" / "privtrans" / "pipeline").mkdir()
    (root / "lib" / "privtrans" / "pipeline" / "html.py").write_text("changed")
    (root / "lib" / "privtrans" / "claims.py").write_text("changed")
    assert cache.input_key(root, nb, "smoke", 0) == k3, "the build machinery is not a notebook input"


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
    assert "0 of 5 claims held" in (root / "book" / "_generated" / "dp_icl" / "claims.md").read_text()


def test_notebook_names_are_checked(root):
    d = root / "notebooks" / "dp_icl"
    d.mkdir(parents=True)
    (d / "01_ok.md").write_text("")
    assert [n.name for n in discover(root)] == ["ok"]
    (d / "Bad Name.md").write_text("")
    with pytest.raises(ValueError, match="NN_topic"):
        discover(root)


def test_papermill_problems_are_detected(tmp_path):
    nb = nbformat.v4.new_notebook()
    p = tmp_path / "n.ipynb"
    nbformat.write(nb, p)
    assert "no papermill metadata" in execute.papermill_problem(p)
    nb.metadata["papermill"] = {"exception": True, "end_time": "t"}
    nbformat.write(nb, p)
    assert "exception" in execute.papermill_problem(p)
    nb.metadata["papermill"] = {"exception": None, "end_time": None}
    nbformat.write(nb, p)
    assert "no end time" in execute.papermill_problem(p)
    nb.metadata["papermill"] = {"exception": None, "end_time": "2026-01-01"}
    nbformat.write(nb, p)
    assert execute.papermill_problem(p) is None
    assert execute.papermill_problem(tmp_path / "missing.ipynb") == "not executed yet"
