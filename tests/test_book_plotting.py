"""privtrans.book.plotting: one look for every figure of the book (seaborn whitegrid, colour-blind
palette, fixed dpi and size), re-applied by every ``subplots`` call."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from privtrans.book import plotting  # noqa: E402


pytestmark = pytest.mark.usefixtures("clean_figures")


def _colorblind():
    return [to_hex(c) for c in sns.color_palette("colorblind")]


def test_theme_sets_the_books_look():
    matplotlib.rcdefaults()
    plotting.theme()
    rc = plt.rcParams
    assert rc["figure.dpi"] == 100 and rc["savefig.dpi"] == 120
    assert tuple(rc["figure.figsize"]) == (6.4, 4.0)
    assert rc["axes.grid"] is True and to_hex(rc["axes.facecolor"]) == "#ffffff"          # whitegrid
    assert [to_hex(c) for c in rc["axes.prop_cycle"].by_key()["color"]] == _colorblind()  # colorblind
    assert rc["font.size"] == 12                                                         # notebook context


def test_subplots_reapplies_the_theme_whatever_came_before():
    plt.rcParams.update({"figure.figsize": (1.0, 1.0), "figure.dpi": 33, "axes.grid": False,
                         "axes.prop_cycle": matplotlib.cycler(color=["#123456"])})
    fig, ax = plotting.subplots()
    assert tuple(fig.get_size_inches()) == (6.4, 4.0) and fig.dpi == 100
    assert all(g.get_visible() for g in ax.xaxis.get_gridlines() + ax.yaxis.get_gridlines())
    (line,) = ax.plot([0, 1], [0, 1])
    assert to_hex(line.get_color()) == _colorblind()[0]  # the first series takes the palette's first colour


def test_subplots_passes_its_arguments_to_matplotlib():
    fig, axes = plotting.subplots(2, 3, figsize=(9, 3), sharey=True)
    assert isinstance(axes, np.ndarray) and axes.shape == (2, 3)
    assert tuple(fig.get_size_inches()) == (9.0, 3.0)            # an explicit size wins over the theme's
    assert axes[0, 0].get_shared_y_axes().joined(axes[0, 0], axes[1, 2])
    fig, axes = plotting.subplots(1, 1, squeeze=False)
    assert axes.shape == (1, 1) and len(fig.axes) == 1
