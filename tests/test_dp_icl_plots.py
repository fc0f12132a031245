"""privtrans.dp_icl.plots: mean curves with 2·err bars, the authors' overlays and the per-ε panels
draw exactly the summary they are given."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from privtrans.dp_icl import plots  # noqa: E402
from privtrans.dp_icl.experiments import summarise  # noqa: E402


pytestmark = pytest.mark.usefixtures("clean_figures")


def _summary():
    """mean / sd / se per (eps, N) from raw draws, rows deliberately out of order."""
    rng = np.random.default_rng(0)
    raw = pd.DataFrame([dict(eps=e, N=n, risk=rng.uniform(0.5, 1.5) / n * (2 if e == 1 else 1))
                        for e in (4, 1) for n in (200, 50, 100) for _ in range(5)])
    return summarise(raw, ["eps", "N"], "risk").sample(frac=1, random_state=1)


def _bars(container):
    """(x, lower, upper) of each error bar of an errorbar container."""
    return [(s[0, 0], s[0, 1], s[1, 1]) for s in container.lines[2][0].get_segments()]


def test_curves_one_line_per_hue_with_two_standard_errors():
    s = _summary()
    ax = plt.figure().subplots()
    plots.curves(ax, s, "N", "eps", label="DP, ε={}")
    assert [c.get_label() for c in ax.containers] == ["DP, ε=1", "DP, ε=4"]  # hue values in sorted order
    for c, e in zip(ax.containers, (1, 4)):
        g = s[s.eps == e].sort_values("N")
        line = c.lines[0]
        np.testing.assert_array_equal(line.get_xdata(), [50, 100, 200])
        np.testing.assert_allclose(np.asarray(line.get_ydata(), float), g["mean"])
        bars = _bars(c)
        np.testing.assert_allclose([b[0] for b in bars], [50, 100, 200])
        np.testing.assert_allclose([b[1] for b in bars], g["mean"] - 2 * g["se"])
        np.testing.assert_allclose([b[2] for b in bars], g["mean"] + 2 * g["se"])
    assert ax.get_yscale() == "linear"
    assert not any(isinstance(c, PolyCollection) for c in ax.collections)  # no band unless asked


def test_curves_sd_bars_nan_errors_and_style_keywords():
    s = _summary()
    g = s[s.eps == 4].copy()
    ax = plt.figure().subplots()
    plots.curves(ax, g, "N", None, label="GD", err="sd", color="k", ls="--")
    with pytest.raises(ValueError, match="err must be 'se' or 'sd', got 'var'"):
        plots.curves(ax, g, "N", None, err="var")
    (c,) = ax.containers
    assert c.get_label() == "GD" and c.lines[0].get_linestyle() == "--"
    assert to_rgba(c.lines[0].get_color()) == to_rgba("k")
    g = g.sort_values("N")
    np.testing.assert_allclose([b[2] - b[1] for b in _bars(c)], 4 * g["sd"])
    # one draw per point: s.e. is NaN, drawn as no bar rather than dropping the point
    one = g.assign(se=np.nan)
    ax = plt.figure().subplots()
    plots.curves(ax, one, "N", None)
    (c,) = ax.containers
    assert len(c.lines[0].get_xdata()) == 3
    np.testing.assert_allclose([b[2] - b[1] for b in _bars(c)], 0.0)


def test_curves_sd_band_is_clipped_above_zero_on_a_log_axis():
    s = pd.DataFrame(dict(N=[10, 20], mean=[1.0, 0.5], sd=[1.0, 0.1], se=[0.1, 0.01]))
    ax = plt.figure().subplots()
    plots.curves(ax, s, "N", None, log_y=True, band_sd=True)
    assert ax.get_yscale() == "log"
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert to_rgba(band.get_facecolor()[0])[:3] == to_rgba(ax.containers[0].lines[0].get_color())[:3]
    v = band.get_paths()[0].vertices
    at10, at20 = v[np.isclose(v[:, 0], 10), 1], v[np.isclose(v[:, 0], 20), 1]
    assert at10.min() == 1e-300 and at10.max() == pytest.approx(3.0)   # 1 − 2 < 0: floored, not negative
    assert at20.min() == pytest.approx(0.3) and at20.max() == pytest.approx(0.7)
    ax = plt.figure().subplots()
    plots.curves(ax, s, "N", None, band_sd=True)  # linear axis: the band may go below zero
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    v = band.get_paths()[0].vertices
    assert v[np.isclose(v[:, 0], 10), 1].min() == pytest.approx(-1.0)


def test_overlay_labels_once_and_sorts_by_x():
    ref = pd.DataFrame(dict(eps=[4, 1, 4, 1], N=[200, 100, 50, 50], value=[0.1, 0.2, 0.3, 0.4]))
    ax = plt.figure().subplots()
    plots.overlay(ax, ref, "N", "eps")
    assert len(ax.lines) == 2 and [ln.get_marker() for ln in ax.lines] == ["x", "x"]
    assert all(ln.get_linestyle() == "None" and to_rgba(ln.get_color()) == to_rgba("k") for ln in ax.lines)
    np.testing.assert_array_equal(ax.lines[0].get_xydata(), [[50, 0.4], [100, 0.2]])   # ε = 1
    np.testing.assert_array_equal(ax.lines[1].get_xydata(), [[50, 0.3], [200, 0.1]])   # ε = 4
    assert [t.get_text() for t in ax.legend().get_texts()] == ["authors' CSV"]       # one legend entry


def test_overlay_quantities_and_a_missing_quantity():
    ref = pd.DataFrame(dict(T=[3, 1, 2, 1], quantity=["descent", "descent", "descent", "privacy"],
                            value=[0.3, 0.1, 0.2, 0.9]))
    ax = plt.figure().subplots()
    plots.overlay_quantities(ax, ref, "T", {"descent": ("x", "GD"), "privacy": ("+", "noise")})
    assert [(ln.get_marker(), ln.get_label()) for ln in ax.lines] == [("x", "authors' CSV, GD"),
                                                                     ("+", "authors' CSV, noise")]
    np.testing.assert_array_equal(ax.lines[0].get_xydata(), [[1, 0.1], [2, 0.2], [3, 0.3]])
    with pytest.raises(KeyError, match=r"'risk'.*\['descent', 'privacy'\]"):
        plots.overlay_quantities(ax, ref, "T", {"risk": ("x", "risk")})


def test_methods_by_eps_one_panel_per_epsilon():
    rows = []
    for e in (0.5, 2):
        for m in ("ridge", "dp_sgd") if e == 2 else ("ridge",):
            for n in (10, 30):
                rows.append(dict(eps=e, method=m, N=n, mean=1.0 / n + (m == "dp_sgd"), sd=0.01, se=0.005))
    summ = pd.DataFrame(rows)
    fig = plots.methods_by_eps(summ, [0.5, 2], ylabel="risk")
    assert len(fig.axes) == 2
    assert [ax.get_title() for ax in fig.axes] == ["ε = 0.5", "ε = 2"]
    assert [ax.get_xlabel() for ax in fig.axes] == ["Training set size N"] * 2
    assert [ax.get_ylabel() for ax in fig.axes] == ["risk", ""]
    assert all(ax.get_yscale() == "log" for ax in fig.axes)
    assert fig.axes[0].get_shared_y_axes().joined(fig.axes[0], fig.axes[1])
    assert [c.get_label() for c in fig.axes[0].containers] == ["ridge"]
    assert [c.get_label() for c in fig.axes[1].containers] == ["dp_sgd", "ridge"]
    np.testing.assert_allclose(np.asarray(fig.axes[1].containers[0].lines[0].get_ydata(), float), [1.1, 1 + 1 / 30])
    assert fig.axes[0].get_legend() is None and fig.axes[1].get_legend() is not None
