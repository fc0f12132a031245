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

import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from . import claims
from . import verdicts
from .paired import paired_difference, t_interval

DRAWS = 400  # per trial: a held rate of 2.5 % is then read to about ±0.8 %
NOMINAL = 0.05  # the most a null (or a reversal) may be held over the draws; each side's own rate is 2.5 %
FALLBACK_N = 5  # seeds per cell where the build recorded fewer than two (the ci profile's least)
LOW_POWER = 0.5  # below this the verdict says little either way (the dashboard counts these)
SEED = 20261201  # the trials' own generator: the same draws in every build


@dataclass
class Result:
    """What a claim's trials showed: rates over the draws, and whether each trial passed."""
    kind: str  # "interval" or "predicate"
    passed: bool = True
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    n: int | None = None  # seeds per cell in the trials
    cells: int | None = None
    draws: int = 0
    null_held: float | None = None
    paper_held: float | None = None  # the power at the paper's effect
    reversal_held: float | None = None
    reversal_contradicted: float | None = None
    effect_from: str | None = None  # where the paper's effect came from (effect, paper_test) or None
    spread_from: str | None = None
    paper_verdict: str | None = None  # predicate: the verdict on the paper's numbers (or the build's)
    threshold: str | None = None  # predicate: the nearest change of one input that turns the verdict

    def fail(self, why: str):
        self.passed = False
        self.failures.append(why)

    def as_dict(self) -> dict:
        return asdict(self)


# ------------------------------------------------------------------------------------ interval claims
def _spec(recorded: Mapping | None, names: list[str]) -> tuple[list[str], np.ndarray, np.ndarray, str]:
    """(names, seeds per cell, sd per cell, where the spread came from) from the recorded cells."""
    if recorded:
        names = list(recorded)
    names = names or [""]
    ns, sds = [], []
    for name in names:
        cell = (recorded or {}).get(name) or {}
        n = int(cell.get("n") or 0)
        ns.append(n if n >= 2 else FALLBACK_N)
        sds.append(verdicts.sd_of(cell) if n >= 2 and cell.get("lo") is not None else None)
    known = [s for s in sds if s is not None and s > 0]
    if known:
        fill = float(np.median(known))
        source = "this build's spread" + ("" if len(known) == len(sds) else
                                          f" ({len(known)} of {len(sds)} cells; the others at their median)")
    else:
        fill, source = 1.0, "no recorded spread (a unit spread: rates under the null do not depend on it)"
    return names, np.array(ns), np.array([s if s is not None and s > 0 else fill for s in sds]), source


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


def _rates(c: dict, names, ns, sds, truth, rng, draws: int) -> dict[str, float]:
    """Verdict rates of the claim's own rule on ``draws`` sets of cells drawn around ``truth``."""
    r = claims.rule(c)
    draws_cells = []
    for name, n, sd, mu in zip(names, ns, sds, truth):
        d = mu + sd * rng.standard_normal((draws, int(n)))
        mean, lo, hi = t_interval(d)
        draws_cells.append((name, int(n), mean, lo, hi))
    counts = {v: 0 for v in verdicts.VERDICTS}
    for j in range(draws):
        cells = {name: {"mean": float(m[j]), "lo": float(lo[j]), "hi": float(hi[j]), "n": n, "planned": n,
                        "confidence": 0.95} for name, n, m, lo, hi in draws_cells}
        counts[verdicts.family_verdict(cells, **r)[0]] += 1
    return {v: k / draws for v, k in counts.items()}


def _exact(c: dict, names, ns, truth) -> str:
    """The claim's verdict on cells at ``truth`` with no spread at all."""
    cells = {name: {"mean": float(mu), "lo": float(mu), "hi": float(mu), "n": int(n), "planned": int(n),
                    "confidence": 0.95} for name, n, mu in zip(names, ns, truth)}
    return verdicts.family_verdict(cells, **claims.rule(c))[0]


def _edges(c: dict) -> list[float]:
    r = claims.rule(c)
    return [r["margin"]] if r["band"] is None else list(r["band"])


def interval_trials(c: dict, recorded: Mapping | None, chapter: str, root=None, draws: int = DRAWS,
                    seed: int = SEED) -> Result:
    """Trials (a)-(d) of one interval claim on cells shaped as ``recorded`` (its summary row's)."""
    res = Result("interval", draws=draws)
    need = c.get("need")
    # no recorded cells (the value was not computed, or its notebook did not run in this build): as
    # many cells as the claim needs at least ('all but K' needs K + 1)
    least = need if isinstance(need, int) and not isinstance(need, bool) else (
        int(need.split()[-1]) + 1 if isinstance(need, str) and need.startswith("all but ") else 0)
    shape = [f"cell {i + 1}" for i in range(least)]
    names, ns, sds, res.spread_from = _spec(recorded, shape)
    res.n, res.cells = int(np.min(ns)), len(names)
    rng = np.random.default_rng([seed, len(names), int(ns.sum())])
    edges = _edges(c)
    edge = edges[0]
    # (a) the null: every cell on the edge of what the claim says (for a band, each edge in turn)
    res.null_held = max(_rates(c, names, ns, sds, np.full(len(names), e), rng, draws)[verdicts.HELD] for e in edges)
    if res.null_held > NOMINAL:
        res.fail(f"null: held in {res.null_held:.1%} of {draws} draws with every cell at {edge:+.3g} (at most "
                 f"{NOMINAL:.0%})")
    # (b) the paper's effect with the recorded spread
    effect, res.effect_from = paper_effects(c, names, chapter, root)
    beyond = None
    if effect is not None:
        band = claims.rule(c)["band"]
        beyond = ((band[0] < effect) & (effect < band[1])) if band is not None else effect > edge
        if not beyond.all():
            res.notes.append("the paper's own effect does not clear the claim's test in every cell (the paper "
                             "self-test says so)")
        if not res.spread_from.startswith("no recorded"):
            res.paper_held = _rates(c, names, ns, sds, effect, rng, draws)[verdicts.HELD]
        exact = _exact(c, names, ns, effect)
        if beyond.all() and exact != verdicts.HELD:
            res.fail(f"the paper's effect with no spread at all is {exact}, not held")
    # (c) the reversal: the paper's effect mirrored about the edge; the observed size where it has none
    if effect is not None and beyond is not None and beyond.any():
        reversed_ = 2 * edge - effect
    else:
        obs = [abs((((recorded or {}).get(n) or {}).get("mean") or edge) - edge) for n in names]
        half = sds * 2.0 / np.sqrt(ns)
        reversed_ = edge - np.maximum(np.array(obs, float), half)
        res.notes.append("the reversal is at the observed size (the paper states none in our units)")
    rev = _rates(c, names, ns, sds, reversed_, rng, draws)
    res.reversal_held, res.reversal_contradicted = rev[verdicts.HELD], rev[verdicts.CONTRADICTED]
    if res.reversal_held > NOMINAL:
        res.fail(f"reversal: held in {res.reversal_held:.1%} of {draws} draws (at most {NOMINAL:.0%})")
    exact_rev = _exact(c, names, ns, reversed_)
    if exact_rev != verdicts.CONTRADICTED:
        res.fail(f"reversal with no spread is {exact_rev}, not contradicted: this test cannot contradict the claim")
    # (d) one seed lost, through the book's paired interval
    lost = _lost_seed(c, names, ns, sds, effect if effect is not None and beyond.all() else None, edge)
    if lost:
        res.fail(lost)
    return res


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
def run(chapter: str, c: dict, row: Mapping, env: dict | None, root=None, draws: int = DRAWS) -> Result:
    """The trials of one reproduction, shaped by its summary row (``row['cells']``) and its recorded
    values (``env``, :func:`privtrans.book.claims.environment`)."""
    if "interval" in c:
        return interval_trials(c, row.get("cells"), chapter, root, draws)
    return predicate_trials(c, env, chapter, root)


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


def run_cached(chapter: str, c: dict, row: Mapping, env: dict | None, root: Path, draws: int = DRAWS) -> dict:
    """:func:`run`'s result as a dict, kept in ``_build/cache/trials/`` between builds. The trials are
    deterministic (:data:`SEED`), so the claim, its recorded cells and values, the paper's data files
    and the code decide them: a build whose notebooks all come from the cache judged its 130
    reproductions' trials in 11 s of its 24 s (one host), and the tests build the book several times."""
    from .paths import build_dir, data_dir
    from .runcache import atomic_write_text, fingerprint, hash_files, read_json

    data = data_dir(chapter, root)
    key = fingerprint(chapter, c, row.get("cells"), claims._plain(env) if env is not None else None, draws,
                      hash_files(data.glob("*.csv"), data).hexdigest(), _code_key())
    path = build_dir(root) / "cache" / "trials" / f"{key}.json"
    kept = read_json(path)
    if kept is not None:
        return kept
    text = json.dumps(run(chapter, c, row, env, root, draws).as_dict())
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
        text = f"this test would hold a null {t['null_held']:.0%} of the time"
        if t.get("paper_held") is not None:
            text += f" and the paper's effect {t['paper_held']:.0%} of the time"
        elif t.get("effect_from") is None:
            text += " (the paper gives no effect in our units, so no power)"
        else:
            text += " (this build recorded no spread, so no power)"
        text += f" with {n} seeds"
        if (t.get("cells") or 1) > 1:
            text += f" over {t['cells']} cells"
        if t.get("reversal_contradicted") is not None:
            text += f"; it contradicts the reversed effect {t['reversal_contradicted']:.0%} of the time"
    if not t.get("passed", True):
        text += "; TRIAL FAILED: " + "; ".join(t.get("failures") or [])
    return text


def low_power(rows) -> list[dict]:
    """Reproductions whose power at the paper's effect is under :data:`LOW_POWER`."""
    return [r for r in rows if r.get("kind") == "reproduction" and (r.get("trials") or {}).get("paper_held")
            is not None and r["trials"]["paper_held"] < LOW_POWER]
