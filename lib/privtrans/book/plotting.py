"""One look for every figure of the book."""

from __future__ import annotations

import matplotlib.pyplot as plt
import seaborn as sns


def theme():
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 120, "figure.figsize": (6.4, 4.0)})


def subplots(*args, **kwargs):
    theme()
    return plt.subplots(*args, **kwargs)
