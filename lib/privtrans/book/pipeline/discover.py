"""Which notebooks the book has: notebooks/<chapter>/NN_topic.md (or .py), in chapter order."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..chapters import KEYS as CHAPTERS
from ..chapters import ParameterError

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


def pick(notebooks: list[Notebook], names: list[str]) -> list[Notebook]:
    """The ``notebooks`` that ``names`` name, as chapter/name or chapter/stem, in the book's order (the
    pipeline's and the dry run's ``--notebook``); a ParameterError names the unknown ones and the allowed."""
    known = {f"{nb.chapter}/{n}": nb for nb in notebooks for n in (nb.name, nb.stem)}
    bad = [n for n in names if n not in known]
    if bad:
        raise ParameterError(f"unknown notebook(s) {bad}: give chapter/name, one of "
                             f"{', '.join(sorted(f'{nb.chapter}/{nb.name}' for nb in notebooks))}")
    picked = {id(known[n]) for n in names}
    return [nb for nb in notebooks if id(nb) in picked]
