"""The records a readout reads, generated again around a truth we set: the controls' simulator.

A notebook's readouts are called with per-seed records (``privtrans.book.producers`` keeps the call):
a table with one row per run (arm, setting, seed) and its metrics, or per evaluation of a run
(curves: an ``epoch`` column too). :class:`SeedFrame` is the one simulator of such a table, for
every chapter:

* its **replicate** column (``seed`` for training runs; ``rep``, ``round`` or ``repeat`` for
  Monte-Carlo repetitions and timing rounds, which a claim may leave out when lost) numbers the
  replicates; its **value** columns are the float columns that vary across replicates; every other
  column is a **key**, and the rows sharing their keys form a **group** (an arm at a setting; with
  curves, at one evaluation);
* a generated table keeps every group and replicate, and gives group g at replicate r the value
  ``mean'[g] + residual[g, ρ(r)]``: whole recorded seeds resampled (ρ draws seeds with
  replacement, the same ρ for every group, so the groups keep the correlation they have through
  their shared seeds, and their skew and outliers), re-centred on the target means ``mean'``, with
  a little Gaussian smoothing that keeps each group's variance (the shrunk smoothed bootstrap,
  Silverman 1986 §6.4: resampling five seeds alone makes a t interval too narrow);
* deviations are added on the recorded scale: a group's mean is then its target exactly in
  expectation, which a paired difference of two nearly identical arms needs (a correction for
  exp's skew would differ between two groups by as much as their difference); a strictly positive
  column whose groups span more than a factor of ten (an excess risk, a time per phase) is drawn on
  the log scale instead, around geometric means, where its readouts read it (as log ratios).

Why not a library: scipy's ``bootstrap`` resamples to compute an interval; here whole seeds of a
whole table are resampled to build new inputs for a readout, which no package we know of does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

#: replicate columns: a training seed (a lost one is a failed run) or a repetition (Monte-Carlo
#: repetitions and timing rounds: a lost one may be left out, ``lost_seeds: drop``)
TRAINING, REPETITION = ("seed",), ("rep", "round", "repeat")
#: the axis of a curve: a run's evaluations along training
CURVE_AXES = ("epoch", "step")
SMOOTH = 0.5  # the share of each group's sd drawn as Gaussian jitter (the rest from the resampled seeds)
FEW = 5  # fewer seeds than this say nothing of their shape: drawn normal, with the seeds' covariance


@dataclass
class SeedFrame:
    """A per-replicate table, split into its replicate, keys and values (see the module)."""
    frame: pd.DataFrame
    replicate: str
    keys: list[str]
    values: list[str]
    axis: str | None = None  # the curve axis, when the rows are a run's evaluations
    groups: pd.DataFrame = field(init=False)  # one row per group: its keys
    _g: np.ndarray = field(init=False)  # group index of each row
    _r: np.ndarray = field(init=False)  # replicate index of each row
    reps: list = field(init=False)  # the replicate labels, in order

    def __post_init__(self):
        f = self.frame.reset_index(drop=True)
        self.frame = f
        key = f[self.keys].astype(object).where(f[self.keys].notna(), "<NA>") if self.keys else \
            pd.DataFrame(index=f.index)
        codes = pd.MultiIndex.from_frame(key).codes if len(self.keys) > 1 else \
            [pd.factorize(key.iloc[:, 0])[0]] if self.keys else [np.zeros(len(f), int)]
        tuples = list(zip(*codes)) if self.keys else [(0,)] * len(f)
        uniq = {t: i for i, t in enumerate(dict.fromkeys(tuples))}
        self._g = np.array([uniq[t] for t in tuples], int)
        first = pd.Series(range(len(f))).groupby(self._g).first().to_numpy()
        self.groups = f.loc[first, self.keys].reset_index(drop=True) if self.keys else pd.DataFrame(index=[0])
        self.reps = list(dict.fromkeys(f[self.replicate].tolist()))
        where = {r: i for i, r in enumerate(self.reps)}
        self._r = np.array([where[r] for r in f[self.replicate]], int)
        self.log = {v for v in self.values if _spans_magnitudes(self.table(v))}

    # ---------------------------------------------------------------------------------- reading
    @property
    def training(self) -> bool:
        """Whether a replicate is a training run (a lost one is a failed run, never left out)."""
        return self.replicate in TRAINING

    def table(self, column: str) -> np.ndarray:
        """groups × replicates of one value column (NaN where a group lacks a replicate)."""
        out = np.full((len(self.groups), len(self.reps)), np.nan)
        out[self._g, self._r] = self.frame[column].to_numpy(float)
        return out

    def means(self) -> dict[str, np.ndarray]:
        """Each value column's mean per group (over the replicates it has); geometric on a column drawn
        on the log scale (:attr:`log`)."""
        return {v: (np.exp(np.nanmean(np.log(self.table(v)), axis=1)) if v in self.log else
                    np.nanmean(self.table(v), axis=1)) for v in self.values}

    def label(self, g: int) -> str:
        """A group's keys as text, for a control's report."""
        shown = [k for k in self.keys if self.groups[k].astype(str).nunique() > 1]
        if not shown:
            return "all rows"
        return ", ".join(f"{k} = {self.groups.at[g, k]}" for k in shown)

    # ---------------------------------------------------------------------------------- writing
    def with_values(self, values: dict[str, np.ndarray]) -> pd.DataFrame:
        """A copy of the table with value columns replaced by groups × replicates arrays."""
        out = self.frame.copy()
        for v, tab in values.items():
            out[v] = tab[self._g, self._r]
        return out

    def generate(self, targets: dict[str, np.ndarray], rng: "np.random.Generator | Draw | None",
                 spread: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        """groups × replicates of each value column: whole seeds resampled (:func:`resample`, one draw
        of seeds for every group, and every table of the draw, ``Draw``), re-centred on ``targets``
        (each column's mean per group), their deviations scaled by ``spread`` per group (1: as
        recorded; 0: the noise-free table). ``rng`` None: the recorded seeds themselves, in order."""
        n = len(self.reps)
        state = None if rng is None else rng if isinstance(rng, Draw) else Draw(rng)
        u, w = (None, None) if state is None else state.seeds(n)
        out = {}
        for v in self.values:
            tab = self.table(v)
            mu = np.asarray(targets[v], float)
            scale = np.ones(len(mu)) if spread is None or v not in spread else spread[v]
            log = v in self.log and bool(np.all(mu[np.isfinite(mu)] > 0))
            base = np.log(tab) if log else tab
            dev = base - np.nanmean(base, axis=1, keepdims=True)
            d = (dev if state is None else resample(dev, u[None], w[None])[0]) * scale[:, None]
            # each group's mean (geometric, on the log scale) is its target exactly, in expectation
            gen = np.exp(np.log(mu)[:, None] + d) if log else mu[:, None] + d
            gen[np.isnan(tab)] = np.nan  # a group that lacked a replicate lacks it still
            out[v] = gen
        return out


class Draw:
    """One draw's seeds, shared by every table (and every group) with as many replicates: a run's
    scores and its curves are resampled as the same seeds."""

    def __init__(self, rng: np.random.Generator):
        self.rng, self._by_n = rng, {}

    def seeds(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if n not in self._by_n:
            self._by_n[n] = (self.rng.random(n), self.rng.standard_normal((n, n)))
        return self._by_n[n]


def resample(dev: np.ndarray, u: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per-seed deviations drawn again, whole seeds at a time: ``dev`` is rows (groups, cells) ×
    seeds (NaN where a seed was lost), ``u`` draws × seeds of uniforms and ``w`` draws × seeds ×
    seeds of normals, shared by every row, so that rows drawn together keep their covariance.

    Each row's surviving seeds are resampled (``u`` picks among them: a lost seed stays lost where it
    was, and is never multiplied), shrunk, and smoothed by a random combination of the row's own
    deviations (``w``): the shrunk smoothed bootstrap (Silverman 1986 §6.4) with the seeds' own
    covariance in place of independent noise, so that the variance is the recorded one and two
    groups (two epochs of one curve) that move together still do; with fewer than :data:`FEW` seeds,
    the smoothing alone (normal draws with the seeds' covariance: two seeds resampled are one seed
    twice half the time). Returns draws × rows × seeds."""
    dev = np.asarray(dev, float)
    draws, n = u.shape
    out = np.full((draws, dev.shape[0], n), np.nan)
    for r, row in enumerate(dev):
        fin = np.flatnonzero(np.isfinite(row))
        k = len(fin)
        if k == 0:
            continue
        if k == 1:
            out[:, r, fin] = 0.0
            continue
        vals = row[fin]
        h = SMOOTH if k >= FEW else 1.0  # too few seeds to resample: normal, with their covariance
        pick = vals[np.minimum((u * k).astype(int), k - 1)]  # draws × n
        shrink = np.sqrt((1 - h ** 2) * k / (k - 1))
        smooth = np.einsum("k,dkn->dn", vals, w[:, fin, :]) / np.sqrt(k - 1)
        drawn = shrink * pick + h * smooth
        out[:, r, :] = drawn
        out[:, r, np.setdiff1d(np.arange(n), fin)] = np.nan
    return out


def _spans_magnitudes(tab: np.ndarray) -> bool:
    """A strictly positive column whose groups' means span more than a factor of ten (an excess risk
    from 1e-7 to 4, a time per phase): drawn on the log scale, where its readouts read it (log
    ratios), and where deviations of one group cannot push another's values below zero."""
    x = tab[np.isfinite(tab)]
    if not len(x) or (x <= 0).any():
        return False
    m = np.nanmean(tab, axis=1)
    m = m[np.isfinite(m)]
    return len(m) > 1 and m.max() / m.min() > 10


def _same_grid(f: pd.DataFrame, column: str, replicate: str) -> bool:
    """Whether every replicate has the same values of ``column`` (a setting's grid: ε, p, a
    learning rate), so that it names rows rather than measuring them."""
    grids = {tuple(sorted(np.nan_to_num(np.round(g.to_numpy(float), 12), nan=np.inf).tolist()))
             for _, g in f.groupby(replicate)[column]}
    return len(grids) == 1


def _recurring(f: pd.DataFrame, column: str, replicate: str) -> float:
    """The share of rows whose value of ``column`` another replicate has too: near 1 for a setting,
    near 0 for a measurement (two seeds repeat one only by chance)."""
    if f[replicate].nunique() < 2:
        return 0.0
    x = pd.Series(np.nan_to_num(np.round(f[column].to_numpy(float), 12), nan=np.inf), index=f.index)
    reps = pd.DataFrame({"x": x, "r": f[replicate]}).groupby("x")["r"].nunique()
    return float((x.map(reps) >= 2).mean())


def _unique_rows(f: pd.DataFrame, keys: list[str], replicate: str) -> bool:
    """Whether ``keys`` and the replicate pick one row each."""
    cols = [*keys, replicate]
    by = f[cols].astype(object).where(f[cols].notna(), "<NA>")
    return not by.duplicated().any()


def seed_frame(obj) -> SeedFrame | None:
    """``obj`` as a :class:`SeedFrame`, or None when it is not a per-replicate table: a DataFrame
    with a replicate column and at least two replicates or one float column."""
    if not isinstance(obj, pd.DataFrame) or obj.empty:
        return None
    replicate = next((c for c in (*TRAINING, *REPETITION) if c in obj.columns), None)
    if replicate is None:
        return None
    floats = [c for c in obj.columns if c != replicate and pd.api.types.is_float_dtype(obj[c])]
    others = [c for c in obj.columns if c != replicate and c not in floats]
    # a non-float column that names the replicate itself (a run's own label) is carried along, not a key
    keys = [c for c in others if not _per_replicate(obj, c, replicate, [k for k in others if k != c])]
    # a float is a setting (a key) when every replicate has the same values of it (σ, ε, a full grid's
    # learning rates), or when the rows of one replicate need it to tell them apart (a grid some seeds ran
    # only in part): the most setting-like first, until each replicate has one row per group
    keys += [c for c in floats if _same_grid(obj, c, replicate)]
    rest = sorted((c for c in floats if c not in keys), key=lambda c: (-_recurring(obj, c, replicate), obj[c].nunique()))
    for col in rest:
        if _unique_rows(obj, keys, replicate):
            break
        if _recurring(obj, col, replicate) > 0:
            keys.append(col)
    values = [c for c in floats if c not in keys]
    if not values:
        return None
    axis = next((a for a in CURVE_AXES if a in keys), None)
    try:
        return SeedFrame(obj, replicate, keys, values, axis)
    except (KeyError, ValueError, TypeError):
        return None


def _per_replicate(f: pd.DataFrame, column: str, replicate: str, rest: list[str]) -> bool:
    """Whether ``column`` is a replicate's own label: the other keys leave several replicates in a
    group, and adding it leaves one."""
    def most(keys):
        if not keys:
            return f[replicate].nunique()
        by = f[keys].astype(object).where(f[keys].notna(), "<NA>")
        return int(f.groupby(pd.MultiIndex.from_frame(by), dropna=False)[replicate].nunique().max())

    return most(rest) > 1 and most([*rest, column]) <= 1


class SeedLists(SeedFrame):
    """Per-seed records kept as nested dicts whose leaves are lists, one entry per seed (a dict of
    numbers, or a number): ``{arm: [{"before": 0.51, "after": 0.62, ...} per seed]}``. Read as the
    long table of those numbers (one key column per level of nesting, ``seed`` the list index), so
    the one simulator draws them; :meth:`with_values` writes the drawn numbers back into a copy of
    the structure, sharing every part it does not change (a model's weights beside its scores)."""

    def __init__(self, obj, frame: SeedFrame, rows: list):
        self.obj, self._rows = obj, rows  # rows: (path, index, field or None), in the frame's row order
        super().__init__(frame.frame, frame.replicate, frame.keys, frame.values, frame.axis)

    @property
    def plain(self) -> bool:
        """Whether the lists hold plain numbers (a grid of settings looks the same: the caller decides)."""
        return self.values == [_NUMBER]

    def with_values(self, values: dict[str, np.ndarray], drop=None):
        flat = {v: tab[self._g, self._r] for v, tab in values.items()}
        out = _copy_along(self.obj, {path for path, _, _ in self._rows})
        for row, (path, index, _) in enumerate(self._rows):
            leaf = _at(out, path)
            for v in self.values:
                if isinstance(leaf[index], dict):
                    if v in leaf[index]:
                        leaf[index][v] = float(flat[v][row])
                elif v == _NUMBER:
                    leaf[index] = float(flat[v][row])
        return out


_NUMBER = "value"  # the value column of a list of plain numbers


def _number(x) -> bool:
    return isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, (bool, np.bool_))


def _replicate_lists(obj, path=()):
    """(path, list) of every list of two or more per-seed entries under ``obj`` (dicts all alike, or
    numbers)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _replicate_lists(v, (*path, k))
    elif isinstance(obj, list) and len(obj) >= 2:
        if all(isinstance(x, dict) for x in obj) and len({tuple(sorted(map(str, x))) for x in obj}) == 1:
            yield path, obj
        elif all(isinstance(x, (float, np.floating)) for x in obj):  # numbers per seed (a list of ints is seeds)
            yield path, obj


def _at(obj, path):
    for k in path:
        obj = obj[k]
    return obj


def _copy_along(obj, paths: set, here=()):
    """A copy of ``obj`` in which the dicts and lists on ``paths`` (and the per-seed dicts in them)
    are new objects, and everything else is shared."""
    if here in paths:
        return [dict(x) if isinstance(x, dict) else x for x in obj]
    if isinstance(obj, dict) and any(p[:len(here)] == here for p in paths):
        return {k: _copy_along(v, paths, (*here, k)) for k, v in obj.items()}
    return obj


def seed_lists(obj) -> SeedLists | None:
    """``obj`` (a dict, or a list of numbers) as :class:`SeedLists`, or None where it holds no
    per-seed lists of numbers."""
    if isinstance(obj, pd.DataFrame) or not isinstance(obj, (dict, list)):
        return None
    found = list(_replicate_lists(obj))
    if not found:
        return None
    depth = max(len(p) for p, _ in found)
    records, rows = [], []
    for path, lst in found:
        keys = {f"level {d}": str(path[d]) if d < len(path) else "" for d in range(depth)}
        for index, item in enumerate(lst):
            rec = {**keys, "seed": index}
            if isinstance(item, dict):
                rec.update({k: float(v) for k, v in item.items() if _number(v)})
            else:
                rec[_NUMBER] = float(item)
            records.append(rec)
            rows.append((path, index, None))
    frame = seed_frame(pd.DataFrame(records))
    if frame is None:
        return None
    return SeedLists(obj, frame, rows)
