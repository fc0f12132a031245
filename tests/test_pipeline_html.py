"""privtrans.book.pipeline.html: the table of contents and pages follow the chapter registry; each page
keeps its scripts once, shows its parameters, says how to re-run it and links its launch buttons."""

import nbformat

from privtrans.book import chapters
from privtrans.book.pipeline.discover import Notebook


def test_the_toc_and_the_book_pages_follow_the_chapter_registry(tmp_path):
    from pathlib import Path

    from privtrans.book.pipeline import html

    repo = Path(__file__).resolve().parents[1]
    assert html.toc_problem(repo) is None, "regenerate _toc.yml from the registry"
    for key in chapters.KEYS:
        assert (repo / "book" / f"{key}.md").is_file() and f"file: book/{key}\n" in chapters.toc_yaml()
    (tmp_path / "_toc.yml").write_text(chapters.toc_yaml().replace("book/taft", "book/other"))
    assert "python -m privtrans.book.chapters toc" in html.toc_problem(tmp_path)


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
