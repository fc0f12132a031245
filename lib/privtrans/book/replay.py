"""A claim's whole path: the notebook's readout called again, on tables generated in place of the
ones it was given, and the claim's expression, gate and rule on what it returns.

A notebook session keeps the arguments of every readout call behind a recorded value
(``inputs.pkl``, :func:`privtrans.book.session.load_inputs`); :func:`build` finds the calls behind
the values a claim's interval (or predicate) and precondition read, reaches each readout through
the chapter's declared readouts package (the registry's names, as a session does), and finds its
per-seed tables (:mod:`privtrans.book.records`). :class:`ClaimPath` then generates those tables
around target means and judges the claim on the readout's values, memoised by content so that the
claims of one notebook share their replays.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from . import claims, verdicts
from .records import Draw, SeedLists, seed_frame, seed_lists

PRECONDITION = "not judged: the setting cannot show the effect"
RAISED = "not judged: the readout raised"
UNTESTED = (RAISED, "not judged: a value this claim reads was not computed", "not judged: cannot evaluate")


# ------------------------------------------------------------------------------------ the path
_CALLS: dict = {}  # the calls this process has loaded, by content: claims of one notebook share replays


@dataclass
class Call:
    """One readout call a notebook's recorded values came from, and its per-seed tables."""
    chapter: str
    notebook: str
    function: str
    keys: list
    args: tuple
    kwargs: dict
    frames: dict = field(default_factory=dict)  # {parameter name: SeedFrame}
    _fn: object = None
    _memo: dict = field(default_factory=dict)

    @classmethod
    def of(cls, chapter: str, notebook: str, kept: Mapping) -> "Call":
        """The call, once per build for all the claims that read it (its replays are shared)."""
        key = (chapter, notebook, kept["function"], hashlib.sha1(kept["call"]).hexdigest())
        if key not in _CALLS:
            if len(_CALLS) > 64:
                _CALLS.clear()
            _CALLS[key] = cls._load(chapter, notebook, kept)
        return _CALLS[key]

    @classmethod
    def _load(cls, chapter: str, notebook: str, kept: Mapping) -> "Call":
        args, kwargs = pickle.loads(kept["call"])
        call = cls(chapter, notebook, kept["function"], list(kept["keys"]), tuple(args), dict(kwargs))
        bound = call.bound()
        for name, value in bound.items():
            f = seed_frame(value) or seed_lists(value)
            if f is not None:
                call.frames[name] = f
        # a list of plain numbers is per seed only as long as the seeds the call has elsewhere (a table's
        # replicates, a list of seed numbers): an ε grid of five is not five seeds
        seeds = {len(f.reps) for f in call.frames.values() if not (isinstance(f, SeedLists) and f.plain)}
        seeds |= {len(v) for v in bound.values() if isinstance(v, (list, tuple)) and v
                  and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v)}
        call.frames = {n: f for n, f in call.frames.items()
                       if not (isinstance(f, SeedLists) and f.plain and len(f.reps) not in seeds)}
        return call

    def fn(self):
        """The readout itself (unwrapped), reached through the chapter's declared readouts package."""
        if self._fn is None:
            from .chapters import get

            declared = get(self.chapter)
            package = declared.module(declared.readouts)
            obj = importlib.import_module(package)
            for part in self.function[len(package) + 1:].split("."):
                obj = getattr(obj, part)
            self._fn = getattr(obj, "__wrapped__", obj)
        return self._fn

    def bound(self) -> dict:
        sig = inspect.signature(self.fn())
        b = sig.bind(*self.args, **self.kwargs)
        return dict(b.arguments)

    def replay(self, tables: Mapping) -> dict:
        """The recorded values (as results.json holds them) of the readout called with ``tables``
        ({parameter: DataFrame}) in place of its per-seed tables; memoised by content."""
        h = hashlib.sha1()
        for name in sorted(tables):
            h.update(name.encode())
            h.update(pickle.dumps(tables[name], protocol=pickle.HIGHEST_PROTOCOL))
        key = h.hexdigest()
        if key not in self._memo:
            from .session import _jsonable

            arguments = {**self.bound(), **tables}
            sig = inspect.signature(self.fn())
            b = sig.bind_partial()
            b.arguments.update(arguments)
            try:
                out = self.fn()(*b.args, **b.kwargs)
                self._memo[key] = _jsonable({k: out[k] for k in self.keys if k in out})
            except Exception as e:  # noqa: BLE001 - a readout that fails on generated records says so
                self._memo[key] = e
            if len(self._memo) > 20000:
                self._memo.clear()
        out = self._memo[key]
        if isinstance(out, Exception):
            raise out
        return out


def environment(env: dict, notebook: str, values: Mapping) -> dict:
    """``env`` with ``notebook``'s recorded values replaced by ``values`` where they overlap."""
    ns = dict(vars(env[notebook])) if notebook in env else {}
    ns.update({k: claims._namespace(v) for k, v in values.items()})
    return {**env, notebook: SimpleNamespace(**ns)}


@dataclass
class ClaimPath:
    """One claim's whole path: its readout call(s), tables, and how to judge a generated draw."""
    c: dict
    env: dict
    calls: list  # the Call objects behind what the claim's interval and precondition read

    def tables(self, targets: Mapping, rng, spread=None, edit=None) -> list[dict]:
        """Per call, {parameter: DataFrame} generated around ``targets`` ({(call, param): {v: means}})."""
        out = []
        state = None if rng is None else Draw(rng)  # one draw of seeds for every table: a run's scores and curves
        for i, call in enumerate(self.calls):
            tabs = {}
            for name, f in call.frames.items():
                t = targets.get((i, name))
                if t is None:
                    continue
                vals = f.generate(t, state, (spread or {}).get((i, name)))
                if edit is not None:
                    vals = edit(i, name, f, vals) or vals
                tabs[name] = f.with_values(vals) if not isinstance(vals, tuple) else vals[1]
            out.append(tabs)
        return out

    def judge(self, tables: list[dict], gated: bool = False) -> tuple[str, str, dict | None, bool | None]:
        """(verdict, reason, cells, precondition) of the claim on generated tables. The verdict is the
        interval's alone unless ``gated``: the controls prove the readout and the rule whatever the
        gate says, and prove the gate apart (:func:`gate_moves`)."""
        env = self.env
        for call, tabs in zip(self.calls, tables):
            try:
                env = environment(env, call.notebook, call.replay(tabs))
            except Exception as e:  # noqa: BLE001 - a readout may refuse records it cannot read (a group lost)
                return verdicts.NOT_JUDGED, f"{RAISED}: {type(e).__name__}: {e}", None, None
        try:
            pre = claims.truth(self.c["precondition"], env) if self.c.get("precondition") else True
        except claims.EVAL_ERRORS:
            pre = None
        try:
            verdict, reason, cells = claims.decide({k: v for k, v in self.c.items() if k != "precondition"}, env)
        except claims.EVAL_ERRORS as e:
            return verdicts.NOT_JUDGED, claims._cannot(e), None, pre
        if gated and pre is not True:
            return verdicts.NOT_JUDGED, PRECONDITION, cells, pre
        return verdict, reason, cells, pre

    def holds(self, tables: list[dict]) -> bool | None:
        """A predicate claim's truth on generated tables (None: it cannot be evaluated on them)."""
        env = self.env
        try:
            for call, tabs in zip(self.calls, tables):
                env = environment(env, call.notebook, call.replay(tabs))
            return claims.truth(self.c["predicate"], env)
        except Exception:  # noqa: BLE001 - a readout refusing the records, or a value not computed
            return None

    def means(self, tables) -> np.ndarray | None:
        """The claim's cells' means on ``tables`` (None where the path gives no cells)."""
        _, _, cells, _ = self.judge(tables)
        if cells is None:
            return None
        return np.array([np.nan if c.get("mean") is None else float(c["mean"]) for c in cells.values()])


def recorded_targets(path: ClaimPath) -> dict:
    return {(i, name): f.means() for i, call in enumerate(path.calls) for name, f in call.frames.items()}


def copy_targets(targets: Mapping) -> dict:
    return {k: {v: np.array(a, float) for v, a in t.items()} for k, t in targets.items()}


def training_frames(path: ClaimPath) -> list:
    return [(i, name) for i, call in enumerate(path.calls) for name, f in call.frames.items() if f.training]


def build(chapter: str, c: dict, env: dict, inputs: Mapping) -> ClaimPath:
    """The claim's path: the kept readout calls behind every value its interval and precondition
    read (``inputs``: {notebook: the calls :func:`privtrans.book.session.load_inputs` gives})."""
    notebooks = set(inputs) | {c["notebook"]}
    test = c.get("interval") or c.get("predicate") or ""
    keys = claims.read_keys(test, notebooks) | claims.read_keys(c.get("precondition") or "", notebooks)
    calls, missing = [], []
    for nb in sorted({k.split(".")[0] for k in keys}):
        want = {k.split(".", 1)[1] for k in keys if k.startswith(nb + ".")}
        for kept in inputs.get(nb) or []:
            hit = want & set(kept["keys"])
            if not hit:
                continue
            want -= hit
            if "error" in kept:
                raise ValueError(f"{nb}: the call of {kept['function']} behind {sorted(hit)} was not kept: {kept['error']}")
            calls.append(Call.of(chapter, nb, kept))
        missing += [f"{nb}.{k}" for k in sorted(want)]
    if missing:
        raise ValueError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not returned by a readout the "
                         "notebook called (recorded by the notebook itself, or it ran before its calls were kept)")
    if not any(call.frames for call in calls):
        raise ValueError("no readout behind this claim reads a per-seed table (a seed, rep or round column)")
    return ClaimPath(c, env, calls)
