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


def cell_verdict(cell: Mapping, margin: float | None = None, a_held: float = ALPHA, a_contra: float = ALPHA,
                 band: Sequence[float] | None = None, lost_seeds: str = "count") -> str:
    """One cell's verdict: held when its lower bound at ``a_held`` clears the margin (or both bounds
    lie inside the band), contradicted when its upper bound at ``a_contra`` is at or below the margin
    (or the band lies wholly outside its bounds). ``lost_seeds='count'``: a cell that lost a seed is
    not held on the seeds that survived (a diverged run is a failed run)."""
    if not _has_interval(cell):
        return NOT_JUDGED
    lo_h, hi_h = bounds(cell, a_held)
    lo_c, hi_c = bounds(cell, a_contra)
    if band is not None:
        held, contra = band[0] < lo_h and hi_h < band[1], hi_c < band[0] or lo_c > band[1]
    else:
        held, contra = lo_h > margin, hi_c <= margin
    if held:
        return INCONCLUSIVE if lost_seeds == "count" and lost(cell) else HELD
    return CONTRADICTED if contra else INCONCLUSIVE


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
    n_held = sum(v == HELD for v in verdicts.values())
    n_contra = sum(v == CONTRADICTED for v in verdicts.values())
    n_unjudged = sum(v == NOT_JUDGED for v in verdicts.values())
    if n_held >= k:
        verdict = HELD
    elif n_contra > total - k:
        verdict = CONTRADICTED
    elif n_unjudged and n_held + n_unjudged >= k and n_contra + n_unjudged > total - k:
        verdict = NOT_JUDGED
    else:
        verdict = INCONCLUSIVE
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
    for v, plural, single in words:
        names = [n for n, x in verdicts.items() if x == v]
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
            NOT_JUDGED: "not judged: fewer than two paired seeds"}[verdict]
    reason = f"{head} ({'; '.join(parts)}{rule})"
    if verdict == INCONCLUSIVE:
        edge = margin if band is None else band[0]
        reason += "; " + _resolve_note(cs, verdicts, edge, effect, 2 * a_h)
    return verdict, reason


def _resolve_note(cs, verdicts, margin, effect, alpha=0.05) -> str:
    """How many paired seeds would resolve the open cells at their observed spread."""
    open_cells = [n for n, v in verdicts.items() if v == INCONCLUSIVE]
    worst = None
    for n in open_cells:
        c = cs[n]
        target = (effect - margin) if effect is not None and effect > margin else (c["mean"] - margin)
        need = seeds_needed(sd_of(c), target, alpha)
        if need is not None and (worst is None or need > worst[0]):
            worst = (need, n, target, sd_of(c))
    if worst is None:
        return "the observed mean equals the margin, so no number of seeds would resolve it at this spread"
    need, name, target, sd = worst
    paper = effect is not None and effect > margin
    whose = f"{PAPERS if paper else 'the observed'} difference ({_g(target)} beyond the margin" + \
        ("; it points against the paper, so more seeds would tend toward contradicted)" if target < 0 else ")")
    where = f" (cell {name})" if name else ""
    have = cs[name].get("n") or 0
    level = "" if abs(alpha - 0.05) < 1e-12 else f" at the family level {_pct(alpha / 2)} a side"
    if paper and need <= have:
        return (f"more seeds are not what is missing: at the observed paired sd {sd:.3g}{where}, {need} paired "
                f"seeds would resolve {PAPERS} difference ({_g(target)} beyond the margin){level}, and these "
                f"{have} did not, so the observed difference ({_g(cs[name]['mean'] - margin)} beyond the margin) "
                f"is well short of the paper's")
    if need > MAX_SEEDS:
        return (f"{whose} is so small against the paired sd {sd:.3g}{where} that more than {MAX_SEEDS} seeds "
                f"would be needed to resolve it")
    return (f"about {need} paired seeds would resolve {whose} at the observed paired sd {sd:.3g}{where} "
            f"(80 % power, two-sided {_pct(alpha)}{level})")


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
