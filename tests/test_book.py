"""The whole book at profile smoke, built in a temporary copy of the checkout: every notebook runs
through papermill, the claims are judged, Jupyter Book builds with -W, and the HTML is offline.
Then a deliberately broken notebook must fail the build by name and cell, leaving the book in place."""

import json
import re

import nbformat
import pytest

from privtrans.book import claims
from privtrans.book.chapters import KEYS as CHAPTERS
from privtrans.book.pipeline.discover import discover

from conftest import pipeline  # the smoke book itself is the session fixture `book` in conftest.py


def _cheapest(root):
    """The notebook that ran fastest in the smoke build: the tests that re-run one notebook take it."""
    seconds = {(r["chapter"], r["notebook"]): r["seconds"]
               for r in json.loads((root / "_build" / "summary.json").read_text())["notebooks"]}
    return min(discover(root), key=lambda nb: seconds[(nb.chapter, nb.stem)])

pytestmark = pytest.mark.book


def test_every_notebook_ran_at_smoke(book):
    root, proc = book
    summary = json.loads((root / "_build" / "summary.json").read_text())
    names = {(n.chapter, n.stem) for n in discover(root)}
    assert names, "the book has no notebooks"
    assert {(n["chapter"], n["notebook"]) for n in summary["notebooks"]} == names
    for n in summary["notebooks"]:
        assert n["status"] == "ok" and n["profile"] == "smoke" and n["error"] is None, n
        assert set(n) >= {"chapter", "notebook", "profile", "seed", "seconds", "status", "error"}
    for c in summary["claims"]:
        assert set(c) >= {"chapter", "id", "kind", "paper_item", "quote", "where", "paper_value", "value",
                          "verdict", "reason", "seeds"}
        assert c["verdict"] in ("held", "contradicted", "inconclusive", "not judged") and c["reason"]
        assert c["reason"].startswith(c["verdict"]), c  # the reason is the verdict's, computed
        if c["kind"] == "reproduction":
            assert c["quote"] and c["where"], c["id"]
    n = len(names)
    done = [ln for ln in proc.stdout.splitlines() if re.match(r"\s+\[\d+/\d+\] \S+\s+\d+\.\ds ", ln)]
    assert len(done) == n and all(f"/{n}]" in ln and re.search(r"\d+\.\ds\s+ok\s+\(elapsed", ln) for ln in done)


def test_every_reproduction_is_proven_on_its_trials(book):
    """Each reproduction's own rule, run by the build on its least-favourable null, its boundary, the
    paper's effect, a reversal and a lost seed (``privtrans.book.trials``), never fails on normal
    cells: the engine is sound. Its whole path (``privtrans.book.controls``) and its recorded seeds may
    fail their controls: a finding about the readout or the data, which the build acts on (no verdict
    stands on the side a failed control undermines) and names on the page."""
    root, _ = book
    summary = json.loads((root / "_build" / "summary.json").read_text())
    reps = [c for c in summary["claims"] if c["kind"] == "reproduction"]
    assert reps and all(c.get("trials") for c in reps), [c["id"] for c in reps if not c.get("trials")]
    rule = ("null:", "boundary:", "reversal", "lost seed:", "the paper's effect with no spread")
    broken = {f"{c['chapter']}/{c['id']}": f for c in reps for f in c["trials"]["failures"] if f.startswith(rule)}
    assert not broken, broken
    for c in reps:
        t = c["trials"]
        for f, side in zip(t["failures"], t["sides"]):
            assert c["verdict"] not in {"both": ("held", "contradicted"), "gate": ()}.get(side, (side,)), (c["id"], f)
            if side == "gate":  # a gate that reads a compared arm excuses nothing
                assert not c["reason"].startswith("not judged: the setting cannot"), c["id"]
        if t["kind"] == "interval":
            assert t["null_held"] <= 0.05 and t["draws"] >= 4000 and t["reversal_held"] <= 0.05, c["id"]
            assert t["controls"] and (t["controls"]["ran"] or t["controls"]["why_not"]), c["id"]
    ran = [c for c in reps if (c["trials"].get("controls") or {}).get("ran")]
    assert len(ran) >= len([c for c in reps if c["trials"]["kind"] == "interval"]) // 2, "the whole path ran for few"
    status = (root / "book" / "_generated" / "status.md").read_text()
    assert "Power under 50 %" in status


def test_executed_notebooks_have_outputs_and_results(book):
    root, _ = book
    for nb in discover(root):
        ex = nbformat.read(root / "book" / "_executed" / nb.chapter / f"{nb.stem}.ipynb", as_version=4)
        assert ex.metadata.papermill.end_time and not ex.metadata.papermill.exception
        assert ex.metadata.papermill.parameters == {"profile": "smoke", "seed": 0}
        assert any(c.get("outputs") for c in ex.cells if c.cell_type == "code"), nb.label
        res = json.loads((root / "book" / "_generated" / nb.chapter / nb.name / "results.json").read_text())
        assert res["profile"] == "smoke" and res["values"], f"{nb.label} recorded nothing"


def test_html_is_built_offline_with_claims_and_downloads(book):
    root, _ = book
    html = root / "_build" / "html"
    assert (html / "index.html").exists()
    assert (html / "_static" / "mathjax" / "tex-chtml.js").exists()
    remote = re.compile(r"""<(?:script|link)[^>]+(?:src|href)=["'](?:https?:)?//""", re.I)
    for page in html.rglob("*.html"):
        assert not remote.search(page.read_text()), f"{page} loads something remote"
    for ch in CHAPTERS:
        page = (html / "book" / f"{ch}.html").read_text()
        assert "Paper vs. this reproduction" in page and "Built at profile" in page, ch
        assert "Trials:" in page, f"{ch}: no reproduction shows what its trials measured"
        # captions carry the paper's numbering only ("Figure 1(a-b) reproduced"), no Sphinx "Fig. N"
        assert "caption-number" not in page, f"{ch}: a figure caption is numbered by Sphinx"
        # every claim row has its anchor and links the executed notebook that recorded its values
        assert page.count('id="claim-') == len(claims.load(ch, root)["claims"]), ch
        assert re.search(r'recorded by\s*<a[^>]+href="_executed/' + ch + r'/\d\d_', page), ch
        # ... and links the code behind it: the chapter's modules in the library appendix
        assert f'href="_library/privtrans.{ch}.readouts.html#lib-mod-privtrans-{ch.replace("_", "-")}-readouts"' in page, ch
        # ... and the readout function that computed a claim's value, at its own section (anchors are
        # resolved by test_browser's link check)
        # (a readouts package: the module of the table it serves, privtrans.<ch>.readouts.<module>, on the
        # package's page)
        anchor = f"lib-privtrans-{ch.replace('_', '-')}-readouts-"  # Sphinx's ids: '-' for '.' and '_'
        assert re.search(rf'computed by\s*<a[^>]+href="_library/privtrans\.{ch}\.readouts\.html#{anchor}', page), ch
    readouts = (html / "book" / "_library" / "privtrans.taft.readouts.html").read_text()
    assert "def table1_finetuning" in re.sub(r"<[^>]+>", "", readouts)  # the source, rendered
    for nb in discover(root):
        page = (html / "book" / "_executed" / nb.chapter / f"{nb.stem}.html").read_text()
        assert f"{nb.stem}.ipynb" in page
        # the parameters it ran with, once: papermill's cell shown, the source's defaults hidden
        assert "tag_injected-parameters" in page and "tag_parameters" not in page, nb.label
        assert page.count("const THEBE_JS_URL") <= 1, f"{nb.label} declares THEBE_JS_URL twice"
        assert "Re-run this chapter" in page and f"CH={nb.chapter}" in page, nb.label
    intro = (html / "book" / "intro.html").read_text()
    assert "profile <strong>smoke</strong>" in intro
    assert "status.png" in intro and (html / "_images").is_dir() and "Checks held" in intro and "Inconclusive" in intro  # the dashboard
    assert "not built yet" not in intro  # every chapter has notebooks, and the smoke book ran them all
    summary = json.loads((root / "_build" / "summary.json").read_text())
    intervals = [c for c in summary["claims"] if c["kind"] == "reproduction" and c.get("margin") is not None
                 and any((cell.get("n") or 0) >= 2 for cell in (c.get("cells") or {}).values())]
    # every chapter's comparison claims in one forest plot (Sphinx numbers clashing image names: forestN.png)
    assert bool(re.search(r'<img[^>]+src="[^"]*forest\d*\.png"', intro)) == bool(intervals)
    assert summary["machine"]["cores"] >= 1 and "torch" in summary["machine"]["versions"]


def test_a_second_run_is_cached(book):
    root, _ = book
    proc = pipeline(root, "--profile", "smoke", "--no-html")
    assert proc.returncode == 0
    lines = [ln for ln in proc.stdout.splitlines() if re.match(r"\s+\[\d+/\d+\]", ln)]
    assert lines and all("ok (cached)" in ln for ln in lines)


def test_a_damaged_state_entry_is_run_again(book):
    root, _ = book
    victim = _cheapest(root)
    state = root / "_build" / "state" / victim.chapter / f"{victim.stem}.json"
    state.write_text(state.read_text()[:20])  # cut short, as a kill mid-write once left it
    proc = pipeline(root, "--profile", "smoke", "--no-html", "--chapter", victim.chapter)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "unreadable" in proc.stderr and "Traceback" not in proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if victim.label in ln and "s  ok" in ln)
    assert "cached" not in line
    assert json.loads(state.read_text())["status"] == "ok"


def test_unknown_profile_is_refused(book):
    root, _ = book
    proc = pipeline(root, "--profile", "fast")
    assert proc.returncode == 2 and "allowed values are smoke, ci, paper" in proc.stderr


def test_a_chapter_run_before_the_whole_book_ran_leaves_the_html_alone(book):
    root, _ = book
    nbs = discover(root)
    other = next(nb for nb in nbs if nb.chapter != nbs[0].chapter)
    state = root / "_build" / "state" / other.chapter / f"{other.stem}.json"
    saved = state.read_text()
    index = root / "_build" / "html" / "index.html"
    before = index.stat().st_mtime_ns
    state.unlink()
    try:
        proc = pipeline(root, "--profile", "smoke", "--chapter", nbs[0].chapter)
    finally:
        state.write_text(saved)
    assert proc.returncode == 0, proc.stderr
    assert "HTML book not built" in proc.stdout and other.label in proc.stdout
    assert index.stat().st_mtime_ns == before
    from privtrans.book import claims

    its = {c["id"] for c in claims.load(other.chapter, root)["claims"] if c["notebook"] == other.name}
    summary = json.loads((root / "_build" / "summary.json").read_text())
    judged = [c for c in summary["claims"] if c["chapter"] == other.chapter and c["id"] in its]
    assert all(c["verdict"] == "not judged" for c in judged)  # its stale results.json decides nothing


def test_a_broken_notebook_fails_the_build_and_keeps_the_last_book(book):
    root, _ = book
    index = root / "_build" / "html" / "index.html"
    before = index.stat().st_mtime_ns
    victim = _cheapest(root)
    text = victim.source.read_text()
    victim.source.write_text(text + '\n```{code-cell} ipython3\nraise RuntimeError("deliberately broken")\n```\n')
    try:
        proc = pipeline(root, "--profile", "smoke", "--chapter", victim.chapter)
    finally:
        victim.source.write_text(text)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert str(victim.source.relative_to(root)) in out
    assert re.search(r"code cell \d+ \(`raise RuntimeError", out)
    assert "RuntimeError: deliberately broken" in out
    assert "last good book" in out
    assert index.stat().st_mtime_ns == before
    summary = json.loads((root / "_build" / "summary.json").read_text())
    row = next(n for n in summary["notebooks"] if n["notebook"] == victim.stem)
    assert row["status"] == "failed" and "deliberately broken" in row["error"]


def test_training_progress_reaches_the_terminal_not_the_pages(book):
    root, proc = book
    # privtrans.book.progress_bar in dpformer's and merge's training loops, echoed by the pipeline
    shown = re.findall(r"^\r?\s+(dpformer|merge)/\w+: .*\|.*\d+/\d+", proc.stdout, re.M)
    assert {"dpformer", "merge"} <= set(shown), proc.stdout[-3000:]
    for nb in discover(root):
        text = (root / "book" / "_executed" / nb.chapter / f"{nb.stem}.ipynb").read_text()
        assert "it/s]" not in text and "s/it]" not in text, f"a progress bar landed on the page of {nb.label}"
