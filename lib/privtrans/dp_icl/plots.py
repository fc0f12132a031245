"""Plot helpers shared by the dp_icl notebooks (mean curves with 2-s.e. error bars)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def curves(ax, summary: pd.DataFrame, x: str, hue: str | None, label: str = "{}", log_y=False,
           band_sd=False, err: str = "se", **kw):
    """One line per ``hue`` value: mean with +-2 ``err`` bars (err = 'se' or 'sd')."""
    groups = [(None, summary)] if hue is None else summary.groupby(hue, sort=True)
    for key, g in groups:
        g = g.sort_values(x)
        yerr = 2 * g[err].fillna(0).to_numpy()
        line = ax.errorbar(g[x], g["mean"], yerr=yerr, marker="o", ms=3, capsize=2,
                           label=label.format(key), **kw)
        if band_sd:
            lo = np.maximum(g["mean"] - 2 * g["sd"], 1e-300 if log_y else -np.inf)
            ax.fill_between(g[x], lo, g["mean"] + 2 * g["sd"], alpha=0.12, color=line[0].get_color())
    if log_y:
        ax.set_yscale("log")
    return ax


def overlay(ax, ref: pd.DataFrame, x: str, hue: str | None, label="authors' CSV{}", **kw):
    """The authors' numbers as hollow markers on the same axes."""
    groups = [(None, ref)] if hue is None else ref.groupby(hue, sort=True)
    first = True
    for key, g in groups:
        g = g.sort_values(x)
        ax.plot(g[x], g["value"], ls="none", marker="x", color="k", ms=5,
                label=label.format("") if first else None, **kw)
        first = False
    return ax
