"""Real English conversations, read from the YAML files that the chatterbot-corpus wheel installs.

- Source: the ``chatterbot-corpus`` package (Gunther Cox and contributors), ``chatterbot_corpus/
  data/english/*.yml``: short human-written conversations on 20-odd topics (greetings, food, AI,
  ...), each a list of turns.
- Licence: BSD-3-Clause; the book reads the installed files and does not redistribute them.
- Pin: ``chatterbot-corpus==1.2.2``. The package is data only; it is located with
  ``importlib.util.find_spec`` (``wheel_files.package_file``) and never imported.
"""

from __future__ import annotations

from pathlib import Path

from .wheel_files import package_file

PIN = "chatterbot-corpus==1.2.2"


def english_dir() -> Path:
    """The folder of English YAML files in the installed wheel; a clear error naming the pin otherwise."""
    return package_file("chatterbot_corpus", "data", "english", pin=PIN,
                        what="its English conversation files")


def conversations() -> list[list[str]]:
    """Every English conversation as its list of turns (raw text), files in name order.

    Empty turns (``null`` in the YAML) are dropped; nothing else is changed."""
    from privtrans.book.paths import read_yaml

    out = []
    for path in sorted(english_dir().glob("*.yml")):
        doc = read_yaml(path) or {}
        for conv in doc.get("conversations") or []:
            out.append([str(t) for t in conv if t is not None])
    return out
