"""A claim's verdict and the reason for it, both computed from the recorded numbers.

Four verdicts (the replication reviewer's, not a yes/no):

* **held** – the data show what the paper states: every interval the claim needs lies above its
  margin (inside its band, for a claim of a size), or a deterministic condition (a count, a closed
  form, a ratio of exact counts) is true;
* **contradicted** – the data exclude what the paper states: an interval lies at or below the margin
  (for "A beats B", the whole interval of A − B is at or below zero), or the deterministic condition
  is false;
* **inconclusive** – an interval contains the margin: these seeds cannot tell; the reason says how
  many paired seeds would resolve the paper's effect (or, where the paper gives none in our units,
  the observed one) at the observed spread;
* **not judged** – the setting cannot show the effect (a failed precondition, one seed, a value that
  could not be computed, another profile).

One error rate per claim: a claim of many cells is judged at the family levels of
:func:`family_levels` (at most 2.5 % false held, and 2.5 % false contradicted, whatever the number of
cells), and a seed that gave no value is counted, not dropped (:func:`lost`, ``lost_seeds``).

No reason is written in advance: :func:`judge_intervals` and :func:`explain` build it from the
interval, n, margin and the values a predicate compared.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

import numpy as np
from scipy import stats

HELD, CONTRADICTED, INCONCLUSIVE, NOT_JUDGED = "held", "contradicted", "inconclusive", "not judged"
VERDICTS = (HELD, CONTRADICTED, INCONCLUSIVE, NOT_JUDGED)
POWER = 0.8  # the power the "seeds needed" figure is computed for (two-sided 5 % test, paired t)
MAX_SEEDS = 10_000
PAPERS = "the paper's"  # beyond this the effect is, for a book, unresolvable: said so rather than printed


class ClaimShapeError(ValueError):
    """An interval expression that does not give intervals, or a `need` that is not allowed."""


def _g(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "–"
    if x == 0:
        return "0"
    return f"{x:+.{digits}g}"


def _is_interval(v) -> bool:
    return isinstance(v, Mapping) and {"mean", "lo", "hi", "n"} <= set(v)


def cells(value) -> dict[str, Mapping]:
    """The intervals an ``interval`` expression gave, by cell name ('' for a single interval).

    Accepts one interval (a dict with mean, lo, hi, n: :class:`privtrans.book.paired.Paired`'s
    ``as_dict()``), or a dict / list of them, nested one level (task -> N -> interval)."""
    if _is_interval(value):
        return {"": value}
    out: dict[str, Mapping] = {}
    items = value.items() if isinstance(value, Mapping) else enumerate(value) if isinstance(value, (list, tuple)) \
        else None
    if items is None:
        raise ClaimShapeError(f"an interval claim needs a paired interval (mean, lo, hi, n) or a dict/list of them, "
                              f"got {type(value).__name__}")
    for k, v in items:
        if _is_interval(v):
            out[str(k)] = v
        elif isinstance(v, (Mapping, list, tuple)):
            out.update({f"{k}/{kk}": vv for kk, vv in cells(v).items()})
        else:
            raise ClaimShapeError(f"cell {k!r} is not a paired interval (mean, lo, hi, n): {v!r}")
    if not out:
        raise ClaimShapeError("the interval expression gave no cells")
    return out


def need_allowed(need) -> bool:
    """Whether ``need`` is one of the forms :func:`required` reads (whatever the number of cells)."""
    return (need in (None, "all", "any") or (isinstance(need, int) and not isinstance(need, bool) and need >= 1)
            or (isinstance(need, str) and re.fullmatch(r"all but \d+", need) is not None))


def required(need, n_cells: int) -> int:
    """How many cells must clear the margin: need = 'all' (default), 'any', 'all but K' (the paper's
    "almost all"), or an int k <= cells."""
    if need in (None, "all"):
        return n_cells
    if need == "any":
        return 1
    m = re.fullmatch(r"all but (\d+)", need) if isinstance(need, str) else None
    if m and 0 <= int(m.group(1)) < n_cells:
        return n_cells - int(m.group(1))
    if isinstance(need, int) and not isinstance(need, bool) and 1 <= need <= n_cells:
        return need
    raise ClaimShapeError(f"need must be 'all', 'any', 'all but K' (K < {n_cells}) or an integer from 1 to "
                          f"{n_cells} (the cells), got {need!r}")


def sd_of(cell: Mapping) -> float | None:
    """The sd of the paired differences, recovered from the interval's half width."""
    n, lo, hi = cell.get("n") or 0, cell.get("lo"), cell.get("hi")
    if n < 2 or lo is None or hi is None:
        return None
    conf = cell.get("confidence") or 0.95
    return (hi - lo) / 2 * math.sqrt(n) / stats.t.ppf(0.5 + conf / 2, n - 1)


def seeds_needed(sd: float | None, effect: float | None, alpha: float = 0.05) -> int | None:
    """Paired seeds for an 80 %-power two-sided level-``alpha`` paired t test of ``effect`` at spread
    ``sd`` (statsmodels' TTestPower: the standard power solver for the one-sample/paired t test)."""
    if sd is None or effect is None or effect == 0:
        return None
    if sd == 0:
        return 2
    from statsmodels.stats.power import TTestPower

    d = abs(effect) / sd
    # statsmodels' paired/one-sample t power; its solve_power fails to converge at both ends of the range
    # a book meets, so the smallest n is found by bisection on power. The non-central t gives NaN far in
    # its tail (d·sqrt(n) > ~10), where the power is 1 to many digits.
    def power(nobs):
        p = TTestPower().power(effect_size=d, nobs=nobs, alpha=alpha, alternative="two-sided")
        return 1.0 if math.isnan(p) and d * math.sqrt(nobs) > 8 else p

    if power(2) >= POWER:
        return 2
    if power(MAX_SEEDS) < POWER:
        return MAX_SEEDS + 1
    lo, hi = 2, MAX_SEEDS  # power(lo) < POWER <= power(hi); power grows with n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power(mid) >= POWER:
            hi = mid
        else:
            lo = mid
    return hi


# --- one error rate per claim ------------------------------------------------------------------------
#: one-sided error of one cell on each side: a readout records the two-sided 95 % interval
ALPHA = 0.025
#: what a cell's difference is judged against: above a margin, or inside a band (a size claim)
LOST_SEED_RULES = ("count", "drop")


def family_levels(k: int, n_cells: int) -> tuple[float, float]:
    """(held, contradicted) one-sided level of each cell when ``k`` of ``n_cells`` must clear.

    The claim "at least k of n cells are above the margin" is held when at least k cells clear it,
    each at ALPHA / (n − k + 1), and contradicted when at least n − k + 1 cells lie at or below it, each
    at ALPHA / k: the Bonferroni partial-conjunction test (Benjamini & Heller 2008, Biometrics 64:1215)
    on each side, whose family-wise error is at most ALPHA whatever the cells' dependence. For one
    cell both are ALPHA (the recorded 95 % interval); "all" needs no correction to hold (an
    intersection-union test) but Bonferroni over n to contradict; "any" the reverse."""
    return ALPHA / (n_cells - k + 1), ALPHA / k


@lru_cache(maxsize=4096)
def _t(p: float, df: int) -> float:
    return float(stats.t.ppf(p, df))


def _scale(n, conf, alpha):
    """The recorded interval's half widths rescaled from its quantile to the one-sided 1 − alpha."""
    n = np.asarray(n, float)
    df = np.maximum(n - 1, 1)
    return stats.t.ppf(1 - alpha, df) / stats.t.ppf(0.5 + np.asarray(conf, float) / 2, df)


def bounds(cell: Mapping, alpha: float) -> tuple[float, float]:
    """(lower, upper) one-sided bounds of a recorded cell at level ``alpha`` each: the recorded
    interval's two half widths (a t interval at its ``confidence``, n − 1 degrees of freedom)
    rescaled from its quantile to 1 − alpha. Exact for the book's t intervals, resolution-widened
    ones included; an asymmetric interval keeps its asymmetry."""
    n, conf = int(cell["n"]), cell.get("confidence") or 0.95
    scale = _t(1 - alpha, n - 1) / _t(0.5 + conf / 2, n - 1)
    m = cell["mean"]
    return m - (m - cell["lo"]) * scale, m + (cell["hi"] - m) * scale


def _has_interval(cell: Mapping) -> bool:
    return (cell.get("n") or 0) >= 2 and cell.get("lo") is not None and cell.get("hi") is not None


def lost(cell: Mapping) -> int:
    """Seeds planned for a cell that gave no value (a failed or diverged run)."""
    return max(0, int(cell.get("planned") or cell.get("n") or 0) - int(cell.get("n") or 0))


#: a cell's verdict as a code, so that the trials judge thousands of generated cells at once with the
#: very rule a build applies to one (:func:`cell_codes`)
CODES = (HELD, CONTRADICTED, INCONCLUSIVE, NOT_JUDGED)
_H, _C, _I, _N = range(4)


def cell_codes(mean, lo, hi, n, planned, margin: float | None = None, a_held: float = ALPHA,
               a_contra: float = ALPHA, band: Sequence[float] | None = None, lost_seeds: str = "count",
               confidence=0.95):
    """The cell rule on arrays (any shape, broadcast): held when the lower bound at ``a_held`` clears
    the margin (both bounds lie inside the band), contradicted when the upper bound at ``a_contra`` is
    at or below it (the band lies wholly outside the bounds, each side at ``a_contra / 2``); not judged without an interval (n < 2)
    or on a **tie**: every paired seed exactly at the margin (a band's edge), an interval of width 0
    there, which a measure that cannot tell gives (every curve rising, so every fall-back share 0),
    never evidence either way. ``lost_seeds='count'``: a cell that lost a seed is not held on the
    seeds that survived. Codes index :data:`CODES`."""
    mean, lo, hi = (np.asarray(x, float) for x in (mean, lo, hi))
    n = np.asarray(n, float)
    ok = (n >= 2) & np.isfinite(lo) & np.isfinite(hi) & np.isfinite(mean)
    # a size (band) is contradicted on either side of it: each side at half the level, so that a true
    # size on one edge is not excluded by an interval that also reaches past the other one
    a_side = a_contra if band is None else a_contra / 2
    s_h, s_c = _scale(np.where(ok, n, 2), confidence, a_held), _scale(np.where(ok, n, 2), confidence, a_side)
    lo_h, hi_h = mean - (mean - lo) * s_h, mean + (hi - mean) * s_h
    lo_c, hi_c = mean - (mean - lo) * s_c, mean + (hi - mean) * s_c
    edges = [margin] if band is None else list(band)
    tie = _same(lo, hi) & np.any([_same(mean, e) for e in edges], axis=0)
    if band is not None:
        held, contra = (band[0] < lo_h) & (hi_h < band[1]), (hi_c < band[0]) | (lo_c > band[1])
    else:
        held, contra = lo_h > margin, hi_c <= margin
    if lost_seeds == "count":
        held = held & (np.asarray(planned, float) <= n)
    out = np.where(held, _H, np.where(contra, _C, _I))
    return np.where(ok & ~tie, out, _N)


def cell_verdict(cell: Mapping, margin: float | None = None, a_held: float = ALPHA, a_contra: float = ALPHA,
                 band: Sequence[float] | None = None, lost_seeds: str = "count") -> str:
    """One cell's verdict (:func:`cell_codes`, the one rule)."""
    if not _has_interval(cell):
        return NOT_JUDGED
    code = cell_codes(cell["mean"], cell["lo"], cell["hi"], cell["n"], cell.get("planned") or cell["n"], margin,
                      a_held, a_contra, band, lost_seeds, cell.get("confidence") or 0.95)
    return CODES[int(code)]


def family_codes(codes, k: int):
    """The family's verdict codes from its cells' codes (last axis: the cells): held when at least k
    cells are held, contradicted when more than n − k are contradicted, not judged when the cells
    without an interval could still decide it, inconclusive otherwise."""
    codes = np.asarray(codes)
    total = codes.shape[-1]
    h, c, u = ((codes == x).sum(axis=-1) for x in (_H, _C, _N))
    undecided = (u > 0) & (h + u >= k) & (c + u > total - k)
    return np.where(h >= k, _H, np.where(c > total - k, _C, np.where(undecided, _N, _I)))


def _same(a, b):
    """Equal but for floating-point rounding (a mean of exact ties can come out at 1e-17)."""
    return np.isclose(a, b, rtol=1e-9, atol=1e-12)


def is_tie(cell: Mapping, margin: float | None, band: Sequence[float] | None = None) -> bool:
    """Every paired seed of the cell exactly at the margin (a band's edge): see :func:`cell_codes`."""
    edges = [margin] if band is None else list(band)
    return _has_interval(cell) and bool(_same(cell["lo"], cell["hi"])) and any(bool(_same(cell["mean"], e))
                                                                                  for e in edges)


def describe_cell(name: str, cell: Mapping) -> str:
    conf = cell.get("confidence") or 0.95
    head = f"{name}: " if name else ""
    miss = lost(cell)
    of = f" of {cell.get('planned')}" if miss else ""
    if cell.get("lo") is None:
        return f"{head}mean {_g(cell.get('mean'))} over {cell.get('n') or 0}{of} seed(s), no interval"
    # a quantised measure's step enters the interval (book.paired): say it, so that a wide interval
    # around identical readings reads as the measure's limit, not as noise
    step = f", readings in steps of {cell['resolution']:.4g}" if cell.get("resolution") else ""
    return f"{head}{_g(cell['mean'])} [{_g(cell['lo'])}, {_g(cell['hi'])}] ({conf:.0%}, n = {cell['n']}{of}{step})"


def family_verdict(value, margin: float | None = None, need=None, band: Sequence[float] | None = None,
                   lost_seeds: str = "count") -> tuple[str, dict[str, str], dict[str, Mapping], int, tuple]:
    """(verdict, each cell's verdict, the cells, k, (held level, contradicted level)) of an interval
    claim: the decision alone, which :func:`judge_intervals` explains and the trials
    (:mod:`privtrans.book.trials`) repeat on generated cells."""
    if (margin is None) == (band is None):
        raise ClaimShapeError("an interval claim is judged against exactly one of a margin or a band")
    if band is not None and not (len(band) == 2 and band[0] < band[1]):
        raise ClaimShapeError(f"a band is [low, high] with low < high, got {band!r}")
    if lost_seeds not in LOST_SEED_RULES:
        raise ClaimShapeError(f"lost_seeds must be one of {', '.join(LOST_SEED_RULES)}, got {lost_seeds!r}")
    cs = cells(value)
    total = len(cs)
    k = required(need, total)
    a_h, a_c = family_levels(k, total)
    verdicts = {name: cell_verdict(c, margin, a_h, a_c, band, lost_seeds) for name, c in cs.items()}
    verdict = CODES[int(family_codes([CODES.index(v) for v in verdicts.values()], k))]
    return verdict, verdicts, cs, k, (a_h, a_c)


def _pct(a: float) -> str:
    return f"{100 * a:.3g} %"


def judge_intervals(value, margin: float | None = None, need=None, effect: float | None = None,
                    band: Sequence[float] | None = None, lost_seeds: str = "count") -> tuple[str, str]:
    """(verdict, reason) of a paired-interval claim over its cells (:func:`family_verdict`).

    held when at least k cells clear the margin (k from ``need``), each at the family level;
    contradicted when so many cells lie at or below it that k can no longer be reached; inconclusive
    otherwise; not judged when a cell that could decide it has fewer than two seeds. With a ``band``
    (a claim of a size: "around 20 %") a cell is held inside the band and contradicted outside it."""
    verdict, verdicts, cs, k, (a_h, a_c) = family_verdict(value, margin, need, band, lost_seeds)
    total = len(cs)
    target = f"the band [{_g(band[0])}, {_g(band[1])}]" if band is not None else f"the margin {_g(margin)}"
    if total == 1:
        rule = ""
    else:
        rule = (f"; family rule: {'all' if k == total else f'at least {k}'} of the {total} cells must clear "
                f"{target}, each at its one-sided {_pct(a_h)} bound, and {total - k + 1} at or beyond it, each "
                f"at {_pct(a_c)}, contradict (Bonferroni partial conjunction: at most 2.5 % either way)")
    parts = []
    if band is not None:
        words = [(HELD, "lie inside", "lies inside"), (CONTRADICTED, "lie outside", "lies outside"),
                 (INCONCLUSIVE, "overlap the edge of", "overlaps the edge of"),
                 (NOT_JUDGED, "have no interval against", "has no interval against")]
    else:
        words = [(HELD, "clear", "clears"), (CONTRADICTED, "lie at or below", "lies at or below"),
                 (INCONCLUSIVE, "contain", "contains"),
                 (NOT_JUDGED, "have no interval against", "has no interval against")]
    words.sort(key=lambda w: w[0] != verdict)  # the cells that decided the verdict first
    ties = [n for n, x in verdicts.items() if x == NOT_JUDGED and is_tie(cs[n], margin, band)]
    if ties:
        parts.append(f"{len(ties)} {'is a tie' if len(ties) == 1 else 'are ties'}: every paired seed exactly at "
                     f"{target} ({'; '.join(describe_cell(n, cs[n]) for n in ties[:6])}): a measure that cannot tell, "
                     "not evidence either way")
    for v, plural, single in words:
        names = [n for n, x in verdicts.items() if x == v and n not in ties]
        if not names:
            continue
        if total == 1:
            c = cs[names[0]]
            parts.append(("mean difference " if c.get("lo") is not None else "") + f"{describe_cell('', c)} {single} {target}")
        else:
            shown = "; ".join(describe_cell(n, cs[n]) for n in names[:6]) + ("; …" if len(names) > 6 else "")
            parts.append(f"{len(names)} {plural} {target}: {shown}")
    short = [n for n, c in cs.items() if lost(c)]
    if short:
        c = cs[short[0]]
        how = ("a diverged or failed run is a failed run, so a cell that lost seeds is not held on those that "
               "survived" if lost_seeds == "count" else "judged on the seeds that ran")
        parts.append(f"{len(short)} cell(s) lost seeds ({describe_cell(short[0], c) if short[0] else describe_cell('', c)}): {how}")
    cleared = "lie inside the band" if band is not None else "clear the margin"
    head = {HELD: (f"held: {'all' if k == total else f'at least {k}'} of the {total} cells' intervals {cleared}"
                   if total > 1 else "held"),
            CONTRADICTED: "contradicted: the data exclude the claim",
            INCONCLUSIVE: "inconclusive: these seeds cannot tell",
            NOT_JUDGED: ("not judged: a tie, every paired seed exactly at the margin" if ties else
                         "not judged: fewer than two paired seeds")}[verdict]
    reason = f"{head} ({'; '.join(parts)}{rule})"
    if verdict == INCONCLUSIVE:
        edge = margin if band is None else band[0]
        reason += "; " + _resolve_note(cs, verdicts, edge, effect, 2 * a_h, k - sum(v == HELD for v in verdicts.values()))
        reason += _contradiction_reach(cs, a_c if band is None else a_c / 2)
    return verdict, reason


def _power(d: float, n: int, alpha: float) -> float:
    """One-sided power of the paired t test at level ``alpha`` for a standardised effect ``d`` at n
    seeds (statsmodels' TTestPower; the non-central t's far tail, where it gives NaN, is 1)."""
    from statsmodels.stats.power import TTestPower

    p = TTestPower().power(effect_size=d, nobs=n, alpha=alpha, alternative="larger")
    return 1.0 if math.isnan(p) and d * math.sqrt(n) > 8 else float(p)


def joint_seeds(effects: Sequence[float], alpha: float, power: float = POWER) -> int | None:
    """The fewest paired seeds at which every open cell clears its margin together with probability
    ``power`` (each at its one-sided family level ``alpha``; the cells taken as independent, so the
    product of their powers): what it takes to decide a claim, not its easiest cell. ``effects`` are
    standardised (difference beyond the margin over the paired sd); None when one points the wrong way."""
    if not effects or any(d <= 0 for d in effects):
        return None

    def joint(n):
        return float(np.prod([_power(d, n, alpha) for d in effects]))

    if joint(2) >= power:
        return 2
    if joint(MAX_SEEDS) < power:
        return MAX_SEEDS + 1
    lo, hi = 2, MAX_SEEDS
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if joint(mid) >= power else (mid, hi)
    return hi


def _resolve_note(cs, verdicts, margin, effect, alpha=0.05, still: int | None = None) -> str:
    """How many paired seeds would resolve the ``still`` open cells the claim needs (the easiest of
    them) together, at their observed spread, and whether the paper's own difference is still inside
    their intervals."""
    open_cells = [n for n, v in verdicts.items() if v == INCONCLUSIVE]
    paper = effect is not None and effect > margin
    targets, named = [], []
    for n in open_cells:
        c = cs[n]
        sd = sd_of(c)
        target = (effect - margin) if paper else (c["mean"] - margin)
        if sd is None or sd == 0 or target == 0:
            continue
        targets.append(target / sd)
        named.append((n, target, sd))
    if not named:
        return "the observed mean equals the margin, so no number of seeds would resolve it at this spread"
    against = [(x, t) for x, t in zip(named, targets) if t < 0]
    lead_against = ""
    if against:
        (n_, target, sd), _ = against[0]
        lead_against = (f"the observed difference ({_g(target)} beyond the margin{', cell ' + n_ if n_ else ''}) points "
                        f"against the paper at the paired sd {sd:.3g}, so more seeds would tend toward contradicted")
        if len(against) == len(named):
            return lead_against
        named = [x for x, t in zip(named, targets) if t > 0]
        targets = [t for t in targets if t > 0]
        lead_against += "; for the others, "
    if still is not None and 0 < still < len(named):  # "any", "k of m": only the easiest cells it still needs
        keep = np.argsort(targets)[::-1][:still]
        named, targets = [named[i] for i in keep], [targets[i] for i in keep]
    where = "" if len(named) == 1 and not named[0][0] else (
        f" (cell {named[0][0]})" if len(named) == 1 else f" ({len(named)} open cells together)")
    need = joint_seeds(targets, alpha / 2)
    have = min(cs[n].get("n") or 0 for n, _, _ in named)
    whose = (f"{PAPERS} difference ({_g(effect - margin)} beyond the margin)" if paper else
             f"the observed difference ({_g(named[0][1])} beyond the margin)" if len(named) == 1 else
             "the observed differences")
    inside = [n for n, _, _ in named if paper and cs[n].get("hi") is not None and cs[n]["hi"] >= effect]
    lead = lead_against + (f"the paper's difference ({_g(effect - margin)} beyond the margin) lies inside the interval"
                           f"{' of cell ' + inside[0] if inside[0] else ''}: these {have} seeds neither show it nor "
                           "exclude it; " if inside else "")
    if paper and need is not None and need <= have and not inside:
        return lead_against + (f"more seeds are not what is missing: {need} paired seeds would resolve {PAPERS} difference "
                f"({_g(effect - margin)} beyond the margin) at the observed spread{where}, and these {have} did not; "
                f"every open interval ends below it, so the observed difference is well short of the paper's")
    if need is None or need > MAX_SEEDS:
        return lead + (f"{whose} is so small against the paired sd that more than {MAX_SEEDS} seeds would be needed to "
                f"resolve it{where}")
    sd_txt = ", ".join(f"{sd:.3g}" for _, _, sd in named[:3])
    return lead + (f"about {need} paired seeds would resolve {whose} at the observed paired sd {sd_txt}{where} (80 % "
            f"power for every open cell at once, each one-sided at {_pct(alpha / 2)})")


def _contradiction_reach(cs: Mapping, a_c: float, far: float = 2.0) -> str:
    """Where a cell is contradicted only far beyond the margin (few seeds at a family's level: at n = 3
    over six cells, 6.3 paired sd), say so: such a claim can hardly be contradicted at these seeds."""
    ns = [int(c.get("n") or 0) for c in cs.values() if _has_interval(c)]
    if not ns or min(ns) < 2:
        return ""
    n = min(ns)
    d = _t(1 - a_c, n - 1) / math.sqrt(n)
    if d <= far:
        return ""
    return (f"; at n = {n} a cell is contradicted only when its mean lies {d:.1f} paired sd on the wrong side of the "
            f"margin (one-sided {_pct(a_c)}), so these seeds can hardly contradict the claim")


def judge_points(value, margin: float | None = None, need=None, band: Sequence[float] | None = None) -> tuple[str, str]:
    """The same rule on exact numbers (the paper's own point values): a cell holds when it is above
    the margin (inside the band). Used by the paper's self-test, where there is no interval."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        points = {"": float(value)}
    elif isinstance(value, Mapping):
        points = {str(k): float(v) for k, v in value.items()}
    elif isinstance(value, (list, tuple)):
        points = {str(i): float(v) for i, v in enumerate(value)}
    else:
        raise ClaimShapeError(f"the paper's values must be a number or a dict/list of numbers, got {value!r}")
    k = required(need, len(points))
    if band is not None:
        above = [n for n, x in points.items() if band[0] < x < band[1]]
        target = f"inside the band [{_g(band[0])}, {_g(band[1])}]"
    else:
        above = [n for n, x in points.items() if x > margin]
        target = f"above the margin {_g(margin)}"
    verdict = HELD if len(above) >= k else CONTRADICTED
    shown = ", ".join(f"{n + ': ' if n else ''}{x:.4g}" for n, x in points.items())
    return verdict, f"{len(above)} of {len(points)} {target} (need {k}): {shown}"


# --- deterministic predicates: which comparison made the condition true or false ------------------

def _leaves(node: ast.AST):
    """The comparisons (and bare boolean terms) of a boolean expression, outermost first."""
    if isinstance(node, ast.BoolOp):
        for v in node.values:
            yield from _leaves(v)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield from _leaves(node.operand)
    else:
        yield node


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)) and len(v) > 8:
        return "[" + ", ".join(_fmt(x) for x in v[:8]) + ", …]"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, Mapping) and _is_interval(v):
        return describe_cell("", v)
    if hasattr(v, "__dict__") and not isinstance(v, type):
        return _fmt(vars(v))
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{k}: {_fmt(x)}" for k, x in list(v.items())[:8]) + ("…}" if len(v) > 8 else "}")
    return str(v)


def explain(text: str, evaluate: Callable[[str], object]) -> list[tuple[bool | None, str]]:
    """Each comparison of a boolean expression with the values it compared: [(truth, "a = 1.9 >= 2")].

    ``evaluate`` evaluates a sub-expression (the claims engine's sandboxed evaluator)."""
    out = []
    for leaf in _leaves(ast.parse(text, mode="eval").body):
        try:
            truth = evaluate(ast.unparse(leaf))
            truth = None if truth is None else bool(truth)
        except Exception as e:  # a sub-term may fail where short-circuiting skipped it
            out.append((None, f"`{ast.unparse(leaf)}` cannot be evaluated ({type(e).__name__})"))
            continue
        if isinstance(leaf, ast.Compare):
            terms = [leaf.left, *leaf.comparators]
            shown = []
            for i, t in enumerate(terms):
                src = ast.unparse(t)
                try:
                    v = evaluate(src)
                    literal = isinstance(t, ast.Constant) or (isinstance(t, ast.UnaryOp) and isinstance(t.operand, ast.Constant))
                    shown.append(src if literal else f"{src} = {_fmt(v)}")
                except Exception as e:
                    shown.append(f"{src} = ? ({type(e).__name__})")
                if i < len(leaf.ops):
                    shown.append(_OPS.get(type(leaf.ops[i]), "?"))
            out.append((truth, " ".join(shown) + f" ({'true' if truth else 'false'})"))
        else:
            out.append((truth, f"{ast.unparse(leaf)} is {truth}"))
    return out


_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
        ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}


def predicate_reason(text: str, truth: bool, evaluate: Callable[[str], object]) -> str:
    """The computed reason of a deterministic claim: the comparisons that decided it, with values."""
    terms = explain(text, evaluate)
    deciding = [s for t, s in terms if t is truth] or [s for _, s in terms]
    shown = "; ".join(deciding[:6]) + ("; …" if len(deciding) > 6 else "")
    return f"{'held' if truth else 'contradicted'}: {shown}"


def tally(verdicts: Sequence[str]) -> dict[str, int]:
    counts = {v: 0 for v in VERDICTS}
    for v in verdicts:
        counts[v] += 1
    return counts
