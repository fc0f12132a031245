"""What each profile means for each experiment.

One YAML table per chapter in ``profile_tables/<chapter>.yaml`` (a chapter may split it into
``<chapter>.<part>.yaml`` files; experiment names must not repeat across them)::

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

import yaml

from . import CHAPTERS, PROFILES

TABLES = Path(__file__).with_name("profile_tables")


class ParameterError(ValueError):
    """A notebook parameter with a value it cannot take."""


def check_profile(profile) -> str:
    if not isinstance(profile, str) or profile not in PROFILES:
        raise ParameterError(
            f"unknown profile {profile!r}: allowed values are {', '.join(PROFILES)}"
        )
    return profile


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ParameterError(f"seed must be a non-negative int, got {seed!r} ({type(seed).__name__})")
    return seed


def check_chapter(chapter) -> str:
    if chapter not in CHAPTERS:
        raise ParameterError(f"unknown chapter {chapter!r}: allowed values are {', '.join(CHAPTERS)}")
    return chapter


@lru_cache(maxsize=None)
def _table(chapter: str) -> dict:
    paths = sorted(TABLES.glob(f"{chapter}.yaml")) + sorted(TABLES.glob(f"{chapter}.*.yaml"))
    if not paths:
        raise FileNotFoundError(f"no profile table for chapter {chapter!r}: expected {TABLES / chapter}.yaml")
    table: dict = {}
    for path in paths:
        part = yaml.safe_load(path.read_text()) or {}
        clash = set(part) & set(table)
        if clash:
            raise ParameterError(f"{path.name} redefines experiment(s) {sorted(clash)}")
        table.update(part)
    return table


def experiments(chapter: str) -> list[str]:
    return list(_table(check_chapter(chapter)))


def settings(chapter: str, experiment: str, profile: str) -> dict:
    """The merged settings (``common`` then the profile's own) of one experiment."""
    check_profile(profile)
    table = _table(check_chapter(chapter))
    if experiment not in table:
        raise ParameterError(
            f"no experiment {experiment!r} in profile_tables/{chapter}.yaml; known: {', '.join(table)}"
        )
    entry = table[experiment]
    missing = [p for p in PROFILES if p not in entry]
    if missing:
        raise ParameterError(f"{chapter}/{experiment} defines no settings for profile(s) {missing}")
    out = dict(entry.get("common") or {})
    out.update(entry[profile] or {})
    return out
