"""Plot helpers shared by the dp_icl notebooks (mean curves with 2-s.e. error bars)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from privtrans.book import plotting


def curves(ax, summary: pd.DataFrame, x: str, hue: str | None, label: str = "{}", log_y=False,
           band_sd=False, err: str = "se", **kw):
    """One line per ``hue`` value: mean with +-2 ``err`` bars (err = 'se' or 'sd')."""
    if err not in ("se", "sd"):
        raise ValueError(f"err must be 'se' or 'sd', got {err!r}")
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


def overlay_quantities(ax, ref: pd.DataFrame, x: str, markers: dict[str, tuple[str, str]],
                       label="authors' CSV, {}"):
    """The authors' numbers of several quantities in black, ``{quantity: (marker, legend name)}``."""
    for q, (m, name) in markers.items():
        r = ref[ref["quantity"] == q].sort_values(x)
        if r.empty:
            raise KeyError(f"no reference values for quantity {q!r}; have {sorted(set(ref['quantity']))}")
        ax.plot(r[x], r["value"], ls="none", marker=m, color="k", label=label.format(name))
    return ax


def methods_by_eps(summary: pd.DataFrame, eps, ylabel: str = "Excess risk (log scale)"):
    """One panel per epsilon: each method's excess risk against N, log scale, one shared legend."""
    fig, axes = plotting.subplots(1, len(eps), figsize=(4 * len(eps), 4), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, e in zip(axes, eps):
        curves(ax, summary[summary.eps == e], "N", "method", log_y=True)
        ax.set(xlabel="Training set size N", title=f"ε = {e}")
    axes[0].set_ylabel(ylabel)
    axes[-1].legend(fontsize=7)
    return fig
