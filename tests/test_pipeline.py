"""The book's machinery: profiles, sessions, claims, cache keys, papermill checks."""

import json

import nbformat
import pytest

from privtrans.book import chapters, claims, profiles, session
from privtrans.book.pipeline import cache, execute
from privtrans.book.pipeline.discover import Notebook, discover, pick


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
    for ch in chapters.KEYS:
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
    table = claims.markdown_table(list(rows.values()), "smoke")
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


def _tree(root):
    """A minimal library with the three layers: machinery, two mechanisms, two chapters."""
    files = {
        "lib/privtrans/__init__.py": "",
        "lib/privtrans/book/__init__.py": "",
        "lib/privtrans/book/session.py": "x = 1",
        "lib/privtrans/book/claims.py": "x = 1",
        "lib/privtrans/book/verdicts.py": "x = 1",
        "lib/privtrans/book/paper_values.py": "x = 1",
        "lib/privtrans/book/trials.py": "x = 1",
        "lib/privtrans/book/budgets.py": "x = 1",
        "lib/privtrans/book/pipeline/__init__.py": "",
        "lib/privtrans/book/pipeline/html.py": "x = 1",
        "lib/privtrans/shared/__init__.py": "",
        "lib/privtrans/shared/dp/__init__.py": "from .noise import add",
        "lib/privtrans/shared/dp/noise.py": "from privtrans.shared.models import tiny",
        "lib/privtrans/shared/models/__init__.py": "",
        "lib/privtrans/shared/models/tiny.py": "x = 1",
        "lib/privtrans/shared/mpc/__init__.py": "",
        "lib/privtrans/shared/mpc/runner.py": "PRELOAD = 'privtrans.shared.mpc.preload'",
        "lib/privtrans/shared/mpc/preload.py": "x = 1",
        "lib/privtrans/dp_icl/__init__.py": "",
        "lib/privtrans/dp_icl/run.py": "from ..shared.dp import add",
        "lib/privtrans/dp_icl/profile.yaml": "e: {smoke: {}, ci: {}, paper: {}}",
        "lib/privtrans/merge/__init__.py": "",
        "lib/privtrans/merge/run.py": "x = 1",
        "notebooks/dp_icl/01_x.md": "from privtrans.dp_icl import run",
        "notebooks/merge/01_y.md": "from privtrans.shared.mpc import runner",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return Notebook("dp_icl", root / "notebooks/dp_icl/01_x.md"), Notebook("merge", root / "notebooks/merge/01_y.md")


def test_cache_key_follows_source_profile_seed_and_data(root):
    icl, _ = _tree(root)
    k0 = cache.input_key(root, icl, "smoke", 0)
    assert k0 == cache.input_key(root, icl, "smoke", 0)
    assert k0 != cache.input_key(root, icl, "ci", 0) != cache.input_key(root, icl, "smoke", 1)
    (root / "data" / "dp_icl").mkdir(parents=True)
    (root / "data" / "dp_icl" / "paper_values.csv").write_text("c")
    k1 = cache.input_key(root, icl, "smoke", 0)
    (root / "data" / "dp_icl" / "claims.yaml").write_text("judged after the notebooks ran")
    (root / "data" / "dp_icl" / "README.md").write_text("docs")
    assert cache.input_key(root, icl, "smoke", 0) == k1 != k0, "claims and READMEs are not notebook inputs"
    icl.source.write_text("from privtrans.dp_icl import run  # edited")
    assert cache.input_key(root, icl, "smoke", 0) != k1


@pytest.mark.parametrize("edited, reruns", [
    ("lib/privtrans/dp_icl/run.py", {"dp_icl"}),             # a chapter: that chapter only
    ("lib/privtrans/dp_icl/profile.yaml", {"dp_icl"}),       # its profile table lives in its package
    ("lib/privtrans/merge/run.py", {"merge"}),
    ("lib/privtrans/shared/models/tiny.py", {"dp_icl"}),     # a mechanism: the chapters that import it,
    ("lib/privtrans/shared/mpc/preload.py", {"merge"}),      # also when imported by name at run time
    ("lib/privtrans/shared/dp/__init__.py", {"dp_icl"}),
    ("lib/privtrans/book/session.py", {"dp_icl", "merge"}),  # machinery inside a notebook: every chapter
    ("lib/privtrans/__init__.py", {"dp_icl", "merge"}),
    ("lib/privtrans/book/pipeline/html.py", set()),         # the build itself: nothing
    ("lib/privtrans/book/claims.py", set()),                  # judging claims happens after the notebooks
    ("lib/privtrans/book/verdicts.py", set()),
    ("lib/privtrans/book/paper_values.py", set()),
    ("lib/privtrans/book/trials.py", set()),
    ("lib/privtrans/book/budgets.py", set()),
])
def test_cache_key_follows_the_library_layers(root, edited, reruns):
    nbs = _tree(root)
    before = {nb.chapter: cache.input_key(root, nb, "smoke", 0) for nb in nbs}
    (root / edited).write_text((root / edited).read_text() + "\n# edited\n")
    after = {nb.chapter: cache.input_key(root, nb, "smoke", 0) for nb in nbs}
    assert {ch for ch in before if before[ch] != after[ch]} == reruns


def test_a_damaged_state_file_is_a_miss(root):
    icl, _ = _tree(root)
    cache.save_state(root, icl, {"status": "ok", "key": "k"})
    assert cache.load_state(root, icl)["key"] == "k"
    cache.state_path(root, icl).write_text('{"status": "o')
    with pytest.warns(UserWarning, match="unreadable"):
        assert cache.load_state(root, icl) is None


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
    p.write_text('{"cells": [')  # cut short: re-run, not a crash of the build
    assert "not a readable notebook" in execute.papermill_problem(p)


def test_the_toc_and_the_book_pages_follow_the_chapter_registry(tmp_path):
    from pathlib import Path

    from privtrans.book.pipeline import html

    repo = Path(__file__).resolve().parents[1]
    assert html.toc_problem(repo) is None, "regenerate _toc.yml from the registry"
    for key in chapters.KEYS:
        assert (repo / "book" / f"{key}.md").is_file() and f"file: book/{key}\n" in chapters.toc_yaml()
    (tmp_path / "_toc.yml").write_text(chapters.toc_yaml().replace("book/taft", "book/other"))
    assert "python -m privtrans.book.chapters toc" in html.toc_problem(tmp_path)


def test_unknown_chapter_names_the_registry():
    with pytest.raises(chapters.ParameterError, match="dpformer, taft, merge, dp_icl, mpc_attention"):
        chapters.get("tangent")


def test_the_readme_maps_every_chapter():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for key in chapters.KEYS:
        assert f"| `{key}` | `notebooks/{key}/`" in readme and f"`lib/privtrans/{key}/`" in readme


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


def test_one_build_at_a_time(root):
    from privtrans.book.pipeline import lock

    with lock.build_lock(root):
        with pytest.raises(lock.Busy, match="another build is running in this checkout"):
            with lock.build_lock(root):
                pass
    with lock.build_lock(root):  # released when the first one ends
        pass


def test_progress_counts_estimates_and_stops_in_one_line(root):
    import io

    from privtrans.book.pipeline import build_log

    nbs = [Notebook("dp_icl", root / f"notebooks/dp_icl/0{i}_x{i}.md") for i in (1, 2, 3)]
    out = io.StringIO()
    bar = build_log.Progress(nbs, [10.0, 20.0, None], stream=out)
    bar.done(nbs[0], 9.5, "ok (cached)")
    with bar.running(nbs[1]):
        pass
    bar.done(nbs[1], 21.0, "ok")
    lines = [ln for ln in out.getvalue().split("\n") if ln]
    assert lines[0].startswith("  [1/3] dp_icl/01_x1") and "9.5s  ok (cached)" in lines[0]
    assert "~0:20 left (+1 never timed)" in lines[0]
    assert "[2/3]" in lines[1] and "start" in lines[1] and "last build 20s" in lines[1]
    assert "[2/3]" in lines[2] and "21.0s  ok" in lines[2] and "no estimate yet" in lines[2]
    with pytest.raises(build_log.Interrupted, match=r"interrupted during dp_icl/03_x3: 2 finished and kept"):
        with bar.running(nbs[2]):
            raise KeyboardInterrupt


def test_a_page_with_a_script_twice_is_refused(tmp_path):
    from privtrans.book.pipeline import html

    page = '<html><script>const A = 1;</script><script src="x.js"></script><script>const A = 1;</script></html>'
    (tmp_path / "p.html").write_text(page)
    (problem,) = html.offline_problems(tmp_path, [])
    assert "p.html includes a script twice: <script>const A = 1;" in problem
    (tmp_path / "p.html").write_text(page.replace("const A = 1;</script></html>", "const B = 2;</script></html>"))
    assert html.offline_problems(tmp_path, []) == []


def test_only_the_parameters_a_notebook_ran_with_are_shown():
    from privtrans.book.pipeline import html

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('profile = "ci"', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell('profile = "smoke"', metadata={"tags": ["injected-parameters"]}),
        nbformat.v4.new_code_cell("x = 1")])
    assert html.show_parameters_once(nb) and not html.show_parameters_once(nb)
    assert [c.metadata.get("tags") for c in nb.cells] == [["parameters", "remove-cell"], ["injected-parameters"], None]


def test_sphinx_page_keeps_each_script_once():
    from sphinx.builders.html._assets import _JavaScript

    from privtrans.book.pipeline import sphinx_page

    scripts = [_JavaScript(None, body="const T = 1"), _JavaScript("a.js"), _JavaScript("", body="const T = 1"),
               _JavaScript("a.js", **{"async": "async"})]
    before = list(scripts)
    ctx = {"script_files": scripts}
    sphinx_page.unique_scripts(None, "p", "page.html", ctx, None)
    assert ctx["script_files"] == [before[0], before[1], before[3]]
    # in place: a handler that runs later (sphinx.ext.mathjax) appends to the builder's own list
    assert ctx["script_files"] is scripts
    assert ctx["default_mode"] == "light"  # no "invalid theme mode" console error on a first visit


def test_sphinx_page_collapses_the_sidebar_and_keeps_the_other_theme_options():
    from privtrans.book.pipeline import sphinx_page

    config = {"html_theme_options": {"home_page_in_toc": True, "use_repository_button": False}}
    sphinx_page.collapsed_sidebar(None, config)
    assert config["html_theme_options"] == {"home_page_in_toc": True, "use_repository_button": False,
                                             "collapse_navbar": True}
    config = {"html_theme_options": None}
    sphinx_page.collapsed_sidebar(None, config)
    assert config["html_theme_options"] == {"collapse_navbar": True}


def test_every_notebook_page_says_how_to_rerun_it(root):
    from privtrans.book.pipeline import html

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Title\n\nintro"),
                                         nbformat.v4.new_code_cell("x = 1")])
    nb.metadata["papermill"] = {"parameters": {"profile": "ci", "seed": 3}}
    src = Notebook("merge", root / "notebooks" / "merge" / "05_table3_quality.md")
    assert html.add_rerun_note(nb, src) and not html.add_rerun_note(nb, src)
    note = nb.cells[1].source
    assert "profile `ci`, seed 3" in note and "make chapter CH=merge PROFILE=paper" in note
    assert "(smoke / paper)" in note and "notebooks/merge/05_table3_quality.md" in note


def test_launch_buttons_follow_the_repository_url(root):
    from privtrans.book.pipeline import html

    src = Notebook("merge", root / "notebooks" / "merge" / "05_table3_quality.md")
    assert html.launch_links({"url": "", "branch": "main"}, src) == []  # hidden while no url is set
    assert html.launch_links({"url": "https://example.org/a/b"}, src) == []  # not a GitHub repository
    assert html.launch_links(html.repository_config(root), src) == []  # the checkout's _config.yml sets none
    (label, url), = html.launch_links({"url": "https://github.com/o/book.git", "branch": "dev"}, src)
    assert label == "Launch on Binder"
    assert url == "https://mybinder.org/v2/gh/o/book/dev?urlpath=lab/tree/notebooks/merge/05_table3_quality.md"
    both = html.launch_links({"url": "https://github.com/o/book", "ipynb_branch": "ipynb"}, src)
    assert both[1] == ("Open in Colab", "https://colab.research.google.com/github/o/book/blob/ipynb/"
                                        "notebooks/merge/05_table3_quality.ipynb")
    # the page's note gains the buttons once a url is set, in the same cell
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T")])
    nb.metadata["papermill"] = {"parameters": {"profile": "ci", "seed": 0}}
    assert html.add_rerun_note(nb, src, {"url": ""}) and "privtrans-launch" not in nb.cells[1].source
    assert html.add_rerun_note(nb, src, {"url": "https://github.com/o/book"}) and len(nb.cells) == 2
    assert 'href="https://mybinder.org/v2/gh/o/book/main?' in nb.cells[1].source
    assert not html.add_rerun_note(nb, src, {"url": "https://github.com/o/book"})


def test_readout_arithmetic_never_invents_a_value():
    import math as m

    from privtrans.book import readouts as R

    assert R.num(None) is None and R.num(m.nan) is None and R.num("2.5") == 2.5
    assert R.ratio(1, 0) is None and R.ratio(1, -2) is None and R.ratio(None, 1) is None and R.ratio(3, 2) == 1.5
    assert R.strict(max, [1, None, 3]) is None and R.strict(all, []) is None and R.strict(min, [2, 1]) == 1
    assert R.mean([1.0, 2.0]) == 1.5 and R.mean([1.0, None]) is None


def test_progress_bars_reach_the_terminal_not_the_page(tmp_path, monkeypatch):
    import io

    from privtrans.book import progress_bar
    from privtrans.book.pipeline.execute import echo_progress

    log, out = tmp_path / "nb.progress.log", io.StringIO()
    monkeypatch.setenv(progress_bar.LOG_ENV, str(log))
    page = io.StringIO()
    monkeypatch.setattr("sys.stderr", page)  # what a kernel's stderr would put on the page
    with echo_progress(log, "merge/04_fig6_retraining", stream=out, every=0.05):
        assert sum(progress_bar.steps(range(50), desc="train")) == sum(range(50))
    lines = [ln for ln in out.getvalue().split("\n") if ln]
    assert lines and all(ln.startswith("\r      merge/04_fig6_retraining: train") for ln in lines)
    assert "50/50" in lines[-1] and "\r" not in lines[-1][1:]  # one clean line per refresh
    assert page.getvalue() == ""
    monkeypatch.delenv(progress_bar.LOG_ENV)  # outside the pipeline the bar is plain stderr
    list(progress_bar.steps(range(3), desc="x"))
    assert "3/3" in page.getvalue()


def test_progress_echo_writes_whole_lines_only(tmp_path):
    """Notebooks side by side share the build's stdout with the parent's "[i/n] ... ok" lines: each
    write the echo makes must end its line, or the next line from another process joins it."""
    from privtrans.book.pipeline.execute import echo_progress

    class Writes:
        def __init__(self):
            self.calls = []

        def write(self, s):
            self.calls.append(s)

        def flush(self):
            self.calls.append(None)

    log, out = tmp_path / "nb.progress.log", Writes()
    log_lines = "".join(f"train: {i}/3\n" for i in range(1, 4))
    with echo_progress(log, "taft/03_composition", stream=out, every=0.05):
        log.write_text(log_lines)
    writes = [w for w in out.calls if w is not None]
    assert writes and all(w.endswith("\n") for w in writes), writes
    assert "".join(writes).count("taft/03_composition: train") == 3


def test_seedflip_compares_one_chapter_and_refuses_a_useless_baseline(tmp_path, monkeypatch, capsys):
    from privtrans.book.chapters import ParameterError
    from privtrans.book.pipeline import seedflip

    def claim(ch, cid, verdict):
        return {"chapter": ch, "id": cid, "verdict": verdict, "reason": f"r{verdict}"}

    old = {"profile": "ci", "seed": 0, "claims": [claim("merge", "a", "held"), claim("merge", "b", "contradicted"),
                                                  claim("dp_icl", "c", "held")]}
    new = {"profile": "ci", "seed": 1, "claims": [claim("merge", "a", "held"), claim("merge", "b", "not judged"),
                                                  claim("dp_icl", "c", "inconclusive")]}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(old))
    monkeypatch.setattr(seedflip, "build_at_seed", lambda root, ch, profile, seed: new)
    assert seedflip.main(["--chapter", "merge", "--against", str(path), "--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "merge/b: contradicted -> not judged" in out and "dp_icl" not in out  # the other chapter is not compared
    assert "seed 0: 1 held, 1 contradicted, 0 inconclusive, 0 not judged" in out
    with pytest.raises(SystemExit, match="seed 0 already"):
        seedflip.main(["--chapter", "merge", "--seed", "0", "--against", str(path)])
    with pytest.raises(SystemExit, match="profile 'ci', not 'smoke'"):
        seedflip.main(["--chapter", "merge", "--profile", "smoke", "--against", str(path)])
    with pytest.raises(SystemExit, match="no claim of chapter 'taft'"):
        seedflip.main(["--chapter", "taft", "--against", str(path)])
    with pytest.raises(SystemExit, match="does not exist"):
        seedflip.main(["--chapter", "merge", "--against", str(tmp_path / "none.json")])
    with pytest.raises(ParameterError, match="allowed values"):
        seedflip.main(["--chapter", "nope", "--against", str(path)])


def test_the_root_redirect_page_keeps_its_target_and_gets_the_books_icon(tmp_path):
    from privtrans.book.pipeline.html import write_redirect_page

    index = tmp_path / "index.html"
    index.write_text('<meta http-equiv="Refresh" content="0; url=book/intro.html" />\n')  # what jb 1.x writes
    write_redirect_page(index)
    page = index.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert 'content="0; url=book/intro.html"' in page and 'href="book/intro.html"' in page
    assert 'rel="icon" href="_static/favicon.svg"' in page
    index.write_text("<html>something else</html>")
    write_redirect_page(index)  # a shape it does not know is left alone
    assert index.read_text() == "<html>something else</html>"


def test_a_build_at_another_seed_finds_the_spu_environment(tmp_path, monkeypatch):
    """The temporary copy leaves .venv-spu behind (it is large): the copy's build is pointed at the
    checkout's own, under the name privtrans.mpc_attention.spu reads."""
    import subprocess

    from privtrans.book.pipeline import seedflip
    from privtrans.mpc_attention import spu

    (tmp_path / ".venv-spu" / "bin").mkdir(parents=True)
    (tmp_path / ".venv-spu" / "bin" / "python").write_text("")
    (tmp_path / "_config.yml").write_text("")
    seen = {}

    def run(cmd, cwd, env, **kwargs):
        seen.update(env)
        return subprocess.CompletedProcess(cmd, 1)

    monkeypatch.delenv(spu.ENV_VAR, raising=False)
    monkeypatch.setattr(seedflip.subprocess, "run", run)
    with pytest.raises(SystemExit, match="failed"):
        seedflip.build_at_seed(tmp_path, "mpc_attention", "smoke", 100)
    assert seen[spu.ENV_VAR] == str(tmp_path / ".venv-spu" / "bin" / "python")


def test_a_notebook_is_picked_by_chapter_name_or_chapter_stem_and_an_unknown_one_is_named(tmp_path):
    for stem in ("01_fig1_low_dim", "02_fig2_high_dim"):
        (tmp_path / "notebooks" / "dp_icl").mkdir(parents=True, exist_ok=True)
        (tmp_path / "notebooks" / "dp_icl" / f"{stem}.md").write_text("")
    nbs = discover(tmp_path)
    assert pick(nbs, ["dp_icl/fig2_high_dim", "dp_icl/01_fig1_low_dim"]) == nbs  # the book's order
    assert pick(nbs, ["dp_icl/02_fig2_high_dim"]) == [nbs[1]]
    with pytest.raises(chapters.ParameterError,
                       match=r"unknown notebook\(s\) \['dp_icl/02'\]: give chapter/name, one of dp_icl/fig1_low_dim, dp_icl/fig2_high_dim$"):
        pick(nbs, ["dp_icl/02"])
