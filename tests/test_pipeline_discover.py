"""privtrans.book.pipeline.discover: notebook names are checked, and a notebook is picked by chapter, name
or stem."""

import pytest

from privtrans.book import chapters
from privtrans.book.pipeline.discover import discover, pick


def test_notebook_names_are_checked(root):
    d = root / "notebooks" / "dp_icl"
    d.mkdir(parents=True)
    (d / "01_ok.md").write_text("")
    assert [n.name for n in discover(root)] == ["ok"]
    (d / "Bad Name.md").write_text("")
    with pytest.raises(ValueError, match="NN_topic"):
        discover(root)


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
