"""Which notebooks the book has: notebooks/<chapter>/NN_topic.md (or .py), in chapter order."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..chapters import KEYS as CHAPTERS

NAME = re.compile(r"^(\d\d)_([a-z0-9_]+)\.(md|py)$")


@dataclass(frozen=True)
class Notebook:
    chapter: str
    source: Path  # the jupytext source

    @property
    def stem(self) -> str:  # 01_fig1_low_dim
        return self.source.stem

    @property
    def name(self) -> str:  # fig1_low_dim: the experiment / results name
        return NAME.match(self.source.name).group(2)

    @property
    def label(self) -> str:
        return f"{self.chapter}/{self.stem}"


def discover(root: Path, chapters=None) -> list[Notebook]:
    out = []
    for ch in CHAPTERS:
        if chapters and ch not in chapters:
            continue
        d = root / "notebooks" / ch
        if not d.is_dir():
            continue
        for f in sorted(d.iterdir()):
            if f.suffix in (".md", ".py") and not f.name.startswith((".", "_")):
                if not NAME.match(f.name):
                    raise ValueError(f"{f}: notebook names must look like NN_topic.md (two digits, lowercase)")
                out.append(Notebook(ch, f))
    return out
