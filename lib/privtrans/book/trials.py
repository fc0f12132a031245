"""Every verdict proven on trials: a claim's own test run on data whose truth we know.

Before a verdict judges the paper, the test behind it is run on generated inputs in the shape of the
claim's recorded values, through the claim's own rule (:func:`privtrans.book.claims.rule`: margin or
band, need, family levels, lost seeds) and the book's one interval
(:func:`privtrans.book.paired.t_interval`), never a copy of either:

* an **interval claim** (cells of paired differences across seeds) gets per-cell differences drawn
  normal around a known truth, with each cell's recorded spread and seed count (the build's own, or
  :data:`FALLBACK_N` seeds and the other cells' spread where a cell has none):

  - (a) the **null**, every cell at the margin (A = B for a margin of 0; the band's edges for a size
    claim): the rate at which it is held must be at most :data:`NOMINAL` over :data:`DRAWS` draws;
  - (b) the **paper's effect** at the paper's size (``effect``, else the claim's ``paper_test``
    cells) with the recorded spread: the rate of "held" at this build's seeds is the test's power;
  - (c) the **reversal**, the paper's effect mirrored about the margin (the observed size where the
    paper states none): never held beyond :data:`NOMINAL`, and contradicted outright at zero spread;
  - (d) **a seed lost** in every cell (a run that gave None): each cell keeps it in its count
    (``planned``), and the verdict counts it (``lost_seeds: count``: not held on the survivors) or
    says n of N (``drop``);

* a **predicate claim** (deterministic: a count, a closed form, a ratio of exact counts) gets two:
  the paper's numbers (``paper_inputs``, else this build's values) through its own predicate, and the
  nearest change of one value it reads that turns the verdict (the threshold the predicate draws).

A trial that fails names the claim and what it showed; ``make test`` fails on it, and each chapter
page shows the false-held rate and the power beside the verdict.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from scipy import stats

from . import claims
from . import verdicts
from .paired import paired_difference, t_interval
from .records import FEW, resample

DRAWS = 4000  # per trial: 2.5 % is then read to about ±0.5 %, and told from 5 % (binomial, :func:`rate_passes`)
NOMINAL = verdicts.ALPHA  # the most a null may be held (or a true claim contradicted) over the draws
LEVEL = 0.001  # a rate fails when a one-sided exact binomial test rejects "at most NOMINAL" at this level:
#               a sound rule sits exactly at NOMINAL at its least-favourable point, so at 5 % one sound claim
#               in twenty would fail every build (the draws are fixed); at 0.1 % of 4000 draws a rule at
#               3.3 % or more fails, one at 5 % all but surely
FALLBACK_N = 5  # seeds per cell where the build recorded fewer than two (the ci profile's least)
SHAPE_SEEDS = FEW  # fewer recorded seeds than this say nothing of their distribution's shape (said so)
LOW_POWER = 0.5  # below this the verdict says little either way (the dashboard counts these)
SEED = 20261201  # the trials' own generator: the same draws in every build
FAR = 10.0  # "far beyond the margin": this many paired sd (held, or contradicted, all but surely)


@dataclass
class Result:
    """What a claim's trials showed: rates over the draws, and whether each trial passed."""
    kind: str  # "interval" or "predicate"
    passed: bool = True
    failures: list[str] = field(default_factory=list)
    sides: list[str] = field(default_factory=list)  # per failure, the verdict it undermines: held, contradicted, both
    notes: list[str] = field(default_factory=list)
    n: int | None = None  # seeds per cell in the trials
    cells: int | None = None
    draws: int = 0
    null_held: float | None = None  # at the least-favourable null: the tight cells at the margin, the rest far beyond
    null_held_ci: list | None = None
    null_contradicted: float | None = None  # at the claim's boundary from the held side
    null_contradicted_ci: list | None = None
    paper_held: float | None = None  # the power at the paper's effect
    paper_held_ci: list | None = None  # its binomial interval
    power_range: list | None = None  # the power at the ends of the paired sd's 95 % interval
    reversal_held: float | None = None
    reversal_contradicted: float | None = None
    effect_from: str | None = None  # where the paper's effect came from (effect, paper_test) or None
    spread_from: str | None = None
    paper_verdict: str | None = None  # predicate: the verdict on the paper's numbers (or the build's)
    threshold: str | None = None  # predicate: the nearest change of one input that turns the verdict
    seed_shape: dict | None = None  # {side: [rate with the recorded seeds resampled, normal seeds' 95th percentile]}
    controls: dict | None = None  # the whole-path controls (:mod:`privtrans.book.controls`)

    def fail(self, why: str, side: str = "both"):
        self.passed = False
        self.failures.append(why)
        self.sides.append(side)

    def as_dict(self) -> dict:
        return asdict(self)


def rate_passes(k: int, n: int) -> bool:
    """Whether k of n is consistent with at most :data:`NOMINAL`: a one-sided exact binomial test at
    :data:`LEVEL` (at 4000 draws a true 5 % fails it all but surely, a true 2.5 % passes 99.9 % of the time)."""
    return bool(stats.binomtest(k, n, NOMINAL, alternative="greater").pvalue >= LEVEL)


def _ci(k: int, n: int) -> list:
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return [float(ci.low), float(ci.high)]


# ------------------------------------------------------------------------------------ interval claims
@dataclass
class Cells:
    """A claim's cells as the trials draw them: names, seeds, spread, and the recorded per-seed
    differences where the cells kept them (resampled whole, re-centred on the truth)."""
    names: list
    n: np.ndarray  # seeds planned per cell
    sd: np.ndarray
    resolution: np.ndarray
    diffs: list  # per cell: the recorded differences (NaN where a seed was lost), or None
    spread_from: str

    @property
    def resampled(self) -> bool:
        return all(d is not None for d in self.diffs)


def _spec(recorded: Mapping | None, names: list[str]) -> Cells:
    """The cells' shape from the recorded ones: n, sd, resolution and per-seed differences."""
    if recorded:
        names = list(recorded)
    names = names or [""]
    ns, sds, res, diffs = [], [], [], []
    for name in names:
        cell = (recorded or {}).get(name) or {}
        n = int(cell.get("n") or 0)
        planned = int(cell.get("planned") or n)
        ns.append(planned if n >= 2 else FALLBACK_N)
        sds.append(verdicts.sd_of(cell) if n >= 2 and cell.get("lo") is not None else None)
        res.append(float(cell.get("resolution") or 0.0))
        d = cell.get("diffs")
        ok = d is not None and len(d) == planned and n >= 2
        diffs.append(np.array([np.nan if x is None else float(x) for x in d]) if ok else None)
    known = [s for s in sds if s is not None and s > 0]
    if known:
        fill = float(np.median(known))
        source = "this build's spread" + ("" if len(known) == len(sds) else
                                          f" ({len(known)} of {len(sds)} cells; the others at their median)")
    else:
        fill, source = 1.0, "no recorded spread (a unit spread: rates under the null do not depend on it)"
    if diffs and all(d is not None for d in diffs):
        if min(np.isfinite(d).sum() for d in diffs) < SHAPE_SEEDS:
            diffs = [None] * len(diffs)
            source += f"; fewer than {SHAPE_SEEDS} seeds, too few to say anything of their shape: normal draws"
        else:
            source += "; whole recorded seeds resampled (their skew and outliers kept, cells sharing seeds drawn together)"
    sd = np.array([s if s is not None and s > 0 else fill for s in sds])
    return Cells(names, np.array(ns), sd, np.array(res), diffs, source)


def paper_effects(c: dict, names: list[str], chapter: str, root=None) -> tuple[np.ndarray | None, str | None]:
    """The paper's difference per cell in our units: ``effect`` for every cell, else the claim's
    ``paper_test`` values (matched by cell name, else by position, else their median for every cell)."""
    if claims._number(c.get("effect")):
        return np.full(len(names), float(c["effect"])), "effect"
    if not c.get("paper_test"):
        return None, None
    try:
        from simpleeval import EvalWithCompoundTypes

        from .paper_values import lookup

        P = lookup(chapter, root)
        value = EvalWithCompoundTypes(functions=dict(claims.FUNCTIONS, P=P), names={"P": P, "math": claims.MATH}).eval(
            c["paper_test"])
    except Exception:  # a paper_test that cannot run is the paper self-test's failure, reported there
        return None, None
    if claims._number(value):
        return np.full(len(names), float(value)), "paper_test"
    points = ({str(k): float(v) for k, v in value.items()} if isinstance(value, Mapping) else
              {str(i): float(v) for i, v in enumerate(value)})
    if set(names) <= set(points):
        return np.array([points[n] for n in names]), "paper_test (by cell)"
    if len(points) == len(names):
        return np.array(list(points.values())), "paper_test (by position)"
    return np.full(len(names), float(np.median(list(points.values())))), "paper_test (median over its cells)"


def draw(cells: Cells, truth: np.ndarray, rng: np.random.Generator, draws: int, scale: float = 1.0):
    """(mean, lo, hi, n, planned) arrays (draws × cells) of cells drawn around ``truth`` (draws ×
    cells, or one row for all): whole seeds resampled where the cells kept their differences
    (:func:`privtrans.book.records.resample`: one draw of seeds for every cell with as many, so cells
    that share seeds keep their covariance; a lost seed stays lost where it was), else normal at the
    recorded sd; ``scale`` multiplies the spread. The interval is
    :func:`privtrans.book.paired.t_interval`'s."""
    truth = np.broadcast_to(np.asarray(truth, float), (draws, len(cells.names)))
    out = [np.zeros((draws, len(cells.names))) for _ in range(5)]
    shared = {}
    for j, name in enumerate(cells.names):
        planned = int(cells.n[j])
        d = cells.diffs[j]
        if d is not None:
            if planned not in shared:
                shared[planned] = (rng.random((draws, planned)), rng.standard_normal((draws, planned, planned)))
            u, w = shared[planned]
            dev = (d - np.nanmean(d))[None]
            x = truth[:, j:j + 1] + scale * resample(dev, u, w)[:, 0, :]
        else:
            x = truth[:, j:j + 1] + scale * cells.sd[j] * rng.standard_normal((draws, planned))
        mean, lo, hi, n = _nan_interval(x, cells.resolution[j])
        for k, v in enumerate((mean, lo, hi, n, np.full(draws, planned))):
            out[k][:, j] = v
    return out


def _nan_interval(x: np.ndarray, resolution: float = 0.0):
    """The book's t interval (:func:`privtrans.book.paired.t_interval`) on each row's seeds that gave a
    value: rows with the same count go through it together."""
    ok = np.isfinite(x)
    n = ok.sum(axis=1)
    mean, lo, hi = (np.full(len(x), np.nan) for _ in range(3))
    for k in np.unique(n):
        rows = n == k
        if k < 1:
            continue
        vals = x[rows][ok[rows]].reshape(-1, k)
        if k == 1:
            mean[rows] = vals[:, 0]
            continue
        mean[rows], lo[rows], hi[rows] = t_interval(vals, 0.95, resolution)
    return mean, lo, hi, n


def _codes(c: dict, gen) -> np.ndarray:
    """The claim's family verdict code per draw (:func:`privtrans.book.verdicts.family_codes`)."""
    r = claims.rule(c)
    mean, lo, hi, n, planned = gen
    k = verdicts.required(r["need"], mean.shape[1])
    a_h, a_c = verdicts.family_levels(k, mean.shape[1])
    cc = verdicts.cell_codes(mean, lo, hi, n, planned, r["margin"], a_h, a_c, r["band"], r["lost_seeds"])
    return verdicts.family_codes(cc, k)


def _rate(c, cells, truth, rng, draws, scale=1.0) -> dict[str, float]:
    codes = _codes(c, draw(cells, truth, rng, draws, scale))
    return {v: float(np.mean(codes == i)) for i, v in enumerate(verdicts.CODES)}


def _rates(c: dict, names, ns, sds, truth, rng, draws: int) -> dict[str, float]:
    """Verdict rates of the claim's own rule on ``draws`` sets of normal cells drawn around ``truth``."""
    cells = Cells(list(names), np.asarray(ns), np.asarray(sds, float), np.zeros(len(names)), [None] * len(names), "")
    return _rate(c, cells, truth, rng, draws)


def _exact(c: dict, names, ns, truth) -> str:
    """The claim's verdict on cells at ``truth`` with no spread at all."""
    cells = {name: {"mean": float(mu), "lo": float(mu), "hi": float(mu), "n": int(n), "planned": int(n),
                    "confidence": 0.95} for name, n, mu in zip(names, ns, truth)}
    return verdicts.family_verdict(cells, **claims.rule(c))[0]


def _edges(c: dict) -> list[float]:
    r = claims.rule(c)
    return [r["margin"]] if r["band"] is None else list(r["band"])


def least_favourable(c: dict, cells: Cells, edge: float, draws: int, side: str) -> np.ndarray:
    """Truths (draws × cells) at the least-favourable points of the claim's null (``side`` held) or of
    its boundary (``side`` contradicted), the tight cells turning from draw to draw. A claim that k of
    m cells clear the margin is falsely held most easily when k − 1 cells lie far beyond it and the
    other m − k + 1 on it; it is falsely contradicted most easily when k cells lie on it and the other
    m − k far on the wrong side (for "all": one cell on the margin, the rest far beyond; every cell on
    it)."""
    r = claims.rule(c)
    m = len(cells.names)
    k = verdicts.required(r["need"], m)
    far = FAR * cells.sd
    inside = (r["band"][0] + r["band"][1]) / 2 if r["band"] is not None else None
    low_edge = r["band"] is None or edge == r["band"][0]
    toward = (1.0 if low_edge else -1.0)  # the direction of "beyond" (into the claim) from this edge
    tight = m - k + 1 if side == verdicts.HELD else k
    out = np.empty((draws, m))
    for j in range(draws):
        on = {(j + i) % m for i in range(tight)}
        for i in range(m):
            if i in on:
                out[j, i] = edge
            elif side == verdicts.HELD:
                out[j, i] = inside if inside is not None else edge + toward * far[i]
            else:
                out[j, i] = edge - toward * far[i]
    return out


def interval_trials(c: dict, recorded: Mapping | None, chapter: str, root=None, draws: int = DRAWS,
                    seed: int = SEED, scaled: tuple | None = None) -> Result:
    """The rule's trials of one interval claim on cells shaped as ``recorded`` (its summary row's)."""
    res = Result("interval", draws=draws)
    need = c.get("need")
    # no recorded cells (the value was not computed, or its notebook did not run in this build): as
    # many cells as the claim needs at least ('all but K' needs K + 1)
    least = need if isinstance(need, int) and not isinstance(need, bool) else (
        int(need.split()[-1]) + 1 if isinstance(need, str) and need.startswith("all but ") else 0)
    cells = _spec(recorded, [f"cell {i + 1}" for i in range(least)])
    names, ns, sds = cells.names, cells.n, cells.sd
    res.spread_from = cells.spread_from
    res.n, res.cells = int(np.min(ns)), len(names)
    rng = np.random.default_rng([seed, len(names), int(ns.sum())])
    edges = _edges(c)
    edge = edges[0]
    # (a) the least-favourable null, at each edge: held at most NOMINAL, and a true claim on its boundary
    # contradicted at most NOMINAL; the rule itself on normal cells (a binomial test), then with the
    # recorded seeds' own shape (against what as many normal seeds would give, :func:`shape_reference`)
    normal = replace(cells, diffs=[None] * len(names))
    worst = {}
    for label, kind in (("rule", normal), ("seeds", cells if cells.resampled else None)):
        if kind is None:
            continue
        for side in (verdicts.HELD, verdicts.CONTRADICTED):
            k = 0
            for e in edges:
                codes = _codes(c, draw(kind, least_favourable(c, kind, e, draws, side), rng, draws))
                k = max(k, int(np.sum(codes == verdicts.CODES.index(side))))
            worst[(label, side)] = k
    k = worst[("rule", verdicts.HELD)]
    res.null_held, res.null_held_ci = k / draws, _ci(k, draws)
    if not rate_passes(k, draws):
        res.fail(side=verdicts.HELD, why=f"null: held in {res.null_held:.1%} [{res.null_held_ci[0]:.1%}, {res.null_held_ci[1]:.1%}] of {draws} "
                 f"draws at its least-favourable point (the tight cells on {edge:+.3g}, the rest far beyond; at most "
                 f"{NOMINAL:.1%})")
    k = worst[("rule", verdicts.CONTRADICTED)]
    res.null_contradicted, res.null_contradicted_ci = k / draws, _ci(k, draws)
    if not rate_passes(k, draws):
        res.fail(side=verdicts.CONTRADICTED, why=f"boundary: a true claim contradicted in {res.null_contradicted:.1%} of {draws} draws with its cells "
                 f"on {edge:+.3g} (at most {NOMINAL:.1%})")
    if cells.resampled:
        r = claims.rule(c)
        res.seed_shape = {}
        for side, word in ((verdicts.HELD, "a null held"), (verdicts.CONTRADICTED, "a true claim contradicted")):
            rate = worst[("seeds", side)] / draws
            ref = shape_reference(r["need"], len(names), int(np.min(ns)), side)
            res.seed_shape[side] = [rate, ref]
            if rate > ref:
                res.fail(side=side, why=f"seeds: with the recorded seeds' own shape (resampled whole), {word} in "
                         f"{rate:.1%} of {draws} draws, beyond the {ref:.1%} that {int(np.min(ns))} normal seeds a "
                         "cell give 99.5 % of the time through the same rule: a skewed or collapsing seed makes this "
                         "test unreliable at these seeds")
    # (b) the paper's effect with the recorded spread: the power, with its interval
    effect, res.effect_from = paper_effects(c, names, chapter, root)
    if scaled is not None and effect is not None and len(scaled[0]) == len(names):
        effect, res.effect_from = np.asarray(scaled[0], float), scaled[1]  # the paper's effect in this build's scale
    beyond = None
    if effect is not None:
        band = claims.rule(c)["band"]
        beyond = ((band[0] < effect) & (effect < band[1])) if band is not None else effect > edge
        if not beyond.all():
            res.notes.append("the paper's own effect does not clear the claim's test in every cell (the paper "
                             "self-test says so)")
        if not res.spread_from.startswith("no recorded"):
            codes = _codes(c, draw(cells, effect, rng, draws))
            k = int(np.sum(codes == 0))
            res.paper_held, res.paper_held_ci = k / draws, _ci(k, draws)
            res.power_range = _power_range(c, cells, effect, rng, draws)
        exact = _exact(c, names, ns, effect)
        if beyond.all() and exact != verdicts.HELD:
            res.fail(f"the paper's effect with no spread at all is {exact}, not held", verdicts.CONTRADICTED)
    # (c) the reversal: the paper's effect mirrored about the edge; the observed size where it has none
    if effect is not None and beyond is not None and beyond.any():
        reversed_ = 2 * edge - effect
    else:
        obs = [abs((((recorded or {}).get(n) or {}).get("mean") or edge) - edge) for n in names]
        half = sds * 2.0 / np.sqrt(ns)
        reversed_ = edge - np.maximum(np.array(obs, float), half)
        res.notes.append("the reversal is at the observed size (the paper states none in our units)")
    rev = _rate(c, cells, reversed_, rng, draws)
    res.reversal_held, res.reversal_contradicted = rev[verdicts.HELD], rev[verdicts.CONTRADICTED]
    if not rate_passes(round(res.reversal_held * draws), draws):
        res.fail(f"reversal: held in {res.reversal_held:.1%} of {draws} draws (at most {NOMINAL:.1%})", verdicts.HELD)
    exact_rev = _exact(c, names, ns, reversed_)
    if exact_rev != verdicts.CONTRADICTED:
        res.fail(f"reversal with no spread is {exact_rev}, not contradicted: this test cannot contradict the claim",
                 verdicts.CONTRADICTED)
    # (d) one seed lost, through the book's paired interval
    lost = _lost_seed(c, names, ns, sds, effect if effect is not None and beyond.all() else None, edge)
    if lost:
        res.fail(lost, verdicts.HELD)
    return res


@lru_cache(maxsize=64)
def shape_reference(need, m: int, n: int, side: str, samples: int | None = None, draws: int = 800) -> float:
    """The 99.5th percentile, over samples of ``m`` cells of ``n`` normal seeds each, of the rate at
    which the claim's rule (``need`` of ``m`` cells, margin 0) is held (``side`` held) or contradicted
    (``side`` contradicted) at its least-favourable point when those seeds are resampled whole: the
    same procedure as the recorded seeds go through. Resampling five or ten seeds, however normal,
    moves a rate a long way (their sample's own skew), so the recorded seeds' rate counts against the
    test only beyond what normal seeds give all but 0.5 % of the time (about one sound claim in a
    hundred flagged, over both sides)."""
    samples = samples or int(np.clip(4000 // m, 200, 400))  # a many-cell claim costs as much as a few-cell one
    rng = np.random.default_rng([SEED, m, n, 1 if side == verdicts.HELD else 2])
    c = {"margin": 0.0, "need": need}
    names = [str(i) for i in range(m)]
    rates = []
    for _ in range(samples):
        d = rng.standard_normal((m, n))
        cells = Cells(names, np.full(m, n), d.std(axis=1, ddof=1), np.zeros(m), list(d), "")
        codes = _codes(c, draw(cells, least_favourable(c, cells, 0.0, draws, side), rng, draws))
        rates.append(float(np.mean(codes == verdicts.CODES.index(side))))
    return float(np.quantile(rates, 0.995))


def _power_range(c, cells: Cells, effect, rng, draws) -> list:
    """The power at the two ends of the paired sd's 95 % interval (chi-square on the seeds' degrees of
    freedom): a power read from five seeds' spread is itself uncertain, often very."""
    df = max(int(np.min(cells.n)) - 1, 1)
    lo_scale = np.sqrt(df / stats.chi2.ppf(0.975, df))
    hi_scale = np.sqrt(df / stats.chi2.ppf(0.025, df))
    return [_rate(c, cells, effect, rng, draws // 4, hi_scale)[verdicts.HELD],
            _rate(c, cells, effect, rng, draws // 4, lo_scale)[verdicts.HELD]]


def _lost_seed(c: dict, names, ns, sds, effect, edge) -> str | None:
    """A clear effect in every cell, one seed of each lost: the claim's verdict must count them."""
    r = claims.rule(c)
    big = np.maximum(sds, 1e-9) * 50  # far beyond the margin: held but for the lost seed
    truth = effect if effect is not None else (
        np.full(len(names), (r["band"][0] + r["band"][1]) / 2) if r["band"] is not None else edge + big)
    rng = np.random.default_rng(SEED)
    cells = {}
    for i, (name, n) in enumerate(zip(names, ns)):
        n = max(int(n), 3)
        spread = (sds[i] if effect is None else abs(truth[i] - edge) / 50 or 1e-9)
        a = list(truth[i] + spread * rng.standard_normal(n))
        a[0] = None
        cells[name] = paired_difference(a, [0.0] * n).as_dict()
    verdict, reason = claims.judge(c, cells)
    first = cells[names[0]]
    if first["planned"] != first["n"] + 1:
        return "lost seed: the cell does not keep the lost seed in its count"
    of = f"n = {first['n']} of {first['planned']}"
    if of not in reason:
        return f"lost seed: the reason does not say {of!r}: {reason[:200]}"
    if r["lost_seeds"] == "count" and verdict == verdicts.HELD:
        return "lost seed: held on the seeds that survived, though a lost run counts as a failed one"
    return None


# ------------------------------------------------------------------------------------ predicate claims
_PATH = re.compile(r"\b([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)+)")


def _leaves(ns, prefix=""):
    """(path, value) of every number or bool under a recorded namespace/dict."""
    if isinstance(ns, SimpleNamespace):
        ns = vars(ns)
    if isinstance(ns, Mapping):
        for k, v in ns.items():
            yield from _leaves(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(ns, (bool, int, float)) and not (isinstance(ns, float) and not math.isfinite(ns)):
        yield prefix, ns


def _set(env: dict, path: str, value) -> dict:
    """A copy of ``env`` with the value at ``path`` (notebook.key.sub) replaced."""
    head, *rest = path.split(".")

    def put(node, keys):
        if not keys:
            return value
        d = dict(vars(node)) if isinstance(node, SimpleNamespace) else dict(node)
        d[keys[0]] = put(d[keys[0]], keys[1:])
        return SimpleNamespace(**d) if isinstance(node, SimpleNamespace) else d

    return dict(env, **{head: put(env[head], rest)})


def read_paths(text: str, env: dict) -> list[str]:
    """The recorded values (notebook.key[.sub]) an expression reads, as far as ``env`` holds them."""
    out = []
    for m in _PATH.finditer(text):
        if m.group(1) not in env:
            continue
        parts = [m.group(1)] + m.group(2).strip(".").split(".")
        node = env[parts[0]]
        for i, p in enumerate(parts[1:], 1):
            nxt = getattr(node, p, None) if isinstance(node, SimpleNamespace) else None
            if nxt is None:
                parts = parts[:i]
                break
            node = nxt
        out.append(".".join(parts))
    return list(dict.fromkeys(out))


def _value(env, path):
    node = env
    for i, p in enumerate(path.split(".")):
        node = node[p] if i == 0 else (vars(node)[p] if isinstance(node, SimpleNamespace) else node[p])
    return node


def threshold(c: dict, env: dict) -> tuple[bool, str | None]:
    """(the predicate's truth on ``env``, the nearest change of one value it reads that turns it)."""
    base = claims.truth(c["predicate"], env)
    best = None
    for path in read_paths(c["predicate"], env):
        try:
            node = _value(env, path)
        except (KeyError, TypeError):
            continue
        for leaf, x in _leaves(node, path) if not isinstance(node, (bool, int, float)) else [(path, node)]:
            if isinstance(x, bool):
                moved = _turns(c, env, leaf, not x, base)
                if moved is not None and best is None:
                    best = (math.inf, f"`{leaf}` turning {x} → {not x}")
                continue
            if isinstance(x, int):  # a count moves by whole units
                step = next((d for d in range(1, max(abs(x), 10) + 1) for sg in (-1, 1)
                             if _turns(c, env, leaf, x + sg * d, base)), None)
                if step is not None:
                    sg = -1 if _turns(c, env, leaf, x - step, base) else 1
                    if best is None or step / max(abs(x), 1) < best[0]:
                        best = (step / max(abs(x), 1), f"`{leaf}` moving from {x} to {x + sg * step}")
                continue
            sizes = np.geomspace(1e-4, 1e3, 71)
            for i, size in enumerate(sizes):  # the smallest relative change that turns it, either way
                sign = next((sg for sg in (-1, 1) if _turns(c, env, leaf, _moved(x, sg, size), base)), None)
                if sign is None:
                    continue
                lo, hi = (sizes[i - 1] if i else 0.0), size  # the verdict turns between lo and hi: bisect
                for _ in range(50):
                    mid = (lo + hi) / 2
                    lo, hi = (lo, mid) if _turns(c, env, leaf, _moved(x, sign, mid), base) else (mid, hi)
                if best is None or hi < best[0]:
                    best = (hi, f"`{leaf}` moving from {x:.4g} to {_moved(x, sign, hi):.4g}")
                break
    return base, None if best is None else best[1]


def _moved(x: float, sign: int, size: float) -> float:
    return x + sign * size * max(abs(x), 1e-12)


def _turns(c: dict, env: dict, path: str, value, base: bool):
    try:
        return claims.truth(c["predicate"], _set(env, path, value)) != base or None
    except claims.EVAL_ERRORS:
        return None


def predicate_trials(c: dict, env: dict | None, chapter: str, root=None) -> Result:
    """The paper's numbers through the claim's own predicate (held), and the nearest change of one
    value that turns it (the threshold, just past which it is contradicted)."""
    res = Result("predicate")
    base_env, source = None, None
    if c.get("paper_inputs"):
        try:
            base_env, source = claims.paper_env(chapter, c, root), "the paper's numbers"
        except Exception as e:  # noqa: BLE001 - named in the failure
            res.fail(f"the paper's inputs cannot be read: {type(e).__name__}: {e}")
            return res
    elif env is not None:
        base_env, source = env, "this build's values (the paper tabulates none this predicate reads)"
    if base_env is None:
        res.fail("no values to run the predicate on: no paper_inputs, and this build recorded none")
        return res
    try:
        held, res.threshold = threshold(c, base_env)
    except claims.EVAL_ERRORS as e:
        if source.startswith("this build"):  # e.g. a value not computed at this profile
            res.notes.append(f"cannot run on this build's values: {type(e).__name__}: {e}")
            return res
        res.fail(f"the predicate cannot be evaluated on {source}: {type(e).__name__}: {e}")
        return res
    res.paper_verdict = verdicts.HELD if held else verdicts.CONTRADICTED
    res.spread_from = source
    if source == "the paper's numbers" and not held:
        if c.get("erratum"):  # the paper's numbers do not support its sentence: an erratum, shown as such
            res.notes.append("the paper's own numbers do not pass the claim's predicate (the claim's erratum)")
        else:
            res.fail("the paper's own numbers do not pass the claim's predicate")
    if res.threshold is None:
        res.fail(f"no change of one value it reads turns the predicate on {source}: it cannot be "
                 f"{'contradicted' if held else 'held'}")
    return res


# ------------------------------------------------------------------------------------ one claim, a book
def run(chapter: str, c: dict, row: Mapping, env: dict | None, root=None, draws: int = DRAWS,
        inputs: Mapping | None = None, control_draws: int | None = None) -> Result:
    """The trials of one reproduction, shaped by its summary row (``row['cells']``) and its recorded
    values (``env``, :func:`privtrans.book.claims.environment`); with the notebooks' kept readout calls
    (``inputs``: {notebook: calls}), an interval claim's controls through the whole path too."""
    if "interval" not in c:
        res = predicate_trials(c, env, chapter, root)
        if inputs is not None and env is not None:
            from . import controls

            res.controls = controls.predicate_controls(chapter, c, env, inputs)
            for why, side in zip(res.controls["failures"], res.controls["sides"]):
                res.fail(f"whole path: {why}", side)
        return res
    ctl = None
    if inputs is not None and env is not None:
        from . import controls

        ctl = controls.run(chapter, c, env, inputs, row.get("cells"), control_draws or controls.DRAWS, root)
    scaled = (ctl["effect_ours"], ctl["power_from"]) if ctl and ctl.get("effect_ours") and ctl.get(
        "power_from", "").startswith("the paper's relative") else None
    res = interval_trials(c, row.get("cells"), chapter, root, draws, scaled=scaled)
    if ctl is not None:
        res.controls = ctl
        for why, side in zip(res.controls["failures"], res.controls["sides"]):
            res.fail(f"whole path: {why}", side)
        if not res.controls["ran"]:
            res.notes.append(f"the whole-path controls did not run: {res.controls.get('why_not')}")
    return res


WITHDRAWN = "not judged: the test behind this verdict failed its controls"


def standing(verdict: str, reason: str, t: Mapping | None) -> tuple[str, str]:
    """The verdict a claim may show given its trials: a held (contradicted) verdict whose test failed a
    control of false holds (false contradictions) is not judged, with what the control showed and
    what the test would have read; a "not judged" of a gate proven to read an arm the claim compares
    (its controls moved that arm and the gate moved with it) cannot excuse the claim, which is judged
    on its interval alone; other verdicts stand (a gate that let the claim through did not bias it)."""
    if not t:
        return verdict, reason
    failures = list(zip(t.get("failures") or [], t.get("sides") or []))
    gate = [f for f, side in failures if side == "gate"]
    ungated = (t.get("controls") or {}).get("ungated")
    if gate and verdict == verdicts.NOT_JUDGED and ungated and reason.startswith("not judged: the setting cannot"):
        verdict, reason = ungated[0], (f"{ungated[1]} (judged without its precondition, which failed a control: "
                                       f"{gate[0]})")
    if verdict not in (verdicts.HELD, verdicts.CONTRADICTED):
        return verdict, reason
    against = [f for f, side in failures if side in (verdict, "both")]
    if not against:
        return verdict, reason
    return verdicts.NOT_JUDGED, (f"{WITHDRAWN} ({against[0]}"
                                 + (f"; and {len(against) - 1} more" if len(against) > 1 else "")
                                 + f"), so it cannot say {verdict}; it would read: {reason}")


def _code_key() -> str:
    """The trials' own code (this module and every privtrans module it imports) and the packages
    that draw and test: what, beside a claim's inputs, decides its trials."""
    from .imports import stamp

    return _code_digest(stamp(Path(__file__).resolve().parents[1]))


@lru_cache(maxsize=4)
def _code_digest(tree: tuple) -> str:  # once per state of the sources (``tree``: their mtimes)
    from importlib.metadata import version

    from .imports import import_graph, used_modules
    from .runcache import hash_files

    pkg = Path(__file__).resolve().parents[1]
    graph = import_graph(pkg, tree)
    files = [graph[m][0].resolve() for m in used_modules(graph, [__name__])]
    return "|".join([hash_files(files, pkg.resolve()).hexdigest(), *(version(d) for d in ("numpy", "scipy", "simpleeval"))])


def run_cached(chapter: str, c: dict, row: Mapping, env: dict | None, root: Path, draws: int = DRAWS,
               inputs: Mapping | None = None, control_draws: int | None = None) -> dict:
    """:func:`run`'s result as a dict, kept in ``_build/cache/trials/`` between builds. The trials are
    deterministic (:data:`SEED`), so the claim, its recorded cells and values, the readout calls behind
    them and the readouts' code, the paper's data files and the code decide them: a build whose
    notebooks all come from the cache judged its 130 reproductions' trials in 11 s of its 24 s (one
    host), and the tests build the book several times."""
    from .paths import build_dir, data_dir
    from .runcache import atomic_write_text, fingerprint, hash_files, read_json

    data = data_dir(chapter, root)
    kept_calls = None
    if inputs is not None:
        from .chapters import get
        from .runcache import source_fingerprint

        declared = get(chapter)
        test = (c.get("interval") or c.get("predicate") or "") + " " + (c.get("precondition") or "")
        read = {k.split(".")[0] for k in claims.read_keys(test, inputs)}
        mine = {nb: [(k["function"], k["keys"], hashlib.sha1(k.get("call", b"")).hexdigest()) for k in inputs[nb]]
                for nb in sorted(read)}
        kept_calls = [mine, source_fingerprint([declared.module(declared.readouts)])]
    key = fingerprint(chapter, c, row.get("cells"), claims._plain(env) if env is not None else None, draws,
                      hash_files(data.glob("*.csv"), data).hexdigest(), _code_key(), kept_calls, control_draws)
    path = build_dir(root) / "cache" / "trials" / f"{key}.json"
    kept = read_json(path)
    if kept is not None:
        return kept
    text = json.dumps(run(chapter, c, row, env, root, draws, inputs, control_draws).as_dict())
    atomic_write_text(path, text)
    return json.loads(text)  # as a later build reads it back


def sentence(t: Mapping | None) -> str:
    """What a claim's trials showed, for its row on the chapter page."""
    if not t:
        return ""
    if t["kind"] == "predicate":
        out = []
        if t.get("paper_verdict"):
            out.append(f"{t['paper_verdict']} on {t['spread_from']}")
        if t.get("threshold"):
            out.append(f"the verdict turns at {t['threshold']}")
        text = "; ".join(out) or "; ".join(t.get("notes") or [])
    else:
        n = t.get("n")
        text = (f"at its least-favourable null this test holds {t['null_held']:.1%} of the time and contradicts a "
                f"claim just true {(t.get('null_contradicted') or 0):.1%} of the time (normal cells)")
        shape = t.get("seed_shape")
        if shape:
            text += (f"; {shape['held'][0]:.1%} and {shape['contradicted'][0]:.1%} with the recorded seeds resampled "
                     f"(normal seeds give up to {shape['held'][1]:.1%})")
        if t.get("paper_held") is not None:
            text += f"; the paper's effect is held {t['paper_held']:.0%} of the time"
            if t.get("power_range"):
                lo, hi = t["power_range"]
                text += f" ({lo:.0%} to {hi:.0%} across the paired sd's 95 % interval)"
        elif t.get("effect_from") is None:
            text += " (the paper gives no effect in our units, so no power)"
        else:
            text += " (this build recorded no spread, so no power)"
        text += f", with {n} seeds"
        if (t.get("cells") or 1) > 1:
            text += f" over {t['cells']} cells"
        if t.get("reversal_contradicted") is not None:
            text += f"; it contradicts the reversed effect {t['reversal_contradicted']:.0%} of the time"
        text += path_sentence(t.get("controls"))
    if not t.get("passed", True):
        text += "; TRIAL FAILED: " + "; ".join(t.get("failures") or [])
    return text


def path_sentence(ctl: Mapping | None) -> str:
    """The whole-path controls (:mod:`privtrans.book.controls`) in a clause."""
    if not ctl:
        return ""
    if not ctl.get("ran"):
        return f". Through its whole path: not run ({ctl.get('why_not')})"
    shown = []
    for r in ctl.get("rates") or []:
        word = "contradicted" if r["expect"] == "not contradicted" else "held"
        shown.append(f"{r['control']}: {word} {r['rate']:.0%} [{r['lo']:.0%}, {r['hi']:.0%}] of {r['draws']}")
    text = (f". Through its whole path (readout, expression, gate, rule on generated records; "
            f"{', '.join(ctl.get('readouts') or [])}): " + "; ".join(shown))
    return text + ("; " + "; ".join(ctl["notes"]) if ctl.get("notes") else "")


def low_power(rows) -> list[dict]:
    """Reproductions whose power at the paper's effect is under :data:`LOW_POWER`."""
    return [r for r in rows if r.get("kind") == "reproduction" and (r.get("trials") or {}).get("paper_held")
            is not None and r["trials"]["paper_held"] < LOW_POWER]
