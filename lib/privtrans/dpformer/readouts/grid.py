"""Figure 2: the grid of batch size against ε with and without shared embeddings, read per cell and
per seed (its diagonal is also Tables 1-2's and the premise's).
"""

from __future__ import annotations

import pandas as pd

from privtrans.book.readouts import num

from .. import experiments
from .runs import DPFORMER, VANILLA, _best_cell, _cell_seeds, _ref, _seeds, _value, all_held, paired_keyed


def fig2_sharing_grid(grid: pd.DataFrame, refs: pd.DataFrame) -> dict:
    """Figure 2 over the B × lr grid: where the tie beats both untied arms, and its best cell.

    Judged: the tie against each untied arm on paired differences with the grid's cells as the
    replicates (seed means per cell; "consistent gains over the grid"), and the best cell of the
    larger batch sizes (learning rates) against the best of the smaller ones on paired seeds (needs
    two seeds per cell). Neither is gated: the orderings are judged on their own metric. How far the
    arms are above MostPopular is recorded beside them (``best_dp_vs_most_popular``), not judged."""
    cells = experiments.sharing_table(grid)
    best = cells[experiments.TIED].idxmax()
    largest = (int(grid.batch_size.max()), float(grid.lr.max()))
    per_cell = {m: {(int(B), float(lr)): float(v) for (B, lr), v in cells[m].items()}
                for m in (experiments.TIED, *experiments.UNTIED_ARMS)}
    vs = [paired_keyed(per_cell[experiments.TIED], per_cell[m], arm=m) for m in experiments.UNTIED_ARMS]
    mp = _ref(refs, "most_popular")
    above = _best_cell([paired_keyed(v, {c: mp for c in v}, method=m) for m, v in per_cell.items()], "no arm")
    tied_seeds = _cell_seeds(grid, experiments.TIED)
    largest_vs = [paired_keyed(tied_seeds[largest], v, batch_size=c[0], lr=c[1])
                  for c, v in sorted(tied_seeds.items()) if c != largest]
    large_vs_small = {m: large_vs_small_halves(_cell_seeds(grid, m))
                      for m in (experiments.TIED, *experiments.UNTIED_ARMS)}
    return {
        "seeds": _seeds(grid),
        "seeds_per_cell": int(min(len(v) for v in tied_seeds.values())),
        "frac_cells_sharing_wins": float(cells.sharing_wins.mean()),
        "n_cells": int(len(cells)),
        "mean_gain_points": float(100 * cells.gain.mean()),
        "tied_vs_untied": vs,
        "sharing_beats_untied": all_held(vs),
        "best_dp_vs_most_popular": above,
        "most_popular_ndcg": mp,
        "best_cell_shared": {"batch_size": int(best[0]), "lr": float(best[1])},
        "best_shared_is_largest": bool(best == largest),
        "largest_vs_other_cells": largest_vs,
        "largest_cell_beats_others": all_held(largest_vs),
        "large_vs_small": large_vs_small,
        "best_ndcg": {m: float(cells[m].max()) for m in (experiments.TIED, *experiments.UNTIED_ARMS)},
        "epsilon_spent": num(grid.epsilon_spent.max()),
    }


def _halves(values) -> tuple[list, list]:
    """The lower and the upper half of the sorted distinct ``values`` (an odd count leaves the middle
    one in neither); two empty lists with fewer than two values."""
    v = sorted(set(values))
    k = len(v) // 2
    return (v[:k], v[-k:]) if k else ([], [])


def _best_per_seed(cells: dict, keep) -> dict:
    """{seed: the best value over the cells ``keep`` selects}, for every seed any of them planned; None
    for a seed that a selected cell lacks (its best is then unknown: a lost seed, never a smaller max)."""
    chosen = [v for c, v in cells.items() if keep(c)]
    seeds = sorted({s for v in chosen for s in v})
    out = {}
    for s in seeds:
        vals = [_value(v.get(s)) for v in chosen]
        out[s] = None if any(x is None for x in vals) else max(vals)
    return out


def large_vs_small_halves(cells: dict) -> dict:
    """Figure 2's "the optimum uses a large batch size (with a large learning rate)" on one arm's grid
    ``{(B, lr): {seed: NDCG@10}}``, judged per seed on the best cell of each half of the grid:

    * ``batch_size``: best cell with B in the upper half of the grid's batch sizes − best cell with B in
      the lower half;
    * ``lr``: among the upper-half batch sizes, best cell with lr in the upper half of the learning
      rates − best with lr in the lower half.

    Both halves hold the same number of cells, so taking each half's maximum favours neither. Paired
    intervals across seeds (a grid with one seed per cell gives none)."""
    small_b, large_b = _halves(B for B, _ in cells)
    small_lr, large_lr = _halves(lr for _, lr in cells)
    return {
        "batch_size": paired_keyed(_best_per_seed(cells, lambda c: c[0] in large_b),
                                   _best_per_seed(cells, lambda c: c[0] in small_b),
                                   large=large_b, small=small_b),
        "lr": paired_keyed(_best_per_seed(cells, lambda c: c[0] in large_b and c[1] in large_lr),
                           _best_per_seed(cells, lambda c: c[0] in large_b and c[1] in small_lr),
                           large=large_lr, small=small_lr, at_batch_sizes=large_b),
    }


def grid_diagonal(grid: pd.DataFrame, ours: str = DPFORMER, base: str = VANILLA) -> dict:
    """Figure 7: ``ours`` − ``base`` per cell (seed means, shown) and, on every cell of the main
    diagonal, a paired interval across the seeds either ran there (judged; a seed one of them lacks
    counts as lost); a cell with one seed has none."""
    diffs = experiments.grid_differences(grid, ours, base)
    key = [f"B{int(B)}_lr{lr:g}" for B, lr in zip(diffs.batch_size, diffs.lr)]
    a, b = _cell_seeds(grid, ours), _cell_seeds(grid, base)
    diag = [(int(B), float(lr)) for B, lr in zip(diffs.batch_size[diffs.on_diagonal], diffs.lr[diffs.on_diagonal])]
    paired = [paired_keyed(a[c], b[c], batch_size=c[0], lr=c[1]) for c in diag]
    return {
        "grid_diffs": dict(zip(key, diffs["diff"].astype(float))),
        "diag_diffs": [float(v) for v in diffs.loc[diffs.on_diagonal, "diff"]],
        "diag_paired": paired,
        "dpformer_beats_vanilla_diag": all_held(paired),
        "grid_seeds_per_cell": int(min(len(a[c]) for c in diag)) if diag else 0,   # on the diagonal
        "frac_grid_dpformer_wins": float((diffs["diff"] > 0).mean()),
    }
