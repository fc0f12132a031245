"""privtrans.shared.datasets.chatterbot: a missing wheel names the pinned chatterbot-corpus."""

import importlib.util

import pytest

from privtrans.shared.datasets import chatterbot


def test_chatterbot_missing_wheel_names_the_pin(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(FileNotFoundError, match="chatterbot-corpus==1.2.2"):
        chatterbot.english_dir()
