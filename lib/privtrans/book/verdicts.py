"""A claim's verdict and the reason for it, both computed from the recorded numbers.

Four verdicts (the replication reviewer's, not a yes/no):

* **held** – the data show what the paper states: every interval the claim needs lies above its
  margin, or a deterministic condition (a count, a closed form, a ratio of exact counts) is true;
* **contradicted** – the data exclude what the paper states: an interval lies at or below the margin
  (for "A beats B", the whole interval of A − B is at or below zero), or the deterministic condition
  is false;
* **inconclusive** – an interval contains the margin: these seeds cannot tell; the reason says how
  many paired seeds would resolve the paper's effect (or, where the paper gives none in our units,
  the observed one) at the observed spread;
* **not judged** – the setting cannot show the effect (a failed precondition, one seed, a value that
  could not be computed, another profile).

No reason is written in advance: :func:`judge_intervals` and :func:`explain` build it from the
interval, n, margin and the values a predicate compared.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping, Sequence

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


def seeds_needed(sd: float | None, effect: float | None) -> int | None:
    """Paired seeds for an 80 %-power two-sided 5 % paired t test of ``effect`` at spread ``sd``
    (statsmodels' TTestPower: the standard power solver for the one-sample/paired t test)."""
    if sd is None or effect is None or effect == 0:
        return None
    if sd == 0:
        return 2
    from statsmodels.stats.power import TTestPower

    d = abs(effect) / sd
    # statsmodels' paired/one-sample t power; its solve_power fails to converge at both ends of the range
    # a book meets, so the smallest n is found by bisection on power. The non-central t gives NaN far in
    # its tail (d·sqrt(n) > ~10), where the power is 1 to many digits.
    def power(effect_size, nobs, alpha, alternative):
        p = TTestPower().power(effect_size=effect_size, nobs=nobs, alpha=alpha, alternative=alternative)
        return 1.0 if math.isnan(p) and effect_size * math.sqrt(nobs) > 8 else p

    if power(effect_size=d, nobs=2, alpha=0.05, alternative="two-sided") >= POWER:
        return 2
    if power(effect_size=d, nobs=MAX_SEEDS, alpha=0.05, alternative="two-sided") < POWER:
        return MAX_SEEDS + 1
    lo, hi = 2, MAX_SEEDS  # power(lo) < POWER <= power(hi); power grows with n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power(effect_size=d, nobs=mid, alpha=0.05, alternative="two-sided") >= POWER:
            hi = mid
        else:
            lo = mid
    return hi


def cell_verdict(cell: Mapping, margin: float) -> str:
    if (cell.get("n") or 0) < 2 or cell.get("lo") is None or cell.get("hi") is None:
        return NOT_JUDGED
    if cell["lo"] > margin:
        return HELD
    if cell["hi"] <= margin:
        return CONTRADICTED
    return INCONCLUSIVE


def describe_cell(name: str, cell: Mapping) -> str:
    conf = cell.get("confidence") or 0.95
    head = f"{name}: " if name else ""
    if cell.get("lo") is None:
        return f"{head}mean {_g(cell.get('mean'))} over {cell.get('n') or 0} seed(s), no interval"
    # a quantised measure's step enters the interval (book.paired): say it, so that a wide interval
    # around identical readings reads as the measure's limit, not as noise
    step = f", readings in steps of {cell['resolution']:.4g}" if cell.get("resolution") else ""
    return f"{head}{_g(cell['mean'])} [{_g(cell['lo'])}, {_g(cell['hi'])}] ({conf:.0%}, n = {cell['n']}{step})"


def judge_intervals(value, margin: float, need=None, effect: float | None = None) -> tuple[str, str]:
    """(verdict, reason) of a paired-interval claim over its cells.

    held when at least k cells clear the margin (k from ``need``); contradicted when so many cells lie
    at or below it that k can no longer be reached; inconclusive otherwise; not judged when a cell
    that could decide it has fewer than two seeds."""
    cs = cells(value)
    k = required(need, len(cs))
    verdicts = {name: cell_verdict(c, margin) for name, c in cs.items()}
    n_held = sum(v == HELD for v in verdicts.values())
    n_contra = sum(v == CONTRADICTED for v in verdicts.values())
    n_unjudged = sum(v == NOT_JUDGED for v in verdicts.values())
    total = len(cs)
    rule = ("the interval" if total == 1 else
            f"{'all' if k == total else f'at least {k}'} of the {total} cells' intervals")
    if n_held >= k:
        verdict = HELD
    elif n_contra > total - k:
        verdict = CONTRADICTED
    elif n_unjudged and n_held + n_unjudged >= k and n_contra + n_unjudged > total - k:
        verdict = NOT_JUDGED
    else:
        verdict = INCONCLUSIVE
    parts = []
    words = [(HELD, "clear", "clears"), (CONTRADICTED, "lie at or below", "lies at or below"),
             (INCONCLUSIVE, "contain", "contains"), (NOT_JUDGED, "have no interval against", "has no interval against")]
    words.sort(key=lambda w: w[0] != verdict)  # the cells that decided the verdict first
    for v, plural, single in words:
        names = [n for n, x in verdicts.items() if x == v]
        if not names:
            continue
        if total == 1:
            parts.append(f"mean difference {describe_cell('', cs[names[0]])} {single} the margin {_g(margin)}")
        else:
            shown = "; ".join(describe_cell(n, cs[n]) for n in names[:6]) + ("; …" if len(names) > 6 else "")
            parts.append(f"{len(names)} {plural} the margin {_g(margin)}: {shown}")
    head = {HELD: f"held: {rule} clear the margin" if total > 1 else "held",
            CONTRADICTED: "contradicted: the data exclude the claim",
            INCONCLUSIVE: "inconclusive: these seeds cannot tell",
            NOT_JUDGED: "not judged: fewer than two paired seeds"}[verdict]
    reason = f"{head} ({'; '.join(parts)})"
    if verdict == INCONCLUSIVE:
        reason += "; " + _resolve_note(cs, verdicts, margin, effect)
    return verdict, reason


def _resolve_note(cs, verdicts, margin, effect) -> str:
    """How many paired seeds would resolve the open cells at their observed spread."""
    open_cells = [n for n, v in verdicts.items() if v == INCONCLUSIVE]
    worst = None
    for n in open_cells:
        c = cs[n]
        target = (effect - margin) if effect is not None and effect > margin else (c["mean"] - margin)
        need = seeds_needed(sd_of(c), target)
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
    if paper and need <= have:
        return (f"more seeds are not what is missing: at the observed paired sd {sd:.3g}{where}, {need} paired "
                f"seeds would resolve {PAPERS} difference ({_g(target)} beyond the margin), and these {have} did "
                f"not, so the observed difference ({_g(cs[name]['mean'] - margin)} beyond the margin) is well "
                f"short of the paper's")
    if need > MAX_SEEDS:
        return (f"{whose} is so small against the paired sd {sd:.3g}{where} that more than {MAX_SEEDS} seeds "
                f"would be needed to resolve it")
    return (f"about {need} paired seeds would resolve {whose} at the observed paired sd {sd:.3g}{where} "
            f"(80 % power, two-sided 5 %)")


def judge_points(value, margin: float, need=None) -> tuple[str, str]:
    """The same rule on exact numbers (the paper's own point values): a cell holds when it is above
    the margin. Used by the paper's self-test, where there is no interval."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        points = {"": float(value)}
    elif isinstance(value, Mapping):
        points = {str(k): float(v) for k, v in value.items()}
    elif isinstance(value, (list, tuple)):
        points = {str(i): float(v) for i, v in enumerate(value)}
    else:
        raise ClaimShapeError(f"the paper's values must be a number or a dict/list of numbers, got {value!r}")
    k = required(need, len(points))
    above = [n for n, x in points.items() if x > margin]
    verdict = HELD if len(above) >= k else CONTRADICTED
    shown = ", ".join(f"{n + ': ' if n else ''}{x:.4g}" for n, x in points.items())
    return verdict, f"{len(above)} of {len(points)} above the margin {_g(margin)} (need {k}): {shown}"


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
