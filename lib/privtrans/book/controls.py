"""Controls through the whole path: a claim's readout, expression, gate and rule run on records whose
truth we set.

:mod:`privtrans.book.trials` proves a claim's *rule* on cells drawn around a truth. A fault before
the rule (a readout that drops a diverged seed, a measure a flat curve passes, an expression that
keeps the best of many cells, a gate that reads the arm it compares) would pass those trials. So
here the records the notebook's readout was called with (kept by ``privtrans.book.producers``) are
generated again, :class:`privtrans.book.records.SeedFrame`: whole seeds resampled around target
means, and the very readout is called on them; its values replace the notebook's in the claims'
environment, and the claim's own :func:`privtrans.book.claims.decide` (interval expression,
precondition, rule) gives the verdict.

What the claim compares is read off the path itself: each group's mean (an arm at a setting) is
moved a little and the claim's cells that move with it are its **compared** groups (a positive
slope: the arm the claim favours; a negative one: the arm it is compared with). The controls:

* **null**: every arm at one level (A = B), moved onto the margin where that is not 0 (and onto
  the margin on average, for a readout that is not linear in the means): held, and contradicted,
  each no more often than a one-sided binomial test allows at :data:`PATH_ALPHA`;
* **least-favourable null** (a claim of many cells): its most borderline cells on the margin, the
  rest far beyond: not held;
* **nothing learns**: every group of every training table at one level, each curve flat, the gate
  applied: not held (a claim that one arm stays within a margin of another holds when they are
  equal: only a curve shows what learning nothing is, and the claim's gate must show the rest);
* **a seed lost**: at a clear effect, one training seed of a compared group lost (NaN, and its row
  deleted): some cell must count it, and no cell that lost it may be held (``lost_seeds: count``); a
  repetition (``rep``, ``round``) may be dropped, a training seed never;
* **a seed diverges**: at a clear effect, one seed of the favoured group 5 sd against the claim: the
  cells it feeds must keep it in their count and move with it;
* **an arm collapses**: each compared arm, in every table that holds it (its scores and its curves),
  moved far either way: the precondition must not change (a gate never reads the arms the claim
  compares);
* **curves**: the favoured arm's curves creep up monotonically without learning, or rise and fall
  back; every curve drifting monotonically: never held;
* **the paper's effect** (a positive control): the cells moved to the paper's effect in this
  build's scale (relative to the level of the arm compared with, where the claim gives the paper's
  level, ``paper_level``): the share held is the power through the whole path.

Every rate is shown with its Clopper-Pearson interval (scipy's ``binomtest``).
"""

from __future__ import annotations

import functools
import hashlib
import pickle
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats

from . import claims, verdicts
from .probe import Probe, arm_keys, arm_keys_of_curves, curve_groups, probe, same_arm
from .records import SeedLists
from .replay import UNTESTED, ClaimPath, build, copy_targets, recorded_targets, training_frames
from .truths import apply_moves, at_margin, jacobian, cell_sd, curve_shapes, nothing_learns, our_level, paper_relative, place

ALPHA = verdicts.ALPHA  # the most a negative control may be held (or contradicted at the margin)
#: what the whole path is tested against: twice ALPHA. Its draws resample the five or ten recorded
#: seeds, whose own skew moves a sound test's rates anywhere from 1 % to 6 %; the path is here to catch
#: what the rule's trials cannot see (a readout, an expression, a gate gone wrong: 15 % to 100 %); the
#: rule's own 2.5 % is read to ±0.5 % on normal cells (:mod:`privtrans.book.trials`)
PATH_ALPHA = 2 * ALPHA
LEVEL = 0.05  # a control fails when a one-sided binomial test rejects "at most PATH_ALPHA" at this level
DRAWS = 100  # whole-path draws of the null and nothing-learns controls (the others take fewer); the
#              rule's own rates are read to ±0.5 % on 4000 draws (:mod:`privtrans.book.trials`)
SMOKE_DRAWS = 20  # at profile smoke (``make test``): the path runs, its rates are not read
TESTED = 50  # fewer draws than this show a rate but do not test it (at 20, 2 held is 10 %, and chance)
SEED = 20261206
FAR = 20.0  # a clear effect: this many paired sd beyond the margin
OUTLIER = 5.0  # a diverged seed: this many sd against the claim
GATE = "gate"  # the side of a failure of the gate: its "not judged" cannot stand (``trials.standing``)


@dataclass
class Rate:
    """How often a verdict came out of a control's draws, with its interval and whether it passed."""
    control: str
    expect: str  # what the control must (not) give: "not held", "not contradicted", "power", ...
    draws: int
    counts: dict
    rate: float
    lo: float
    hi: float
    passed: bool = True
    why: str = ""

    def as_dict(self) -> dict:
        return dict(vars(self))


def quiet(fn):
    """Generated records hold groups with no value (a seed lost, a setting one seed never ran): numpy's
    warnings on their empty means would fill a build's log; the controls read the NaN they give."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return fn(*args, **kwargs)

    return wrapper


def draws_for(profile: str) -> int:
    """Whole-path draws at ``profile``: :data:`SMOKE_DRAWS` at smoke, where only the path is shown to
    run, :data:`DRAWS` wherever verdicts are read."""
    return SMOKE_DRAWS if profile == "smoke" else DRAWS


def binomial(k: int, n: int, allowed: float = PATH_ALPHA) -> tuple[float, float, bool]:
    """(low, high) 95 % Clopper-Pearson interval of k/n, and whether k/n is consistent with at
    most ``allowed`` (a one-sided exact test at :data:`LEVEL`)."""
    if n == 0:
        return 0.0, 1.0, True
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    ok = stats.binomtest(k, n, allowed, alternative="greater").pvalue >= LEVEL
    return float(ci.low), float(ci.high), bool(ok)


# ------------------------------------------------------------------------------------ the controls
def _draws(path: ClaimPath, targets: dict, draws: int, spread=None, edit=None, gated=False, label: str = ""):
    """Judged draws around ``targets``; the generator is seeded by the targets themselves, so that the
    claims of one notebook asking for the same records get the same draws (and share their replays)."""
    h = hashlib.sha1(label.encode())
    for k in sorted(targets, key=str):
        h.update(str(k).encode())
        for v in sorted(targets[k]):
            h.update(np.asarray(targets[k][v], float).tobytes())
            if spread and k in spread and v in spread[k]:
                h.update(np.asarray(spread[k][v], float).tobytes())
    tag = int(h.hexdigest()[:8], 16)
    for j in range(draws):
        rng = np.random.default_rng([SEED, tag, j])
        yield path.judge(path.tables(targets, rng, spread, edit), gated)


def _rate(control: str, expect: str, outcomes: list, bad, allowed: float = PATH_ALPHA) -> Rate:
    """The control's rate over its draws. ``expect`` "never held": no draw may be held (the control
    is all but deterministic); "not held" / "not contradicted": a binomial test at ``allowed``
    (:data:`PATH_ALPHA`, or what the claim's rule gives on as many normal seeds resampled, where more:
    :func:`allowance`); "power": shown, not tested. A control whose draws mostly could not be judged
    (the readout refused the records, or gave no value) tested nothing, and says so."""
    counts = {v: 0 for v in verdicts.VERDICTS}
    for verdict, *_ in outcomes:
        counts[verdict] += 1
    k = sum(1 for o in outcomes if bad(o))
    n = len(outcomes)
    lo, hi, ok = binomial(k, n, allowed)
    if expect == "never held":
        ok = k == 0
    elif n < TESTED:
        ok = True  # too few draws to read a rate (profile smoke): shown, not tested
    r = Rate(control, expect, n, counts, k / n if n else 0.0, lo, hi, ok if expect != "power" else True)
    untested = sum(1 for o in outcomes if o[0] == verdicts.NOT_JUDGED and str(o[1]).startswith(UNTESTED))
    if n and untested > 0.1 * n:
        r.why = f"untested: {untested} of {n} draws could not be judged ({control})"
    if not r.passed:
        limit = "none may be" if expect == "never held" else f"at most {allowed:.1%}"
        r.why = f"{control}: {k} of {n} draws gave what it must not ({expect}; {limit})"
    return r


def allowance(c: dict, row_cells, n_cells: int, side: str) -> float:
    """What a null may give through the whole path: :data:`PATH_ALPHA`, or, where the cells have enough
    seeds to resample, the rate the claim's own rule gives 99.5 % of the time on as many normal seeds
    resampled whole (:func:`privtrans.book.trials.shape_reference`): five resampled seeds, however
    normal, move a sound rule's rates up to 10 %, which is the seeds' fault, not the path's."""
    from .records import FEW
    from .trials import shape_reference

    ns = [int(x.get("n") or 0) for x in (row_cells or {}).values()]
    if not ns or min(ns) < FEW:
        return PATH_ALPHA
    return max(PATH_ALPHA, shape_reference(claims.rule(c)["need"], n_cells, min(ns), side))


def _held(o) -> bool:
    return o[0] == verdicts.HELD


def _contradicted(o) -> bool:
    return o[0] == verdicts.CONTRADICTED


def _lost(path: ClaimPath, p: Probe, c: dict, base: dict, limit: int = 3) -> tuple[list, list]:
    """One seed of each compared group lost (NaN; its row deleted), at a clear effect: (failures, notes)."""
    fails, notes = [], []
    rule = claims.rule(c)
    v0, r0, cells0, _ = path.judge(path.tables(base, None))
    if v0 != verdicts.HELD:
        notes.append(f"a clear effect ({FAR:g} paired sd beyond the margin) is {v0} on this path, so a lost seed "
                     "cannot be seen to matter")
        return fails, notes
    seen = set()
    for (i, name, v, g) in p.compared():
        if (i, name, g) in seen or len(seen) >= limit:
            continue
        seen.add((i, name, g))
        f = path.calls[i].frames[name]
        for how in ("NaN", "row deleted"):
            def edit(ci, cname, frame, vals, i=i, name=name, g=g, how=how):
                if (ci, cname) != (i, name):
                    return None
                if how == "NaN":
                    for col in frame.values:
                        vals[col][g, 0] = np.nan
                    return vals
                table = frame.with_values(vals)
                keep = ~((frame._g == g) & (frame._r == 0))
                return (vals, table[keep].reset_index(drop=True))

            if how == "row deleted" and isinstance(f, SeedLists):
                continue  # a list entry deleted would renumber the seeds after it: NaN says the same
            verdict, reason, cells, _ = path.judge(path.tables(base, None, None, edit))
            what = f"seed {f.reps[0]} of {f.label(g)} lost ({how})"
            if f.training and rule["lost_seeds"] == "drop":
                fails.append(f"{what}: a training run's failure is left out (lost_seeds: drop); a diverged run is a "
                             "failed run")
                return fails, notes
            if cells is None:
                continue  # the readout refused the records (a group with no run left): not a pass either way
            short = {k: cell for k, cell in cells.items() if verdicts.lost(cell)}
            if not short:
                fails.append(f"{what}: no cell counts it (n = N everywhere): the readout drops a lost seed unsaid")
            elif rule["lost_seeds"] == "count":
                k = verdicts.required(rule["need"], len(cells))
                a_h, a_c = verdicts.family_levels(k, len(cells))
                held = [k_ for k_, cell in short.items()
                        if verdicts.cell_verdict(cell, rule["margin"], a_h, a_c, rule["band"], "count") == verdicts.HELD]
                if held:
                    fails.append(f"{what}: cell {held[0]!r} still held on the seeds that survived ({reason[:160]})")
    return fails, notes


def _outlier(path: ClaimPath, p: Probe, clear: dict) -> list[str]:
    """One seed of the most favoured group diverging, :data:`OUTLIER` sd against the claim, at a clear
    effect: the cells it feeds must still count it (n unchanged) and move by at least half of what
    the seed moves their mean (slope × shift / seeds); a readout that drops or tames a diverged seed
    (a median, a trimmed mean, a filter) shows here, and a claim held on the rest hides it."""
    fav = [k for k in p.favoured() if k[2] in path.calls[k[0]].frames[k[1]].values]
    if not fav:
        return []
    i, name, v, g = max(fav, key=lambda k: float(np.nansum(p.slopes[k])))
    f = path.calls[i].frames[name]
    row = f.table(v)[g]
    sd = float(np.nanstd(row, ddof=1)) if np.isfinite(row).sum() > 1 else 0.0
    sd = sd if np.isfinite(sd) and sd > 0 else float(np.nanstd(f.table(v), ddof=1) or abs(np.nanmean(row)) or 1.0)
    shift = -OUTLIER * sd

    def edit(ci, cname, frame, vals):
        if (ci, cname) == (i, name):
            vals[v][g, 0] = vals[v][g, 0] + shift
        return vals

    _, _, before, _ = path.judge(path.tables(clear, None))
    _, _, after, _ = path.judge(path.tables(clear, None, None, edit))
    if before is None or after is None:
        return []
    n_g = max(int(np.isfinite(row).sum()), 1)
    for (name_c, b), a, slope in zip(before.items(), after.values(), p.slopes[(i, name, v, g)]):
        if slope == 0 or b.get("mean") is None:
            continue
        expected = slope * shift / n_g
        moved = (a.get("mean") if a.get("mean") is not None else np.nan) - b["mean"]
        what = f"seed {f.reps[0]} of {f.label(g)} ({v}) {OUTLIER:g} sd against the claim"
        if (a.get("n") or 0) < (b.get("n") or 0):
            return [f"{what}: cell {name_c!r} no longer counts it (n {b.get('n')} → {a.get('n')}): the readout drops a "
                    "diverged seed"]
        if not np.isfinite(moved) or moved > 0.5 * expected:  # expected < 0: it must move at least half as far down
            return [f"{what}: cell {name_c!r} moves by {moved:+.3g}, not the {expected:+.3g} the seed carries: the "
                    "readout tames a diverged seed"]
    return []


def gate_moves(path: ClaimPath, p: Probe, c: dict, limit: int = 4) -> list[str]:
    """A gate proven behaviourally: each compared arm (in every table that holds it: its scores and
    its curves alike) moved far either way, flattened or made to creep; the precondition's truth must
    not move."""
    if not c.get("precondition"):
        return []
    rec = recorded_targets(path)
    _, _, _, pre0 = path.judge(path.tables(rec, None))
    keys = arm_keys(path, p)
    seen = set()
    for k in p.compared():
        i, name, v, g = k
        f = path.calls[i].frames[name]
        arm_id = (i, name, tuple(str(f.groups.at[g, key]) for key in keys.get((i, name), [])))
        if arm_id in seen or len(seen) >= limit:
            continue
        seen.add(arm_id)
        arm_k = keys.get((i, name), f.keys)
        compared_groups = [k_[3] for k_ in p.compared() if k_[:2] == (i, name)]
        settings = {k_: {str(f.groups.at[h, k_]) for h in compared_groups} for k_ in f.keys if k_ not in arm_k}
        arm = same_arm(path, i, name, g, arm_k, settings)
        for sign in (-1, 1):
            t = copy_targets(rec)
            for (j, name2), groups in arm.items():
                f2 = path.calls[j].frames[name2]
                for col in f2.values:
                    mu = rec[(j, name2)][col]
                    if f2.axis is None:
                        far = 10 * (float(np.nanmax(mu) - np.nanmin(mu)) + float(np.nanstd(mu)) +
                                    abs(float(np.nanmean(mu))) + 1e-9)
                        t[(j, name2)][col][groups] = mu[groups] + sign * far
                    else:  # its curves flat at their start (down) or at their best (up)
                        for idx in curve_groups(f2).values():
                            if set(idx) & set(groups):
                                t[(j, name2)][col][idx] = mu[idx[0]] if sign < 0 else np.nanmax(mu[idx])
            _, _, _, pre = path.judge(path.tables(t, None))
            if pre != pre0:
                what = ", ".join(f"{key} = {f.groups.at[g, key]}" for key in keys.get((i, name)) or f.keys)
                return [f"the precondition turns {pre0} → {pre} when the compared arm ({what}) collapses "
                        f"({'down' if sign < 0 else 'up'}, at every setting, in every table that holds it): the gate "
                        "reads an arm the claim compares"]
    for name_, (targets, spread) in curve_shapes(path, p).items():
        _, _, _, pre = path.judge(path.tables(targets, None, spread))
        if pre != pre0:
            return [f"the precondition turns {pre0} → {pre} when {name_}: the gate reads an arm the claim compares"]
    return []


@quiet
def run(chapter: str, c: dict, env: dict, inputs: Mapping, row_cells: Mapping | None = None,
        draws: int = DRAWS, root=None) -> dict:
    """Every control of one interval claim (see the module); a dict for the summary."""
    try:
        path = build(chapter, c, env, inputs)
    except (ValueError, KeyError, TypeError, pickle.UnpicklingError, AttributeError) as e:
        return _result(draws, why_not=str(e))
    return check(path, chapter, row_cells, draws, root)


@quiet
def predicate_controls(chapter: str, c: dict, env: dict, inputs: Mapping, limit: int = 12) -> dict:
    """A deterministic claim read off per-seed training tables (a count of seeds, say): one seed of a
    group lost must never leave it held where that seed, turned against the claim, would not: a lost
    run is a failed run, and a count over the survivors is not the count the claim states."""
    try:
        path = build(chapter, c, env, inputs)
    except (ValueError, KeyError, TypeError, pickle.UnpicklingError, AttributeError) as e:
        return _result(0, why_not=str(e))
    return check_predicate(path, limit)


@quiet
def check_predicate(path: ClaimPath, limit: int = 12) -> dict:
    """:func:`predicate_controls` on the claim's path (:func:`build`)."""
    out = _result(0)
    frames = training_frames(path)
    if not frames:
        out["why_not"] = "it reads no per-seed training table"
        return out
    rec = recorded_targets(path)
    if not path.holds(path.tables(rec, None)):
        out["ran"] = True
        out["notes"].append("not held on its recorded tables: a lost seed cannot make it more so")
        return out
    out["ran"] = True
    tried = 0
    for (i, name) in frames:
        f = path.calls[i].frames[name]
        for g in range(len(f.groups)):
            if tried >= limit:
                break
            tried += 1

            def edit(ci, cname, frame, vals, how, i=i, name=name, g=g):
                if (ci, cname) == (i, name):
                    for col in frame.values:
                        x = vals[col][g, 0]
                        scale = 10 * (np.nanmax(np.abs(vals[col])) + 1.0)
                        vals[col][g, 0] = np.nan if how == 0 else x + how * scale
                return vals

            lost = path.holds(path.tables(rec, None, None, lambda *a: edit(*a, 0)))
            against = [path.holds(path.tables(rec, None, None, lambda *a, s=s: edit(*a, s))) for s in (-1, 1)]
            if lost and False in against:
                why = (f"seed {f.reps[0]} of {f.label(g)} lost: still held, though the same seed turned against the "
                       "claim makes it false; a lost run counts over the survivors")
                out["failures"].append(why)
                out["sides"].append(verdicts.HELD)
                out["passed"] = False
                return out
    return out


def _result(draws: int, **kw) -> dict:
    return {"kind": "whole path", "ran": False, "passed": True, "failures": [], "sides": [], "notes": [], "rates": [],
            "draws": draws, **kw}


@quiet
def check(path: ClaimPath, chapter: str, row_cells: Mapping | None = None, draws: int = DRAWS, root=None) -> dict:
    """The controls of one interval claim on its path (:func:`build`)."""
    c, env = path.c, path.env
    out = _result(draws)
    out["readouts"] = sorted({call.function for call in path.calls})
    out["tables"] = [{"notebook": call.notebook, "argument": name, "replicate": f.replicate, "values": f.values,
                      "groups": len(f.groups), "replicates": len(f.reps), "curves": f.axis is not None}
                     for call in path.calls for name, f in call.frames.items()]
    def fail(why: str, side: str = "both"):
        """A failed control, and the verdict it undermines (held, contradicted or both)."""
        out["failures"].append(why)
        out["sides"].append(side)
        out["passed"] = False

    # the path must give back what the notebook recorded before it can be trusted with anything else
    try:
        _, _, cells, _ = path.judge(path.tables(recorded_targets(path), None))
    except Exception as e:  # noqa: BLE001 - a readout that cannot be called again is named
        out["why_not"] = f"the readout cannot be called again on its kept inputs: {type(e).__name__}: {e}"
        return out
    try:
        recorded = verdicts.cells(claims._plain(claims.expression(c["interval"], env)))
    except claims.EVAL_ERRORS as e:
        out["why_not"] = f"the claim's cells were not computed in this build ({type(e).__name__}: {e})"
        return out
    if cells is None or list(cells) != list(recorded) or not all(
            _same(cells[k].get("mean"), recorded[k].get("mean")) for k in recorded):
        fail("the readout called again on its kept inputs does not give the recorded cells")
        out["ran"] = True
        return out
    try:
        p = probe(path)
    except Exception as e:  # noqa: BLE001
        out["why_not"] = f"the path could not be probed: {type(e).__name__}: {e}"
        return out
    out["ran"] = True
    out["compared"] = [f"{path.calls[i].frames[name].label(g)} ({v}): {'favoured' if np.nansum(s) > 0 else 'compared with'}"
                       for (i, name, v, g), s in p.slopes.items()][:12]
    out["compared_curves"] = {f"{name}": {" / ".join(k): s for k, s in resp.items() if s}
                              for (i, name), resp in p.curve_groups.items()}
    if not p.slopes and not any(any(r.values()) for r in p.curve_groups.values()):
        out["ran"] = False
        out["why_not"] = ("no per-seed number the simulator draws moves the claim's cells: its readout reads what it "
                          "compares in another form (a model's weights, a nested record, a count of evaluations)")
        return out
    rates, notes, fails = [], out["notes"], []
    null = nulls(path, p, draws, rates, notes, row_cells)
    least_favourable(path, p, null, row_cells, draws, rates, notes)
    learning(path, p, draws, rates, notes)
    curves(path, p, draws, rates)
    fails += [(f, verdicts.HELD) for f in seeds_lost(path, p, null, row_cells, notes)]
    gate = gate_moves(path, p, c)
    fails += [(f, GATE) for f in gate]
    if gate:  # what the claim reads without its gate, which cannot excuse it (trials.standing)
        verdict, reason, _, _ = path.judge(path.tables(recorded_targets(path), None))
        out["ungated"] = [verdict, reason]
    power = _power(path, p, c, chapter, null, draws, root)
    if power is not None:
        rates.append(power[0])
        out["power_from"], out["effect_ours"] = power[1], [float(x) for x in power[2]]
    for f, side in fails:
        fail(f, side)
    for r in rates:
        if not r.passed:
            fail(r.why, verdicts.CONTRADICTED if r.expect == "not contradicted" else verdicts.HELD)
        elif r.why.startswith("untested"):
            out["untested"] = out.get("untested", []) + [r.why]
    out["rates"] = [r.as_dict() for r in rates]
    return out


def _edges(c: dict) -> list[float]:
    rule = claims.rule(c)
    return [rule["margin"]] if rule["band"] is None else list(rule["band"])


def _far(p: Probe, row_cells) -> np.ndarray:
    """Per cell, "far beyond the margin": :data:`FAR` recorded paired sd (its own mean where none)."""
    sd = cell_sd(row_cells, len(p.base))
    return np.where(np.isfinite(sd), FAR * sd, FAR * (np.abs(p.base) + 1e-6))


class Exchange:
    """At the null, the compared arms' curves are exchangeable: each draw gives every compared curve
    (an arm at a setting) the whole curves, every seed's, of a compared arm at the same setting,
    drawn at random. Equal mean curves alone are no null for a claim about how a curve moves (its
    roughness): each arm would keep its own."""

    def __init__(self, path: ClaimPath, p: Probe):
        self.sets = {}
        for (i, name), resp in p.curve_groups.items():
            f = path.calls[i].frames[name]
            cg = curve_groups(f)
            keys = arm_keys_of_curves(f, resp)
            by_setting: dict = {}
            for key, sign in resp.items():
                if sign and key in cg:
                    setting = tuple(x for k, x in zip([k for k in f.keys if k != f.axis], key) if k not in keys)
                    by_setting.setdefault(setting, []).append(cg[key])
            self.sets[(i, name)] = [v for v in by_setting.values() if len(v) > 1 and len({len(x) for x in v}) == 1]
        self.label = "exchange" if self else ""
        self.rng = np.random.default_rng(SEED)

    def __bool__(self) -> bool:
        return any(self.sets.values())

    def __call__(self, ci, cname, frame, vals):
        for curves in self.sets.get((ci, cname), []):
            order = self.rng.permutation(len(curves))
            for col in frame.values:
                rows = [vals[col][idx].copy() for idx in curves]
                for to, src in zip(curves, order):
                    vals[col][to] = rows[src]
        return vals


def nulls(path: ClaimPath, p: Probe, draws: int, rates: list, notes: list, row_cells=None) -> dict | None:
    """Every arm equal (moved onto each edge of the claim): neither held nor contradicted beyond
    :data:`PATH_ALPHA`. Returns the targets of the first edge's null (None where none could be placed)."""
    null = None
    for edge in _edges(path.c):
        targets, how = at_margin(path, p, path.c, edge)
        if targets is None:
            notes.append(f"null at {edge:+.3g}: {how}")
            continue
        swap = Exchange(path, p)
        outs = list(_draws(path, targets, draws, edit=swap or None, label=swap.label))
        targets, outs, moved = _calibrated(path, p, targets, outs, edge, draws, swap)
        if moved:
            notes.append(moved)
        null = null or targets
        rates.append(_rate(f"null ({how})", "not held", outs, _held,
                           allowance(path.c, row_cells, len(p.base), verdicts.HELD)))
        rates.append(_rate(f"null ({how})", "not contradicted", outs, _contradicted,
                           allowance(path.c, row_cells, len(p.base), verdicts.CONTRADICTED)))
    return null


def least_favourable(path: ClaimPath, p: Probe, null: dict | None, row_cells, draws: int, rates: list, notes: list):
    """A claim of many cells at its least-favourable null: its most borderline cells (as many as could
    fail it) on the margin, the rest far beyond (every cell on the margin is, for "all", the point where
    it is held least often)."""
    rule = claims.rule(path.c)
    k_need = verdicts.required(rule["need"], len(p.base))
    if null is None or rule["band"] is not None or len(p.base) < 2 or k_need < 2:
        return
    sd = cell_sd(row_cells, len(p.base))
    z = (p.base - rule["margin"]) / np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
    tight = set(np.argsort(z)[:len(p.base) - k_need + 1].tolist())
    far = _far(p, row_cells)
    truth = np.array([rule["margin"] + (0.0 if j in tight else far[j]) for j in range(len(p.base))])
    lf, _ = place(path, p, null, truth)
    if lf is None:
        notes.append("the least-favourable null (one cell on the margin, the rest far beyond) cannot be placed through "
                     "this path")
        return
    outs = list(_draws(path, lf, max(draws * 3 // 10, 5)))
    rates.append(_rate(f"least-favourable null ({len(tight)} cell(s) on the margin, the rest {FAR:g} sd beyond)",
                       "not held", outs, _held, allowance(path.c, row_cells, len(p.base), verdicts.HELD)))


def learning(path: ClaimPath, p: Probe, draws: int, rates: list, notes: list):
    """Nothing learns (training tables only), the gate applied: not held. Every arm at one level is a null
    only where A = B is not what the claim states; a claim that A stays within a margin of B (or whose
    size band holds 0) holds there, and only a curve's start shows what learning nothing looks like."""
    rule = claims.rule(path.c)
    equal_holds = (rule["band"] is None and rule["margin"] < 0) or (
        rule["band"] is not None and rule["band"][0] < 0 < rule["band"][1])
    learn = [(i, name) for i, name in training_frames(path) if not equal_holds or path.calls[i].frames[name].axis]
    if learn:
        outs = list(_draws(path, nothing_learns(path, learn, p), draws, gated=True))
        rates.append(_rate("nothing learns (every arm at one level, every curve flat; the gate applied)", "not held",
                           outs, _held))
    elif training_frames(path):
        notes.append("every arm equal satisfies a claim that one stays within a margin of another, and these records "
                     "hold no baseline (no curve) that shows learning nothing: whether the arms learned rests on the "
                     "claim's gate" + ("" if path.c.get("precondition") else ", and it has none"))


def curves(path: ClaimPath, p: Probe, draws: int, rates: list):
    """The favoured arm's curves creeping up without learning, or rising and falling back; every curve
    drifting: never held."""
    for name, (targets, spread) in curve_shapes(path, p).items():
        outs = list(_draws(path, targets, max(draws // 5, 5), spread))
        rates.append(_rate(name, "never held", outs, _held))


def seeds_lost(path: ClaimPath, p: Probe, null: dict | None, row_cells, notes: list) -> list[str]:
    """At a clear effect, a seed lost (:func:`_lost`) and a seed diverging (:func:`_outlier`)."""
    if null is None or not p.slopes:
        return []
    rule = claims.rule(path.c)
    truth = (np.full(len(p.base), rule["margin"]) + _far(p, row_cells)) if rule["band"] is None else \
        np.full(len(p.base), sum(rule["band"]) / 2)
    clear, _ = place(path, p, null, truth)
    if clear is None:
        notes.append("a clear effect cannot be placed through this path; the lost and diverged seed controls did "
                     "not run")
        return []
    fails, more = _lost(path, p, path.c, clear)
    notes += more
    return fails + _outlier(path, p, clear)


def _calibrated(path: ClaimPath, p: Probe, targets: dict, outs: list, edge: float, draws: int, swap=None):
    """The null's draws averaged: a readout that is not linear in the groups' means (a ratio per
    round, a share of movement) is not on the margin on average when its noise-free value is. Where
    the draws' mean cell lies more than three standard errors off the edge, the compared groups are
    moved by the difference (one Newton step on the probe's slopes) and drawn again."""
    means = np.array([[np.nan if x.get("mean") is None else float(x["mean"]) for x in o[2].values()]
                      for o in outs if o[2] is not None and len(o[2]) == len(p.base)], float)
    if len(means) < 10 or not p.slopes:
        return targets, outs, ""
    avg = np.nanmean(means, axis=0)
    se = np.nanstd(means, axis=0, ddof=1) / np.sqrt(np.isfinite(means).sum(axis=0))
    off = np.abs(avg - edge) > 3 * np.where(se > 0, se, np.inf)
    if not off.any():
        return targets, outs, ""
    entries = p.compared()
    J, logs = jacobian(path, p, entries)
    delta, *_ = np.linalg.lstsq(J, np.nan_to_num(edge - avg), rcond=None)
    moved = apply_moves(targets, entries, delta, logs)
    return moved, list(_draws(path, moved, draws, edit=swap or None, label="calibrated")), (
        f"the null's draws averaged {np.round(avg, 4).tolist()} where the noise-free cells sit on {edge:+.3g} (a readout "
        "that is not linear in the means): its groups were moved by the difference and drawn again")


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return abs(float(a) - float(b)) <= 1e-9 * (1 + abs(float(b)))


def _power(path, p, c, chapter, null, draws, root):
    if null is None or not p.slopes:
        return None
    n = len(p.base)
    try:
        rel = paper_relative(c, chapter, n, root)
        from .trials import paper_effects

        eff, _ = paper_effects({k: v for k, v in c.items() if k != "effect"}, [str(j) for j in range(n)], chapter, root)
    except Exception:  # noqa: BLE001 - a paper value that cannot be read is the paper self-test's failure
        rel, eff = None, None
    if rel is not None:
        truth = rel * our_level(path, p, recorded_targets(path), n)
        how = ("the paper's relative effect (its difference over its level of the arm compared with), at this "
               "build's level")
    elif claims._number(c.get("effect")):
        truth, how = np.full(n, float(c["effect"])), "the claim's effect in our units"
    elif eff is not None:
        truth, how = eff, "the paper's difference in its own units (no paper_level: not rescaled to ours)"
    else:
        return None
    if not np.all(np.isfinite(truth)):
        return None
    targets, _ = place(path, p, null, truth)
    if targets is None:
        return None
    outs = list(_draws(path, targets, max(draws // 10, 5)))  # shown; the rule's trials give the power to ±1 %
    return _rate("the paper's effect", "power", outs, _held), how, truth
