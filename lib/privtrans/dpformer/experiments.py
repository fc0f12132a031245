"""What the DPFormer result notebooks share: datasets by name, run grids through the cache, tables.

The notebooks stay thin: they pick a dataset and a grid from their settings, call these helpers,
plot and record. Everything trained goes through :class:`~privtrans.dpformer.cache.RunCache`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import data as rdata
from . import metrics, synthetic, train
from .cache import RunCache


@dataclass
class Bundle:
    """A dataset ready for training: sequences, the leave-one-out split, the true model if synthetic."""

    data: rdata.SeqData
    split: rdata.Split
    truth: synthetic.SessionModel | None = None

    @property
    def name(self) -> str:
        return self.data.name


def load(cfg: dict) -> Bundle:
    """``cfg["dataset"]`` is ``movielens`` or ``amazon_like`` (generator arguments in ``cfg["generator"]``)."""
    name = cfg.get("dataset")
    if name == "movielens":
        ds, truth = rdata.load_movielens(k=cfg.get("k_core", 5)), None
    elif name == "amazon_like":
        ds, truth = synthetic.amazon_like(**(cfg.get("generator") or {}))
    else:
        raise ValueError(f"dataset must be 'movielens' or 'amazon_like', got {name!r}")
    return Bundle(ds, rdata.leave_one_out(ds, cfg["max_len"]), truth)


def reference_rows(b: Bundle, max_len: int) -> list[dict]:
    """Non-trained anchors: MostPopular (non-private, for scale) and, for synthetic data, the oracle."""
    n = len(b.split.test_target)
    rows = []
    mp = metrics.ndcg_hit(metrics.target_rank(
        metrics.most_popular_scores(b.split.train, b.split.n_items, n), b.split.test_target))
    rows.append({"method": "most_popular", "label": "MostPopular (non-private)", **mp})
    if b.truth is not None:
        orc = metrics.ndcg_hit(metrics.target_rank(
            synthetic.oracle_scores(b.truth, b.split.test_input[:, -max_len:]), b.split.test_target))
        rows.append({"method": "oracle", "label": "Oracle (true generator)", **orc})
    return rows


def run_grid(cache: RunCache, b: Bundle, cfg: dict, methods, epsilons, seeds, log=None,
             **overrides) -> list[dict]:
    """Every (method, ε, seed) run with the notebook's settings (plus ``overrides``), via the cache."""
    out = []
    for eps in epsilons:
        for method in methods:
            for seed in seeds:
                spec = train.spec_from_cfg(cfg, method, eps, seed, **overrides)
                out.append(cache.run(spec, b.split, b.data, log=log))
    return out


def frame(results: list[dict]) -> pd.DataFrame:
    """One row per run: method, ε, seed, B, lr, NDCG@10, HIT@10, the privacy budget, time, cache hit."""
    rows = []
    for r in results:
        s, p = r["spec"], r.get("privacy") or {}
        rows.append({
            "method": s["method"], "label": train.LABELS[s["method"]], "epsilon": s["epsilon"],
            "seed": s["seed"], "batch_size": s["batch_size"], "lr": s["lr"], "d": s["d"],
            "ndcg@10": r["ndcg@10"], "hit@10": r["hit@10"],
            "epsilon_spent": p.get("epsilon"), "delta": p.get("delta"), "sigma": p.get("noise_multiplier"),
            "steps": p.get("steps"), "privacy": r["privacy_label"], "seconds": r["seconds"],
            "cached": r.get("cached", False),
        })
    return pd.DataFrame(rows)


def paper_table(df: pd.DataFrame, methods, epsilons, base: str = "transformer",
                ours: str = "dpformer") -> pd.DataFrame:
    """Tables 1/2 layout: one row per method, 'mean ± std' (%) of NDCG@10 and HIT@10 per ε, and the
    relative improvement of ``ours`` over ``base`` as the last row."""
    rows = []
    for m in methods:
        row = {"method": train.LABELS.get(m, m)}
        for e in epsilons:
            sub = df[(df.method == m) & (df.epsilon == e)]
            for k in ("ndcg@10", "hit@10"):
                v = sub[k].to_numpy(float)
                std = v.std(ddof=1) if len(v) > 1 else 0.0
                row[f"ε={e:g} {k.upper()}"] = train.fmt_pm(v.mean(), std) if len(v) else "–"
        rows.append(row)
    rel = {"method": "Relative improvement"}
    for e in epsilons:
        for k in ("ndcg@10", "hit@10"):
            a = df[(df.method == ours) & (df.epsilon == e)][k].mean()
            b = df[(df.method == base) & (df.epsilon == e)][k].mean()
            rel[f"ε={e:g} {k.upper()}"] = f"{100 * (a / b - 1):+.0f}%" if b > 0 else "–"
    rows.append(rel)
    return pd.DataFrame(rows)


def eps_key(e) -> str:
    """'e5' for ε = 5: recorded keys must be identifiers (the claims read them as attributes)."""
    return f"e{e:g}".replace(".", "_")


def means(df: pd.DataFrame) -> dict:
    """{method: {'e5': {ndcg, hit, ndcg_std, hit_std, n}}} for recording."""
    out: dict = {}
    for (m, e), g in df.groupby(["method", "epsilon"]):
        out.setdefault(m, {})[eps_key(e)] = {
            "ndcg": float(g["ndcg@10"].mean()), "hit": float(g["hit@10"].mean()),
            "ndcg_std": float(g["ndcg@10"].std(ddof=1)) if len(g) > 1 else 0.0,
            "hit_std": float(g["hit@10"].std(ddof=1)) if len(g) > 1 else 0.0, "n": int(len(g))}
    return out


def curves(results: list[dict]) -> pd.DataFrame:
    """Long table of the test metrics logged during training (Figure 6)."""
    rows = []
    for r in results:
        s = r["spec"]
        for c in r["curve"]:
            rows.append({"method": s["method"], "label": train.LABELS[s["method"]], "epsilon": s["epsilon"],
                         "seed": s["seed"], "epoch": c["epoch"], "ndcg@10": c["ndcg@10"], "hit@10": c["hit@10"]})
    return pd.DataFrame(rows)


def seed_spread(cv: pd.DataFrame, key: str = "ndcg@10") -> pd.DataFrame:
    """Per (method, ε): the std across seeds at each logged epoch, averaged over epochs (Figure 6's
    'variance'), and the mean absolute epoch-to-epoch change of the seed-mean curve ('fluctuation')."""
    rows = []
    for (m, e), g in cv.groupby(["method", "epsilon"]):
        per_epoch = g.groupby("epoch")[key]
        mean_curve = per_epoch.mean().sort_index().to_numpy()
        rows.append({"method": m, "epsilon": e, "seeds": g.seed.nunique(),
                     "std_across_seeds": float(per_epoch.std(ddof=1).mean()) if g.seed.nunique() > 1 else 0.0,
                     "fluctuation": float(np.abs(np.diff(mean_curve)).mean()) if len(mean_curve) > 1 else 0.0})
    return pd.DataFrame(rows)


def comparisons(df: pd.DataFrame, epsilons) -> dict:
    """The orderings the paper's tables claim, per ε (lists in the order of ``epsilons``)."""
    m = df.groupby(["method", "epsilon"])["ndcg@10"].mean()

    def get(method, e):
        return float(m.get((method, e), np.nan))

    out = {
        "dpformer_ge_vanilla": [get("dpformer", e) >= get("transformer", e) for e in epsilons],
        "vanilla_gt_untied": [get("transformer", e) > get("transformer_untied", e) for e in epsilons],
        "vanilla_gt_rnns": [get("transformer", e) > max(get("gru", e), get("lstm", e)) for e in epsilons],
        "rel_improvement": [get("dpformer", e) / get("transformer", e) - 1 for e in epsilons],
        "ndcg_by_method": {mm: [get(mm, e) for e in epsilons] for mm in df.method.unique()},
    }
    return out


def paper_reference(table: str) -> pd.DataFrame:
    """The paper's Table 1 or 2 (``table1`` / ``table2``) from the cited CSV, in paper_table's layout."""
    from privtrans.book.paths import data_dir

    ref = pd.read_csv(data_dir("dpformer") / "paper_tables.csv")
    ref = ref[ref.table == table]
    if ref.empty:
        raise ValueError(f"no rows for {table!r} in data/dpformer/paper_tables.csv")
    rows = []
    for method, g in ref.groupby("method", sort=False):
        row = {"method": method}
        for _, r in g.iterrows():
            row[f"ε={r.epsilon:g} NDCG@10"] = f"{r.ndcg10_pct:.2f} ± {r.ndcg10_std:.2f}"
            row[f"ε={r.epsilon:g} HIT@10"] = f"{r.hit10_pct:.2f} ± {r.hit10_std:.2f}"
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["source"] = str(ref.source.iloc[0])
    return out
