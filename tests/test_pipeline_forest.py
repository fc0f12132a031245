"""privtrans.book.pipeline.forest: the plot's scale agrees with the verdict of every cell."""

from __future__ import annotations

import numpy as np

from privtrans.book import verdicts
from privtrans.book.paired import paired_difference
from privtrans.book.pipeline import forest


def test_a_cell_clears_zero_on_the_plot_exactly_when_it_clears_its_margin(tmp_path):
    rng = np.random.default_rng(3)
    for _ in range(200):
        n, margin = int(rng.integers(2, 8)), float(rng.normal(0, 0.5))
        b = rng.normal(size=n)
        cell = paired_difference(list(b + rng.normal(rng.normal(0, 0.5), 0.3, n)), list(b)).as_dict()
        z, lo, hi = forest.standardised(cell, margin)
        verdict = verdicts.cell_verdict(cell, margin)
        assert (lo > 1e-9) <= (verdict == verdicts.HELD) and (hi < -1e-9) <= (verdict == verdicts.CONTRADICTED)
        assert lo <= z <= hi
    rows = [{"id": "a", "kind": "reproduction", "margin": 0.0, "verdict": "held", "cells": {"": cell}},
            {"id": "b", "kind": "check", "margin": 0.0, "verdict": "held", "cells": {"": cell}}]
    assert [p["label"] for p in forest.points(rows)] == ["a"]  # checks are not the paper's claims
    assert forest.draw(rows, tmp_path / "f.png").stat().st_size > 1000
    assert forest.draw(rows[1:], tmp_path / "g.png") is None and not (tmp_path / "g.png").exists()


def test_the_landing_page_draws_every_chapter_in_one(tmp_path):
    cell = {"mean": 0.5, "lo": 0.2, "hi": 0.8, "n": 5}
    rows = [{"chapter": ch, "id": "c", "kind": "reproduction", "margin": 0.0, "verdict": "held",
             "cells": {"": cell}} for ch in ("taft", "merge")]
    assert [p["label"] for p in forest.points(rows, with_chapter=True)] == ["taft/c", "merge/c"]
    two = {"a": cell, "b": {"mean": 0.1, "lo": -0.3, "hi": 0.5, "n": 5}}
    many = [{**rows[0], "cells": two, "need": need} for need in ("all", "any")]
    # 'all' rests on the weaker cell, 'any' on the stronger: one bar per claim on the landing page
    assert [p["label"] for p in forest.points(many, with_chapter=True)] == ["taft/c [b] (1 of 2 cells)",
                                                                           "taft/c [a] (1 of 2 cells)"]
    assert forest.draw(rows, tmp_path / "all.png", with_chapter=True).stat().st_size > 1000
    assert "/book/_generated/forest.png" in forest.directive()
    assert "/book/_generated/taft/forest.png" in forest.directive("taft")


def test_a_plot_of_unchanged_bars_is_kept_and_a_change_redraws_it(tmp_path, monkeypatch):
    cell = {"mean": 0.5, "lo": 0.2, "hi": 0.8, "n": 5}
    rows = [{"id": "a", "kind": "reproduction", "margin": 0.0, "verdict": "held", "cells": {"": cell}}]
    path = forest.draw(rows, tmp_path / "f.png")
    first = path.read_bytes()
    import matplotlib.figure

    drawn = []
    real = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *a, **k: drawn.append(1) or real(self, *a, **k))
    assert forest.draw(rows, path) == path and drawn == [] and path.read_bytes() == first  # same bars: kept
    moved = [{**rows[0], "cells": {"": {**cell, "hi": 0.9}}}]
    assert forest.draw(moved, path) == path and drawn == [1] and path.read_bytes() != first  # another bar: redrawn
    assert forest.draw([{**moved[0], "verdict": "inconclusive"}], path) and drawn == [1, 1]  # another colour
    path.write_bytes(b"not a png")  # a damaged file is drawn again, not trusted
    assert forest.draw([{**moved[0], "verdict": "inconclusive"}], path) and drawn == [1, 1, 1]
