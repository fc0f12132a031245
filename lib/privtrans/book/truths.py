"""Truths the controls set: target means of a claim's tables at which its cells are where a control
needs them (on the margin, far beyond it, at the paper's effect), every arm equal, nothing learning,
curves that creep up or fall back.

A truth is placed through the claim's own readout: Newton steps on the compared groups' means, with
the slopes :func:`privtrans.book.probe.probe` read, until the noise-free cells are where they must
be (:func:`place`). Every arm equal (:func:`all_equal`) needs no readout at all: A = B for any
comparison it can make.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from . import claims, verdicts
from .probe import Probe, curve_groups
from .replay import ClaimPath, copy_targets, recorded_targets, training_frames

def jacobian(path: ClaimPath, p: Probe, entries: list) -> tuple[np.ndarray, np.ndarray]:
    """(cells × entries slopes, which entries move on the log scale): a column drawn on the log scale
    (:attr:`privtrans.book.records.SeedFrame.log`) is moved by a factor, its slope taken per unit of
    log mean (the probe's slope times the recorded mean: constant where the readout reads logs, so
    Newton reaches a far target in a step or two, never a mean below zero)."""
    rec = recorded_targets(path)
    logs = np.array([k[2] in path.calls[k[0]].frames[k[1]].log for k in entries], bool)
    J = np.array([p.slopes[k] * (rec[k[:2]][k[2]][k[3]] if lg else 1.0) for k, lg in zip(entries, logs)]).T
    return J, logs


def apply_moves(targets: dict, entries: list, delta: np.ndarray, logs: np.ndarray | None = None) -> dict:
    """``targets`` with each entry's mean moved by its ``delta`` (by a factor exp(delta) where ``logs``)."""
    out = copy_targets(targets)
    for j, ((i, name, v, g), d) in enumerate(zip(entries, delta)):
        if logs is not None and logs[j]:
            out[(i, name)][v][g] *= np.exp(d)
        else:
            out[(i, name)][v][g] += d
    return out


def noise_free(path: ClaimPath, targets: dict) -> np.ndarray | None:
    zero = {k: {v: np.zeros(len(a)) for v, a in t.items()} for k, t in targets.items()}
    m = path.means(path.tables(targets, None, zero))
    return m if m is not None and np.isfinite(m).any() else path.means(path.tables(targets, None))


def place(path: ClaimPath, p: Probe, targets: dict, truth: np.ndarray, entries: list | None = None,
          rounds: int = 12) -> tuple[dict | None, np.ndarray | None]:
    """Targets (group means) at which the claim's noise-free cells equal ``truth``: damped Newton steps
    on the compared groups' means (least squares: the smallest moves), with the probe's slopes, read
    again where the claim is not linear enough for them (a step halved until the cells come nearer;
    the slopes measured afresh at the current means when even a small step does not)."""
    entries = entries if entries is not None else p.compared()
    if not entries:
        return None, None
    J, logs = jacobian(path, p, entries)  # cells × entries
    x = targets
    m = noise_free(path, x)
    tol = 1e-7 * (1.0 + np.nanmax(np.abs(truth)))
    fresh = False
    for _ in range(rounds):
        if m is None or len(m) != J.shape[0]:  # the readout gives other cells here (one fewer, say)
            return None, m
        r = truth - m
        ok = np.isfinite(r)
        if not ok.any():
            return None, m
        if np.nanmax(np.abs(r[ok])) <= tol:
            return x, m
        delta, *_ = np.linalg.lstsq(J[ok], r[ok], rcond=None)
        for step in (1.0, 0.5, 0.25, 0.125):
            y = apply_moves(x, entries, step * delta, logs)
            my = noise_free(path, y)
            if my is not None and len(my) == len(r) and np.nansum((truth - my) ** 2) < np.nansum(r[ok] ** 2):
                x, m, fresh = y, my, False
                break
        else:
            if fresh:
                return None, m
            J, fresh = local_slopes(path, x, entries, logs, m), True
    if m is not None and len(m) == len(truth) and np.nanmax(np.abs(truth - m)) <= 1e-4 * (1.0 + np.nanmax(np.abs(truth))):
        return x, m
    return None, m


def local_slopes(path: ClaimPath, x: dict, entries: list, logs: np.ndarray, base: np.ndarray) -> np.ndarray:
    """The cells' slopes at ``x`` itself (per unit of mean, or of log mean where ``logs``)."""
    cols = []
    for k, lg in zip(entries, logs):
        h = 1e-4 if lg else 1e-4 * (abs(x[k[:2]][k[2]][k[3]]) or 1.0)
        m = noise_free(path, apply_moves(x, [k], np.array([h]), np.array([lg])))
        cols.append(np.zeros(len(base)) if m is None or len(m) != len(base) else np.nan_to_num((m - base) / h))
    return np.array(cols).T


def all_equal(path: ClaimPath, p: Probe | None = None) -> dict:
    """Every group of every table at one level per value column, every curve at the tables' mean
    curve: A = B for every comparison a readout can make, and one set of draws every claim of the
    notebook shares. Where the claim compares two measures of one run (``p``: accuracy before and
    after distillation), those columns share one level too."""
    out = recorded_targets(path)
    for (i, name), t in out.items():
        f = path.calls[i].frames[name]
        cg = curve_groups(f) if f.axis is not None else None
        for v, mu in t.items():
            if cg is None:
                mu[:] = _level(mu, v in f.log)
                continue
            if len({len(idx) for idx in cg.values()}) != 1:
                continue
            mean_curve = np.nanmean([mu[idx] for idx in cg.values()], axis=0)
            for idx in cg.values():
                mu[idx] = mean_curve
    return _one_level(path, p, out)


def _level(mu: np.ndarray, log: bool) -> float:
    return float(np.exp(np.nanmean(np.log(mu))) if log else np.nanmean(mu))


def compared_columns(p: Probe | None) -> dict:
    """{(call, table): the value columns the claim compares with each other}, where it compares more
    than one (the arms are two measures of a run, not two runs)."""
    cols: dict = {}
    for (i, name, v, _) in (p.compared() if p is not None else []):
        cols.setdefault((i, name), set()).add(v)
    return {k: sorted(v) for k, v in cols.items() if len(v) > 1}


def _one_level(path: ClaimPath, p: Probe | None, out: dict) -> dict:
    for (i, name), cols in compared_columns(p).items():
        f = path.calls[i].frames[name]
        level = _level(np.concatenate([out[(i, name)][v] for v in cols]), all(v in f.log for v in cols))
        for v in cols:
            out[(i, name)][v][:] = level
    return out


def at_margin(path: ClaimPath, p: Probe, c: dict, edge: float) -> tuple[dict | None, str]:
    """The null of the claim at ``edge`` (its margin, or a band's edge): every arm equal, then moved
    onto the edge through the path where that is not already there."""
    eq = all_equal(path, p)
    m = noise_free(path, eq)
    if m is None or not np.isfinite(m).any():
        return None, "the claim gives no cells when every arm is equal"
    if len(m) != len(p.base):
        return None, f"the claim gives {len(m)} cells when every arm is equal, {len(p.base)} as recorded"
    if np.nanmax(np.abs(m - edge)) <= 1e-9 * (1 + abs(edge)):
        return eq, f"every arm equal (the cells at {edge:+.3g})"
    x, got = place(path, p, eq, np.full(len(m), float(edge)))
    if x is None:
        return None, (f"every arm equal gives cells {np.round(m, 4).tolist()}, and no move of the compared "
                      f"groups puts every cell at {edge:+.3g}")
    return x, f"every arm equal, then the compared ones moved until every cell is at {edge:+.3g}"


def cell_sd(row_cells: Mapping | None, n: int) -> np.ndarray:
    """Each cell's paired sd as recorded (the median of the others where one has none)."""
    sds = [verdicts.sd_of(cell) for cell in (row_cells or {}).values()]
    known = [s for s in sds if s is not None and s > 0]
    fill = float(np.median(known)) if known else None
    out = [s if s is not None and s > 0 else fill for s in sds] if len(sds) == n else [fill] * n
    return np.array([np.nan if s is None else s for s in out], float)


def nothing_learns(path: ClaimPath, frames=None, p: Probe | None = None) -> dict:
    """Every group of every training table (of ``frames``) at one level per value column (the columns
    the claim compares with each other at one level too: nothing learned between before and after);
    each curve flat at the mean first evaluation."""
    out = recorded_targets(path)
    for (i, name) in (frames if frames is not None else training_frames(path)):
        f = path.calls[i].frames[name]
        for v in f.values:
            mu = out[(i, name)][v]
            if f.axis is None:
                mu[:] = _level(mu, v in f.log)
            else:
                cg = curve_groups(f)
                start = np.nanmean([mu[idx[0]] for idx in cg.values()])
                mu[:] = start
    return _one_level(path, p, out)


def curve_shapes(path: ClaimPath, p: Probe) -> dict:
    """{name: targets, spread} of the curve controls: the favoured arm's curves creep up without
    learning, or rise and fall back; every compared curve drifts monotonically."""
    out = {}
    rec = recorded_targets(path)
    for (i, name), resp in p.curve_groups.items():
        f = path.calls[i].frames[name]
        cg = curve_groups(f)
        fav = [cg[k] for k, s in resp.items() if s > 0 and k in cg]
        other = [cg[k] for k, s in resp.items() if s < 0 and k in cg]
        if not fav:
            continue
        creep, diverge, drift = copy_targets(rec), copy_targets(rec), copy_targets(rec)
        spread_creep = {(i, name): {v: np.ones(len(f.groups)) for v in f.values}}
        spread_drift = {(i, name): {v: np.ones(len(f.groups)) for v in f.values}}
        for v in f.values:
            mu = rec[(i, name)][v]
            ref = other or fav
            peak = np.nanmean([np.nanmax(mu[idx]) for idx in ref])
            start = np.nanmean([mu[idx[0]] for idx in ref])
            tiny = 1e-3 * (abs(peak - start) or abs(start) or 1.0)
            for idx in fav:
                k = np.arange(len(idx), dtype=float)
                creep[(i, name)][v][idx] = start + tiny * k
                spread_creep[(i, name)][v][idx] = 0.0
                half = max(len(idx) // 2, 1)
                up = np.interp(k, [0, half, max(len(idx) - 1, half)], [start, peak, start])
                diverge[(i, name)][v][idx] = up
            for idx in fav + other:
                k = np.arange(len(idx), dtype=float)
                drift[(i, name)][v][idx] = start + tiny * k
                spread_drift[(i, name)][v][idx] = 0.0
        out.setdefault("the favoured arm's curves creep up without learning", (creep, spread_creep))
        out.setdefault("the favoured arm's curves rise and fall back", (diverge, None))
        out.setdefault("every compared curve drifts up monotonically, no arm learning", (drift, spread_drift))
    return out


def paper_relative(c: dict, chapter: str, n: int, root=None) -> np.ndarray | None:
    """The paper's effect relative to its level of the arm compared with (``paper_test`` over
    ``paper_level``, cell by cell), on our n cells: by position where the paper has as many, else
    their median for every cell (the paper's three ε against our two, say)."""
    if not (c.get("paper_level") and c.get("paper_test")):
        return None
    from simpleeval import EvalWithCompoundTypes

    from .paper_values import lookup

    P = lookup(chapter, root)
    ev = EvalWithCompoundTypes(functions=dict(claims.FUNCTIONS, P=P), names={"P": P, "math": claims.MATH})

    def values(text):
        v = ev.eval(text)
        v = list(v.values()) if isinstance(v, Mapping) else list(v) if isinstance(v, (list, tuple)) else [v]
        return np.array([float(x) for x in v], float)

    diff, level = values(c["paper_test"]), values(c["paper_level"])
    if len(diff) != len(level):
        return None
    rel = diff / level
    return rel if len(rel) == n else np.full(n, float(np.median(rel)))


def our_level(path: ClaimPath, p: Probe, targets: dict, n: int) -> np.ndarray:
    """Per cell, the level of the arm compared with: the mean of its negative-slope groups."""
    num, den = np.zeros(n), np.zeros(n)
    for k in p.against():
        i, name, v, g = k
        s = np.minimum(p.slopes[k], 0)
        num += -s * targets[(i, name)][v][g]
        den += -s
    return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
