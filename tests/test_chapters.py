"""privtrans.book.chapters: an unknown chapter names the registry, and the README maps every chapter."""

import pytest

from privtrans.book import chapters


def test_unknown_chapter_names_the_registry():
    with pytest.raises(chapters.ParameterError, match="dpformer, taft, merge, dp_icl, mpc_attention"):
        chapters.get("tangent")


def test_the_readme_maps_every_chapter():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for key in chapters.KEYS:
        assert f"| `{key}` | `notebooks/{key}/`" in readme and f"`lib/privtrans/{key}/`" in readme
