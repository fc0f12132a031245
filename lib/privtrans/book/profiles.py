"""What each profile means for each experiment.

One YAML table per chapter, in its package: ``lib/privtrans/<chapter>/profile.yaml`` (a chapter may
split it into ``profile.<part>.yaml`` files; experiment names must not repeat across them)::

    <experiment>:
      common: {...}     # optional, shared by all profiles
      smoke: {...}      # seconds: for the tests
      ci: {...}         # minutes: the book's default; the paper's claims must still show
      paper: {...}      # the paper's own settings (GPU, hours)

Notebooks never hard-code their scale: they ask ``settings(chapter, experiment, profile)``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .chapters import DRY, PROFILES, RUNNABLE, ParameterError, check_profile, check_seed, get  # noqa: F401 - re-exported
from .paths import read_yaml

PACKAGE = Path(__file__).resolve().parents[1]  # lib/privtrans: chapter packages hold their tables


def check_chapter(chapter) -> str:
    return get(chapter).key


def table_paths(chapter: str) -> list[Path]:
    """The profile table files of a chapter (possibly none, for a chapter not built yet)."""
    d = PACKAGE / check_chapter(chapter)
    return sorted(d.glob("profile.yaml")) + sorted(d.glob("profile.*.yaml"))


@lru_cache(maxsize=None)
def _table(chapter: str) -> dict:
    paths = table_paths(chapter)
    if not paths:
        raise FileNotFoundError(f"no profile table for chapter {chapter!r}: expected {PACKAGE / chapter}/profile.yaml")
    table: dict = {}
    for path in paths:
        part = read_yaml(path) or {}
        clash = set(part) & set(table)
        if clash:
            raise ParameterError(f"{path.name} redefines experiment(s) {sorted(clash)}")
        table.update(part)
    return table


def experiments(chapter: str) -> list[str]:
    return list(_table(check_chapter(chapter)))


def settings(chapter: str, experiment: str, profile: str) -> dict:
    """The merged settings (``common`` then the profile's own) of one experiment; the dry run
    (profile ``dry``) reads `paper`'s."""
    check_profile(profile)
    column = "paper" if profile == DRY else profile
    table = _table(check_chapter(chapter))
    if experiment not in table:
        raise ParameterError(
            f"no experiment {experiment!r} in lib/privtrans/{chapter}/profile*.yaml; known: {', '.join(table)}"
        )
    entry = table[experiment]
    missing = [p for p in PROFILES if p not in entry]
    if missing:
        raise ParameterError(f"{chapter}/{experiment} defines no settings for profile(s) {missing}")
    out = dict(entry.get("common") or {})
    out.update(entry[column] or {})
    return out


def build(cls, cfg: dict, what: str):
    """``cls(**cfg)`` for a dataclass ``cls`` built from a profile mapping; an unknown key is an error
    naming it and the allowed ones (``what`` says which settings, e.g. 'pretraining')."""
    allowed = set(cls.__dataclass_fields__)
    unknown = set(cfg) - allowed
    if unknown:
        raise ParameterError(f"unknown {what} settings {sorted(unknown)}; allowed: {sorted(allowed)}")
    return cls(**cfg)
