"""The chapter registry: the one list of the book's chapters, in reading order.

Everything else reads it: the pipeline (which notebooks exist, in which order), the profile tables
and claims files (``lib/privtrans/<key>/profile*.yaml``, ``data/<key>/claims*.yaml``), the table of
contents (``_toc.yml`` is written from it: ``python -m privtrans.book.chapters toc``, and the build
stops if the two disagree), the Makefile's usage text, the landing page and the tests.

A chapter's key names its folder everywhere: ``notebooks/<key>/``, ``data/<key>/``,
``lib/privtrans/<key>/``, ``book/<key>.md``.

The machinery imports no chapter (the import contracts in ``pyproject.toml``), except by the names
declared here: a chapter's ``readouts`` module, which a notebook session watches so that each claim
links the readout that computed its value (``session.start``, ``producers``). ``Chapter.module``
is the one place a chapter's module name is put together, and tests/test_layers.py checks that each
declared name is a module of that chapter's own package.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

PROFILES = ("smoke", "ci", "paper")  # the columns of every profile table
DRY = "dry"  # `paper`'s settings with each long loop cut to one step (privtrans.book.dry)
RUNNABLE = PROFILES + (DRY,)  # what a notebook may be run at


class ParameterError(ValueError):
    """A parameter (profile, seed, chapter) with a value it cannot take."""


PACKAGE = "privtrans"


@dataclass(frozen=True)
class Chapter:
    key: str
    title: str  # what the chapter is about, one line (landing page)
    cite: str  # the paper's key in book/references.bib
    readouts: str  # its module of readouts (what the notebooks record), within its package

    def module(self, name: str) -> str:
        """The dotted name of the chapter's own module ``name`` (``lib/privtrans/<key>/<name>.py``)."""
        return f"{PACKAGE}.{self.key}.{name}"


CHAPTERS: tuple[Chapter, ...] = (
    Chapter("dpformer", "DP training of Transformers on long-tailed data: Phantom Clipping, Re-Attention", "dpformer",
            readouts="readouts"),
    Chapter("taft", "Tangent (linearised) Transformers: composition, unlearning, DP fine-tuning", "taft",
            readouts="readouts"),
    Chapter("merge", "Fast private text generation under 2-party MPC", "merge", readouts="readouts"),
    Chapter("dp_icl", "NoisyHead: DP pre-training of a linear attention head for in-context learning", "dpicl",
            readouts="readouts"),
    Chapter("mpc_attention", "MPC-friendly attention (freeDiv / 2Quad), Quad GeLU, distillation", "mpcattention",
            readouts="readouts"),
)
KEYS: tuple[str, ...] = tuple(c.key for c in CHAPTERS)


def get(key) -> Chapter:
    """The chapter called ``key``; a clear error naming the allowed keys otherwise."""
    for c in CHAPTERS:
        if c.key == key:
            return c
    raise ParameterError(f"unknown chapter {key!r}: allowed values are {', '.join(KEYS)}")


def check_profile(profile) -> str:
    if not isinstance(profile, str) or profile not in RUNNABLE:
        raise ParameterError(f"unknown profile {profile!r}: allowed values are {', '.join(RUNNABLE)}")
    return profile


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ParameterError(f"seed must be a non-negative int, got {seed!r} ({type(seed).__name__})")
    return seed


def toc_yaml() -> str:
    """The text of ``_toc.yml``: one TOC entry per chapter, its executed notebooks as sections."""
    lines = [
        "# Written by `python -m privtrans.book.chapters toc > _toc.yml` from the chapter registry",
        "# (lib/privtrans/book/chapters.py); edit the registry, not this file. The executed notebooks",
        "# are written by papermill into book/_executed/<chapter>/ (git-ignored) and listed by a glob.",
        "format: jb-book",
        "root: book/intro",
        "parts:",
        "  - caption: Chapters",
        "    chapters:",
    ]
    for c in CHAPTERS:
        lines += [f"      - file: book/{c.key}", "        sections:", f"          - glob: book/_executed/{c.key}/*"]
    lines += ["  - caption: About", "    chapters:", "      - file: book/discrepancies", "      - file: book/reproducing",
              "      - file: book/bibliography",
              # the library's source, one page per package (privtrans.book.pipeline.library, git-ignored)
              "      - file: book/library", "        sections:", "          - glob: book/_library/*"]
    return "\n".join(lines) + "\n"


def landing_table() -> str:
    """The chapter table of the landing page (``book/_generated/chapters.md``)."""
    rows = ["| Chapter | Paper | What it is about |", "|---|---|---|"]
    rows += [f"| {{doc}}`/book/{c.key}` | {{cite:t}}`{c.cite}` | {c.title} |" for c in CHAPTERS]
    return "\n".join(rows) + "\n"


def main(argv=None) -> int:
    """``python -m privtrans.book.chapters [keys|toc]``: the chapter keys (for the Makefile) or the TOC."""
    what = (argv if argv is not None else sys.argv[1:]) or ["keys"]
    if what[0] == "keys":
        print("|".join(KEYS))
    elif what[0] == "toc":
        sys.stdout.write(toc_yaml())
    else:
        print(f"usage: python -m privtrans.book.chapters [keys|toc] (got {what[0]!r})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
