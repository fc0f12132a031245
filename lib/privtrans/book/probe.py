"""What a claim compares, read off its path: the groups of its tables whose means move its cells.

Each group's mean (an arm at a setting) of each value column is moved by a small step and the
claim's cells are read again through the readout (:class:`privtrans.book.replay.ClaimPath`): a
positive slope is an arm the claim favours, a negative one the arm it is compared with, a zero one
an arm it does not compare. A curve table is read by whole curves, each made rougher (and so later
to settle): a step too small to cross an evaluation would show nothing. The arms so found are what
the controls equalise, plant an effect in, lose a seed of and collapse
(:mod:`privtrans.book.controls`); reading them off the path needs no list of arms per claim.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .records import SeedFrame
from .replay import ClaimPath, copy_targets, recorded_targets

# ------------------------------------------------------------------------------------ reading the path
@dataclass
class Probe:
    """What the claim compares: the slope of each cell's mean in each group's mean."""
    base: np.ndarray  # the cells' means at the recorded tables
    slopes: dict  # {(call, param, value column, group): slope per cell}
    curve_groups: dict  # {(call, param): {curve group: sign of the response to a degraded curve}}
    fixed_frames: list  # (call, param) of tables the claim does not read

    def compared(self) -> list:
        return [k for k, s in self.slopes.items() if np.any(np.abs(s) > 0)]

    def favoured(self) -> list:
        return [k for k, s in self.slopes.items() if np.nansum(s) > 0]

    def against(self) -> list:
        return [k for k, s in self.slopes.items() if np.nansum(s) < 0]


def _step(mu: np.ndarray) -> float:
    scale = np.nanmax(np.abs(mu)) if np.isfinite(mu).any() else 1.0
    return 1e-4 * (scale if scale > 0 else 1.0)


def probe(path: ClaimPath) -> Probe:
    """Move each group's mean of each value column by a small step and read the cells' slopes;
    a curve table is read by groups of whole curves (each degraded: slower and rougher)."""
    rec = recorded_targets(path)
    base = path.means(path.tables(rec, None))
    if base is None or not np.isfinite(base).any():
        raise ValueError("the claim's cells have no mean on its recorded tables (not computed in this build)")
    slopes, curves, fixed = {}, {}, []
    for (i, name), t in rec.items():
        f = path.calls[i].frames[name]
        if f.axis is not None:  # a curve table: whole curves degraded (a step too small to cross an evaluation)
            curves[(i, name)] = _curve_response(path, rec, i, name, base)
            if not any(curves[(i, name)].values()):
                fixed.append((i, name))
            continue
        moved_any = False
        for v, mu in t.items():
            # a column the claim does not read: every group moved at once leaves the cells where they are
            h = _step(mu)
            trial = copy_targets(rec)
            # a different step per group, unrelated to their order (a ramp cancels in a difference of differences)
            trial[(i, name)][v] = mu + h * (1 + np.random.default_rng(len(mu)).random(len(mu)))
            m = path.means(path.tables(trial, None))
            if m is None or np.allclose(np.nan_to_num(m), np.nan_to_num(base), rtol=0,
                                        atol=1e-12 + 1e-9 * np.nanmax(np.abs(base))):
                continue
            moved_any = True
            for g in range(len(mu)):
                trial = copy_targets(rec)
                trial[(i, name)][v][g] = mu[g] + h
                m = path.means(path.tables(trial, None))
                if m is None:
                    continue
                s = (m - base) / h
                s[np.abs(s) < 1e-6 * (np.nanmax(np.abs(s)) if np.isfinite(s).any() else 0) + 1e-12] = 0.0
                if np.any(s != 0):
                    slopes[(i, name, v, g)] = np.nan_to_num(s)
        if not moved_any:
            fixed.append((i, name))
    return Probe(base, slopes, curves, fixed)


def curve_groups(f: SeedFrame) -> dict:
    """{curve group: [group index per evaluation, in axis order]}: a run's curve per arm and setting."""
    rest = [k for k in f.keys if k != f.axis]
    out: dict = {}
    order = f.groups.sort_values(f.axis, kind="stable").index
    for g in order:
        key = tuple(str(f.groups.at[g, k]) for k in rest)
        out.setdefault(key, []).append(int(g))
    return out


def _curve_response(path: ClaimPath, rec, i, name, base) -> dict:
    """{curve group: +1 when degrading its curves lowers the claim's cells (the favoured arm), -1 when
    it raises them, 0 when the claim does not read it}."""
    f = path.calls[i].frames[name]
    out = {}
    for key, idx in curve_groups(f).items():
        trial = copy_targets(rec)
        for v in f.values:
            mu = trial[(i, name)][v]
            trial[(i, name)][v][idx] = _degraded(mu[idx])
        m = path.means(path.tables(trial, None))
        d = 0.0 if m is None else float(np.nansum(m - base))
        out[key] = 0 if abs(d) < 1e-12 else (1 if d < 0 else -1)
    return out


def _degraded(curve: np.ndarray) -> np.ndarray:
    """A curve made rougher, and so later to settle: every other evaluation set back by a fifth of its
    gain, its best and its last left where they were (the same best, the same end: a run that
    reached a target still does, and the pair's target does not move)."""
    n = len(curve)
    if n < 3:
        return curve
    gain = float(np.nanmax(curve) - curve[0]) or float(np.nanstd(curve)) or abs(float(curve[0])) * 0.1 or 1.0
    dips = (np.arange(n) % 2).astype(float)
    dips[[int(np.nanargmax(curve)), n - 1]] = 0.0
    return curve - 0.2 * abs(gain) * dips


def arm_keys(path: ClaimPath, p: Probe) -> dict:
    """{(call, table): the key columns that tell the claim's arms apart}, read across every table the
    claim compares: a key whose values differ between the groups it favours and those it compares them
    with (``method``, not ``epsilon``, for "DPFormer beats vanilla at every ε"; ``N`` for "the risk
    falls with N"), or that only one side's tables have (a student's name, beside its teacher's task)."""
    def values(side):
        out: dict = {}
        for (i, name, _, g) in side:
            f = path.calls[i].frames[name]
            for k in f.keys:
                out.setdefault(k, set()).add(str(f.groups.at[g, k]))
        return out

    fav, ag = values(p.favoured()), values(p.against())
    out = {}
    for (i, name) in {(k[0], k[1]) for k in p.slopes}:
        f = path.calls[i].frames[name]
        out[(i, name)] = [k for k in f.keys if k != f.axis and (k not in fav or k not in ag or fav[k] != ag[k])]
    return out


def arm_keys_of_curves(f: SeedFrame, response: dict) -> list:
    """The keys of a curve table that tell the arms apart: those whose values differ between the
    curves the claim favours (response +1) and those it compares them with (-1)."""
    rest = [k for k in f.keys if k != f.axis]
    fav = [key for key, s in response.items() if s > 0]
    ag = [key for key, s in response.items() if s < 0]
    return [k for j, k in enumerate(rest) if {key[j] for key in fav} != {key[j] for key in ag}]


def same_arm(path: ClaimPath, i: int, name: str, g: int, keys: list, settings: dict) -> dict:
    """{(call, table): [groups]} of every table's groups that hold the arm of group ``g`` (its values
    of ``keys``, the keys that tell arms apart) at every setting the claim compares (``settings``:
    each other key's values among its compared groups): a run's scores and its curves alike, never
    the same method at a setting the claim does not compare (a non-private reference, ε = ∞). A
    collapse moves the arm in all of them."""
    f = path.calls[i].frames[name]
    if not keys:  # the arms are two measures of one group (before and after): that group alone
        return {(i, name): [g]}
    out = {}
    for j, call in enumerate(path.calls):
        for name2, f2 in call.frames.items():
            shared = [k for k in keys if k in f2.keys and k not in (f.axis, f2.axis)]
            if len(shared) < len([k for k in keys if k not in (f.axis, f2.axis)]):
                continue  # a table that cannot say which arm a row is (the teachers, beside their students)
            want = [str(f.groups.at[g, k]) for k in shared]
            limits = {k: v for k, v in settings.items() if k in f2.keys and k not in shared and k != f2.axis}
            match = [h for h in range(len(f2.groups)) if [str(f2.groups.at[h, k]) for k in shared] == want
                     and all(str(f2.groups.at[h, k]) in v for k, v in limits.items())]
            if match:
                out[(j, name2)] = match
    return out
