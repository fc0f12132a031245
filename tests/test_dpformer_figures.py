"""privtrans.dpformer.figures: every plot's artists (panels, lines, bars, annotations, labels) hold
exactly what its input data implies."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import QuadMesh  # noqa: E402

from privtrans.dpformer import figures  # noqa: E402
from privtrans.dpformer.data import SeqData  # noqa: E402
from privtrans.dpformer.train import LABELS  # noqa: E402


pytestmark = pytest.mark.usefixtures("clean_figures")


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


# ----------------------------------------------------------------------------------- Figure 5
def test_rank_frequency_lines_are_the_datasets_rank_frequencies():
    # counts: item 1 ×4, item 3 ×2, item 2 ×1, items 4, 5 never (dropped); then a flat dataset
    a = SeqData("skewed", [np.array([1, 1, 3]), np.array([1, 2, 3, 1])], n_items=5)
    b = SeqData("flat", [np.array([1, 2]), np.array([3, 4])], n_items=4)
    fig = figures.rank_frequency([a, b])
    ax0, ax1 = fig.axes
    assert len(fig.axes) == 2 and (ax0.get_xscale(), ax0.get_yscale()) == ("log", "log")
    assert [ln.get_label() for ln in ax0.lines] == ["skewed", "flat"]
    np.testing.assert_array_equal(ax0.lines[0].get_xdata(), [1, 2, 3])
    np.testing.assert_allclose(ax0.lines[0].get_ydata(), [4 / 7, 2 / 7, 1 / 7])
    np.testing.assert_allclose(ax0.lines[1].get_ydata(), [0.25] * 4)
    # cumulative share against the fraction of items, ending at (1, 1); then the uniform diagonal
    assert [ln.get_label() for ln in ax1.lines] == ["skewed", "flat", "uniform"]
    np.testing.assert_allclose(ax1.lines[0].get_xdata(), [1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(ax1.lines[0].get_ydata(), [4 / 7, 6 / 7, 1])
    np.testing.assert_allclose(ax1.lines[1].get_ydata(), [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(ax1.lines[2].get_xydata(), [[0, 0], [1, 1]])
    assert ax0.lines[0].get_color() == ax1.lines[0].get_color() != ax0.lines[1].get_color()
    assert _legend(ax0) == ["skewed", "flat"] and _legend(ax1) == ["skewed", "flat", "uniform"]
    # a third dataset gets its own line and colour (the figure once drew only the first two)
    c = SeqData("third", [np.array([2, 2, 1])], n_items=3)
    three = figures.rank_frequency([a, b, c]).axes[0].lines
    assert [ln.get_label() for ln in three] == ["skewed", "flat", "third"]
    assert len({ln.get_color() for ln in three}) == 3


# ----------------------------------------------------------------------------------- Figures 2 / 7
def _grid():
    """Two seeds per (method, B, lr) cell; the cell means are what the heatmaps must show."""
    rows = []
    for m, base in (("dpformer", 0.10), ("transformer", 0.05)):
        for i, bs in enumerate((256, 32)):          # given unsorted: the heatmap sorts them
            for j, lr in enumerate((1e-3, 1e-2, 1e-4)):
                for s, jitter in enumerate((-0.002, 0.002)):
                    rows.append(dict(method=m, batch_size=bs, lr=lr, seed=s,
                                     **{"ndcg@10": base + 0.01 * i + 0.001 * j + jitter}))
    return pd.DataFrame(rows)


def _cells(ax):
    """The heatmap's values row by row (batch size ascending, lr ascending)."""
    mesh = [c for c in ax.collections if isinstance(c, QuadMesh)]
    assert len(mesh) == 1
    return mesh[0], np.asarray(mesh[0].get_array()).reshape(2, 3)


def test_grid_heatmaps_panels_values_and_shared_scale():
    df = _grid()
    fig = figures.grid_heatmaps(df, ["dpformer", "transformer"], title="toy grid", diff=("dpformer", "transformer"))
    assert len(fig.axes) == 3 and fig._suptitle.get_text() == "toy grid"
    assert [ax.get_title() for ax in fig.axes] == [
        LABELS["dpformer"], LABELS["transformer"], f"{LABELS['dpformer']} − {LABELS['transformer']}"]
    want = {m: df[df.method == m].groupby(["batch_size", "lr"])["ndcg@10"].mean().unstack().sort_index() * 100
            for m in ("dpformer", "transformer")}
    lo, hi = min(w.to_numpy().min() for w in want.values()), max(w.to_numpy().max() for w in want.values())
    for ax, m in zip(fig.axes[:2], ("dpformer", "transformer")):
        mesh, vals = _cells(ax)
        np.testing.assert_allclose(vals, want[m].to_numpy())
        assert [t.get_text() for t in ax.texts] == [f"{v:.2f}" for v in want[m].to_numpy().ravel()]
        assert (mesh.norm.vmin, mesh.norm.vmax) == pytest.approx((lo, hi))   # one colour scale
        assert [t.get_text() for t in ax.get_yticklabels()] == ["32", "256"]
        assert len(ax.get_xticklabels()) == 3
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("learning rate", "batch size")
    mesh, vals = _cells(fig.axes[2])
    d = (want["dpformer"] - want["transformer"]).to_numpy()
    np.testing.assert_allclose(vals, d)
    lim = np.abs(d).max()
    assert (mesh.norm.vmin, mesh.norm.vmax) == pytest.approx((-lim, lim))      # symmetric around 0


def test_grid_heatmaps_without_diff_and_with_a_zero_diff():
    df = _grid()
    fig = figures.grid_heatmaps(df, ["transformer"])
    assert len(fig.axes) == 1 and fig._suptitle is None
    # a − a is 0 everywhere: the colour limits fall back to ±1 instead of a degenerate 0..0
    fig = figures.grid_heatmaps(df, ["dpformer"], diff=("dpformer", "dpformer"))
    mesh, vals = _cells(fig.axes[1])
    assert not vals.any() and (mesh.norm.vmin, mesh.norm.vmax) == (-1.0, 1.0)


# ----------------------------------------------------------------------------------- Figure 6
def _curves():
    rng = np.random.default_rng(0)
    rows = []
    for m in ("transformer", "dpformer"):
        for e in (1.0, 8.0):
            if m == "transformer" and e == 8.0:
                continue  # a method without runs at one ε: no line there
            for seed in range(4):
                for epoch in (3, 1, 2):
                    rows.append(dict(method=m, epsilon=e, seed=seed, epoch=epoch,
                                     **{"ndcg@10": rng.uniform(0, 0.1), "hit@10": rng.uniform(0.1, 0.3)}))
    return pd.DataFrame(rows)


def test_training_curves_seed_means_and_widest_band():
    cv, levels = _curves(), (0.6, 0.8, 1.0)
    fig = figures.training_curves(cv, ["transformer", "dpformer"], [1.0, 8.0], levels=levels)
    axes = np.array(fig.axes).reshape(2, 2)
    assert [ax.get_title() for ax in axes[0]] == ["ε = 1", "ε = 8"] and [ax.get_title() for ax in axes[1]] == ["", ""]
    assert [ax.get_ylabel() for ax in axes[:, 0]] == ["NDCG@10 (%)", "HIT@10 (%)"]
    assert [ax.get_xlabel() for ax in axes[1]] == ["epoch", "epoch"]
    for j, e in enumerate((1.0, 8.0)):
        present = ["transformer", "dpformer"] if e == 1.0 else ["dpformer"]
        for i, key in enumerate(("ndcg@10", "hit@10")):
            ax = axes[i, j]
            assert [ln.get_label() for ln in ax.lines] == [LABELS[m] for m in present]
            assert len(ax.collections) == len(levels) * len(present)
            for k, (m, ln) in enumerate(zip(present, ax.lines)):
                wide = cv[(cv.method == m) & (cv.epsilon == e)].pivot_table(index="epoch", columns="seed", values=key) * 100
                np.testing.assert_array_equal(ln.get_xdata(), [1, 2, 3])
                np.testing.assert_allclose(ln.get_ydata(), wide.mean(axis=1).to_numpy())
                band = ax.collections[k * len(levels) + len(levels) - 1].get_paths()[0].vertices  # 100 %: min..max
                for epoch in (1, 2, 3):
                    ys = band[np.isclose(band[:, 0], epoch), 1]
                    assert ys.min() == pytest.approx(wide.loc[epoch].min()) and ys.max() == pytest.approx(wide.loc[epoch].max())
    assert _legend(axes[0, 0]) == [LABELS["transformer"], LABELS["dpformer"]]
    assert all(ax.get_legend() is None for ax in fig.axes[1:])


# ----------------------------------------------------------------------------------- Tables 1/2
def test_method_bars_heights_errors_and_references():
    rows = [dict(method="dpformer", epsilon=e, seed=s, **{"ndcg@10": v})
            for e, vals in ((1.0, (0.10, 0.12, 0.14)), (8.0, (0.20,))) for s, v in enumerate(vals)]
    rows += [dict(method="transformer", epsilon=e, seed=s, **{"ndcg@10": v})
             for e, vals in ((1.0, (0.05, 0.07)), (8.0, (0.15, 0.19))) for s, v in enumerate(vals)]
    refs = pd.DataFrame([{"label": "MostPopular", "ndcg@10": 0.03}, {"label": "Oracle", "ndcg@10": 0.5}])
    fig = figures.method_bars(pd.DataFrame(rows), ["dpformer", "transformer"], [1.0, 8.0], refs=refs)
    (ax,) = fig.axes
    bars = [c for c in ax.containers if hasattr(c, "patches")]
    assert [len(c.patches) for c in bars] == [2, 2]
    np.testing.assert_allclose([p.get_height() for p in bars[0].patches], [12.0, 20.0])
    np.testing.assert_allclose([p.get_height() for p in bars[1].patches], [6.0, 17.0])
    # error bars: ± the seeds' sample s.d. (0 for a single seed)
    for c, sds in zip(bars, ([2.0, 0.0], [np.std([5, 7], ddof=1), np.std([15, 19], ddof=1)])):
        segs = c.errorbar.lines[2][0].get_segments()
        np.testing.assert_allclose([s[1, 1] - s[0, 1] for s in segs], 2 * np.array(sds), atol=1e-9)
    # the two methods side by side within each ε group
    x0 = [p.get_x() for p in bars[0].patches]
    x1 = [p.get_x() for p in bars[1].patches]
    assert x0[0] < x1[0] < x0[1] < x1[1]
    refs_drawn = [ln for ln in ax.lines if ln.get_label() in ("MostPopular", "Oracle")]
    assert [(ln.get_label(), ln.get_ydata()[0], ln.get_linestyle()) for ln in refs_drawn] == [
        ("MostPopular", pytest.approx(3.0), "--"), ("Oracle", pytest.approx(50.0), ":")]
    third = pd.concat([refs, pd.DataFrame([{"label": "Third", "ndcg@10": 0.4}])])
    ax3 = figures.method_bars(pd.DataFrame(rows), ["dpformer", "transformer"], [1.0, 8.0], refs=third).axes[0]
    assert [ln.get_label() for ln in ax3.lines if ln.get_label() in ("MostPopular", "Oracle", "Third")] == \
        ["MostPopular", "Oracle", "Third"]  # every reference row is drawn (the figure once dropped the third)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["ε = 1", "ε = 8"]
    assert _legend(ax) == ["MostPopular", "Oracle", LABELS["dpformer"], LABELS["transformer"]]
    assert ax.get_ylabel() == "NDCG@10 (%)"


def test_method_bars_without_references():
    df = pd.DataFrame([dict(method="gru", epsilon=2.0, seed=0, **{"hit@10": 0.3})])
    (ax,) = figures.method_bars(df, ["gru"], [2.0], key="hit@10").axes
    assert [p.get_height() for p in ax.patches] == [pytest.approx(30.0)]
    assert _legend(ax) == [LABELS["gru"]] and ax.get_ylabel() == "HIT@10 (%)"


# ----------------------------------------------------------------------------------- paired
def test_paired_differences_dots_intervals_and_means():
    held = dict(a=[0.3, 0.4, 0.5], b=[0.1, 0.1, 0.2], lo=0.1, hi=0.35, mean=0.2667, held=True, label="ε = 1")
    failed = dict(a=[0.1, 0.2], b=[0.2, 0.1], lo=-0.5, hi=0.5, mean=0.0, held=False, label="ε = 8")
    bare = dict(a=[1.0], b=[0.5], label="no CI")
    fig = figures.paired_differences({"first": [held, failed], "second": [bare]}, scale=10.0)
    ax1, ax2 = fig.axes
    assert [ax1.get_title(), ax2.get_title()] == ["first", "second"]
    assert [t.get_text() for t in ax1.get_xticklabels()] == ["ε = 1", "ε = 8"]
    assert [t.get_text() for t in ax2.get_xticklabels()] == ["no CI"]
    dots = [ln for ln in ax1.lines if ln.get_marker() == "o"]
    np.testing.assert_allclose(dots[0].get_ydata(), [2.0, 3.0, 3.0])
    np.testing.assert_allclose(dots[1].get_ydata(), [-1.0, 1.0])
    assert [round(float(np.mean(d.get_xdata())), 9) for d in dots] == [0.0, 1.0]  # centred on the column
    ci = [ln for ln in ax1.lines if ln.get_linewidth() == 3]
    assert [ln.get_color() for ln in ci] == ["C2", "C3"]  # green where the comparison holds
    np.testing.assert_allclose(ci[0].get_ydata(), [1.0, 3.5])
    np.testing.assert_allclose(ci[1].get_ydata(), [-5.0, 5.0])
    ticks = [ln for ln in ax1.lines if ln.get_color() == "k" and ln.get_linestyle() == "-"]  # the mean
    assert [(tuple(ln.get_xdata()), tuple(ln.get_ydata())) for ln in ticks] == [
        (pytest.approx((-0.15, 0.15)), pytest.approx((2.667, 2.667))), (pytest.approx((0.85, 1.15)), (0.0, 0.0))]
    # the zero line on both; no interval nor mean where the row has none
    assert len(ax2.lines) == 1 + 0 + 0 + 1  # dots + zero line (axhline)
    assert any(np.allclose(ln.get_ydata(), 0) and ln.get_linestyle() == ":" for ln in ax2.lines)
