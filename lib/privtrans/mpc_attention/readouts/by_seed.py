"""The per-seed values the chapter's comparisons pair, and the gates read from them: one value per
planned seed (a lost one kept as None, never a shorter pairing), whether a model learned its task,
and whether a task regresses rather than classifies."""

from __future__ import annotations

from privtrans.book.readouts import num


def _regression(teachers: list) -> bool:
    """A task's teachers regress (one output: correlation) rather than classify (accuracy)."""
    return teachers[0].get("cfg", {}).get("n_out") == 1


#: a teacher "learned" its task: accuracy 5 points over chance (0.5) on a two-class task, or a
#: correlation over 0.1 on a regression task
LEARNED_ACCURACY, LEARNED_CORRELATION = 0.55, 0.1


def _per_seed(what: str, values: list, seeds: list) -> list:
    """One value per planned seed (None for a missing or NaN one: a lost seed the interval counts);
    a list of another length is an error, never a silently shorter pairing."""
    if len(values) != len(seeds):
        raise ValueError(f"{what}: {len(values)} values for the {len(seeds)} planned seeds {list(seeds)}")
    return [num(v) for v in values]


def _learned(metric, regression: bool = False) -> bool | None:
    """Did a model learn a task: accuracy 5 points over chance (two classes), or correlation > 0.1."""
    m = num(metric)
    return None if m is None else bool(m > (LEARNED_CORRELATION if regression else LEARNED_ACCURACY))
