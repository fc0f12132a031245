"""The plots of the DPFormer result notebooks (Figures 2, 5, 6, 7), on the book's seaborn theme."""

from __future__ import annotations

import numpy as np
import pandas as pd

from privtrans.book.plotting import subplots

from . import data as rdata
from . import train

METHOD_COLORS = {"gru": "C2", "lstm": "C4", "transformer_untied": "C3", "transformer_untied_half": "C5",
                 "transformer": "C0", "dpformer": "C1"}


def rank_frequency(datasets: list[rdata.SeqData]):
    """Figure 5: item frequency against popularity rank, log-log, one line per dataset."""
    fig, axes = subplots(1, 2, figsize=(11, 3.8))
    for i, ds in enumerate(datasets):
        c = f"C{i % 10}"
        r, f = rdata.rank_frequency(ds)
        axes[0].loglog(r, f, color=c, label=ds.name)
        axes[1].plot(r / len(r), np.cumsum(f), color=c, label=ds.name)
    axes[0].set_xlabel("item popularity rank")
    axes[0].set_ylabel("share of interactions")
    axes[0].set_title("long tail (log-log)")
    axes[1].plot([0, 1], [0, 1], "k:", lw=1, label="uniform")
    axes[1].set_xlabel("fraction of items (most popular first)")
    axes[1].set_ylabel("cumulative share of interactions")
    axes[1].set_title("concentration")
    for ax in axes:
        ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def grid_heatmaps(df: pd.DataFrame, methods, value: str = "ndcg@10", title: str = "", diff=None):
    """Figures 2 / 7: one heatmap (batch size × learning rate) per method, values in %.

    ``diff=(a, b)`` adds a panel with a − b per cell.
    """
    import seaborn as sns

    tables = {m: df[df.method == m].pivot_table(index="batch_size", columns="lr", values=value, aggfunc="mean")
              * 100 for m in methods}
    panels = list(methods) + (["diff"] if diff else [])
    fig, axes = subplots(1, len(panels), figsize=(3.9 * len(panels), 3.4), squeeze=False)
    vmax = max(float(t.to_numpy().max()) for t in tables.values())
    vmin = min(float(t.to_numpy().min()) for t in tables.values())
    for ax, m in zip(axes[0], panels):
        if m == "diff":
            t = tables[diff[0]] - tables[diff[1]]
            lim = float(np.abs(t.to_numpy()).max()) or 1.0
            sns.heatmap(t, annot=True, fmt=".2f", cmap="RdBu", vmin=-lim, vmax=lim, cbar=False, ax=ax)
            ax.set_title(f"{train.LABELS[diff[0]]} − {train.LABELS[diff[1]]}", fontsize=10)
        else:
            sns.heatmap(tables[m], annot=True, fmt=".2f", cmap="viridis", vmin=vmin, vmax=vmax, cbar=False, ax=ax)
            ax.set_title(train.LABELS[m], fontsize=10)
        ax.set_xlabel("learning rate")
        ax.set_ylabel("batch size")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def training_curves(cv: pd.DataFrame, methods, epsilons, levels=(0.6, 0.7, 0.8, 0.9, 1.0)):
    """Figure 6: test NDCG@10 and HIT@10 during training, seed mean with graduated bands.

    The bands are the central 60%…100% ranges of the seeds' values at each logged epoch (empirical
    quantiles; 100% = min to max), lighter for wider ranges.
    """
    fig, axes = subplots(2, len(epsilons), figsize=(4.2 * len(epsilons), 6.2), squeeze=False, sharex=True)
    for j, e in enumerate(epsilons):
        for i, key in enumerate(("ndcg@10", "hit@10")):
            ax = axes[i, j]
            for m in methods:
                g = cv[(cv.method == m) & (cv.epsilon == e)]
                if g.empty:
                    continue
                wide = g.pivot_table(index="epoch", columns="seed", values=key) * 100
                x = wide.index.to_numpy()
                col = METHOD_COLORS.get(m, "k")
                for lvl in levels:
                    lo = wide.quantile((1 - lvl) / 2, axis=1)
                    hi = wide.quantile((1 + lvl) / 2, axis=1)
                    ax.fill_between(x, lo, hi, color=col, alpha=0.07, lw=0)
                ax.plot(x, wide.mean(axis=1), "-o", ms=3, color=col, label=train.LABELS[m])
            ax.set_title(f"ε = {e:g}" if i == 0 else "")
            ax.set_ylabel(f"{key.upper()} (%)")
            if i == 1:
                ax.set_xlabel("epoch")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def method_bars(df: pd.DataFrame, methods, epsilons, refs: pd.DataFrame | None = None, key: str = "ndcg@10"):
    """Tables 1/2 at a glance: mean ± std over seeds per method and ε; reference rows (label, key)
    as dashed and dotted lines."""
    fig, ax = subplots(figsize=(8, 3.6))
    width = 0.8 / len(methods)
    for k, m in enumerate(methods):
        sub = df[df.method == m]
        mu = [sub[sub.epsilon == e][key].mean() * 100 for e in epsilons]
        sd = [sub[sub.epsilon == e][key].std(ddof=1) * 100 if (sub.epsilon == e).sum() > 1 else 0 for e in epsilons]
        ax.bar(np.arange(len(epsilons)) + k * width, mu, width, yerr=sd, capsize=2,
               color=METHOD_COLORS.get(m, "k"), label=train.LABELS[m])
    for i, r in enumerate([] if refs is None else refs.to_dict("records")):
        ls = ("--", ":", "-.")[i % 3]
        ax.axhline(r[key] * 100, color="k", ls=ls, lw=1, label=r["label"])
    ax.set_xticks(np.arange(len(epsilons)) + 0.4 - width / 2)
    ax.set_xticklabels([f"ε = {e:g}" for e in epsilons])
    ax.set_ylabel(f"{key.upper()} (%)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig


def paired_differences(panels: dict, scale: float = 100.0):
    """Per-seed differences a − b (dots) with their 95 % t interval (bar) and mean (tick), one column
    per entry of each panel; ``panels`` maps a title to a list of ``readouts.paired_keyed`` dicts with
    a ``label`` for the column. A comparison holds where the bar lies above the zero line."""
    fig, axes = subplots(1, len(panels), figsize=(4.4 * len(panels), 3.4), squeeze=False)
    for ax, (title, rows) in zip(axes[0], panels.items()):
        for x, r in enumerate(rows):
            d = (np.asarray(r["a"], float) - np.asarray(r["b"], float)) * scale
            ax.plot(np.full(len(d), x) + np.linspace(-0.08, 0.08, len(d)), d, "o", color="C0", ms=4, alpha=0.7)
            if r.get("lo") is not None:
                ax.plot([x, x], [r["lo"] * scale, r["hi"] * scale], color="C3" if not r["held"] else "C2", lw=3)
            if r.get("mean") is not None:
                ax.plot([x - 0.15, x + 0.15], [r["mean"] * scale] * 2, color="k", lw=1)
        ax.axhline(0, color="k", ls=":", lw=1)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([r.get("label", "") for r in rows])
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
