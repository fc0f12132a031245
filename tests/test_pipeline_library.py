"""privtrans.book.pipeline.library: the appendix has one page per package, showing its modules' real source."""

from pathlib import Path

from privtrans.book.pipeline import library

REPO = Path(__file__).resolve().parents[1]


def test_one_page_per_package_with_each_modules_source_and_definitions(tmp_path):
    lib = tmp_path / "lib" / "privtrans" / "taft"
    lib.mkdir(parents=True)
    (lib.parent / "__init__.py").write_text("")
    (lib / "__init__.py").write_text('"""taft."""\n')
    (lib / "readouts.py").write_text("import math\n\n\ndef cost(x):\n    return x\n\n\nclass Row:\n    pass\n")
    (lib / "zz.py").write_text("def last():\n    pass\n")
    stale = tmp_path / "book" / "_library" / "privtrans.gone.md"
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    names = library.write_pages(tmp_path)
    assert names == ["privtrans", "privtrans.taft"]
    page = (tmp_path / "book" / "_library" / "privtrans.taft.md").read_text()
    assert page.startswith("# `privtrans.taft`\n")
    # the package's __init__, then its modules by name, each a labelled section
    heads = [ln for ln in page.splitlines() if ln.startswith("## ")]
    assert heads == ["## `privtrans.taft`", "## `privtrans.taft.readouts`", "## `privtrans.taft.zz`"]
    assert "(lib-mod-privtrans.taft.readouts)=\n## `privtrans.taft.readouts`" in page
    assert "```{literalinclude} /lib/privtrans/taft/readouts.py" in page and ":lineno-match:" in page
    assert "{ref}`cost <lib-privtrans.taft.readouts.cost>` (line 4), {ref}`Row <lib-privtrans.taft.readouts.-row>` (line 8)" in page
    # one labelled section per definition; together a module's sections show every line once
    assert "(lib-privtrans.taft.readouts.cost)=\n### `cost`" in page
    readouts = page.split("## `privtrans.taft.readouts`")[1].split("## `privtrans.taft.zz`")[0]
    assert [ln for ln in readouts.splitlines() if ln.startswith(":lines:")] == [":lines: 1-3", ":lines: 4-7", ":lines: 8-9"]
    assert not stale.exists()  # a package that is gone loses its page
    links = library.chapter_links("taft", tmp_path)
    assert "{ref}`readouts <lib-mod-privtrans.taft.readouts>`" in links
    assert library.chapter_links("merge", tmp_path) == ""


def test_labels_keep_names_that_differ_only_in_case_apart():
    assert library.label("privtrans.taft.experiments.bench") == "lib-privtrans.taft.experiments.bench"
    assert library.label("privtrans.taft.experiments.Bench") == "lib-privtrans.taft.experiments.-bench"
    assert library.label("privtrans.dpformer.moments._Phi") != library.label("privtrans.dpformer.moments._phi")
    # a module's label is never a definition's (a package may define a name its submodule has)
    assert library.module_label("privtrans.taft.readouts.finetuning") != library.label("privtrans.taft.readouts.finetuning")


def test_sections_cover_the_file_once_from_each_decorator():
    src = "import x\n\n@dec\ndef f():\n    pass\nclass C:\n    pass\n"
    assert library.sections(src) == [(None, 1, 2), ("f", 3, 5), ("C", 6, 7)]
    assert library.sections("def g():\n    pass\n") == [("g", 1, 2)]
    assert library.sections("") == []


def test_every_module_of_the_library_is_on_a_page_and_the_toc_lists_them():
    names = [n for n, _ in library.modules(REPO)]
    assert "privtrans.shared.seeds_together" in names and "privtrans.book.verdicts" in names
    toc = (REPO / "_toc.yml").read_text()
    assert "glob: book/_library/*" in toc and "file: book/library" in toc
