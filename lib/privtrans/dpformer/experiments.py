"""What the DPFormer result notebooks share: datasets by name, runs and grids through the cache, tables.

The notebooks stay thin: they pick a dataset and a grid from their settings, call these helpers,
plot and record (through :mod:`privtrans.dpformer.readouts`). Everything trained goes through
:func:`privtrans.dpformer.runs.cached_run`.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from privtrans.book.paired import seeds as paired_seeds
from privtrans.book.runcache import RunCache

from . import data as rdata
from . import metrics, premise, runs, synthetic, train

# Figure 2's arms: the tied Transformer against the two untied ones
TIED = "transformer"
UNTIED_ARMS = ("transformer_untied", "transformer_untied_half")
# Figure 6's pair: the vanilla Transformer and DPFormer
STABILITY_PAIR = ("transformer", "dpformer")
# the columns a notebook shows of its runs
RUN_COLUMNS = ["label", "epsilon", "seed", "batch_size", "lr", "ndcg@10", "hit@10", "test_ce", "privacy", "seconds"]


@dataclass
class Bundle:
    """A dataset ready for training: sequences, the leave-one-out split, the true model if synthetic."""

    data: rdata.SeqData
    split: rdata.Split
    truth: synthetic.SessionModel | premise.TriggerModel | None = None

    @property
    def name(self) -> str:
        return self.data.name


def load(cfg: dict) -> Bundle:
    """``cfg["dataset"]`` is ``movielens``, ``amazon_like`` or ``premise`` (generator arguments in
    ``cfg["generator"]``)."""
    name = cfg.get("dataset")
    if name == "movielens":
        ds, truth = rdata.load_movielens(k=cfg.get("k_core", 5)), None
    elif name == "amazon_like":
        ds, truth = synthetic.amazon_like(**(cfg.get("generator") or {}))
    elif name == "premise":
        ds, truth = premise.popular_trigger(**(cfg.get("generator") or {}))
    else:
        raise ValueError(f"dataset must be 'movielens', 'amazon_like' or 'premise', got {name!r}")
    return Bundle(ds, rdata.leave_one_out(ds, cfg["max_len"]), truth)


def dataset_stats(b: Bundle) -> pd.DataFrame:
    """The long-tail statistics of a loaded dataset, as one row (Figure 5's table)."""
    return pd.DataFrame([rdata.long_tail_stats(b.data)])


def reference_rows(b: Bundle, max_len: int) -> list[dict]:
    """Non-trained anchors: MostPopular (non-private, for scale) and, for synthetic data, the oracle;
    with their test cross-entropy (MostPopular: add-one smoothed training frequencies)."""
    n, y = len(b.split.test_target), b.split.test_target
    rows = []
    counts = metrics.most_popular_scores(b.split.train, b.split.n_items, n)
    mp = metrics.ndcg_hit(metrics.target_rank(counts, y))
    smoothed = counts + 1.0
    smoothed[:, 0] = 0
    rows.append({"method": "most_popular", "label": "MostPopular (non-private)", **mp,
                 "ce": metrics.probability_cross_entropy(smoothed, y)})
    if b.truth is not None:
        oracle = premise.oracle_scores if isinstance(b.truth, premise.TriggerModel) else synthetic.oracle_scores
        probs = oracle(b.truth, b.split.test_input[:, -max_len:])
        orc = metrics.ndcg_hit(metrics.target_rank(probs, y))
        rows.append({"method": "oracle", "label": "Oracle (true generator)", **orc,
                     "ce": metrics.probability_cross_entropy(probs, y)})
    return rows


def run_grid(cache: RunCache, b: Bundle, cfg: dict, methods, epsilons, seeds, log=None,
             **overrides) -> list[dict]:
    """Every (method, ε, seed) run with the notebook's settings (plus ``overrides``), via the cache.

    The runs the cache lacks are trained first on every core (:func:`privtrans.dpformer.runs.train_missing`)."""
    fp = b.data.fingerprint()
    seeds = list(seeds)
    # One process per run, not the seeds of one (method, ε) as one vectorised model: that was exact
    # but slower on the book's CPU (one torch thread, 5 seeds, ci sizes): DP-SGD 6.8x one seed
    # (premise, B = 500) and 13.5-15x (Table 1, B = 256), above even the 4.7-5.4x of one model on
    # the data repeated 5 times, as vmap's per-sample gradients hold k·B·|θ| numbers where Phantom
    # Clipping holds none (`git log -S train_together` finds that trainer).
    runs.train_missing(cache, [train.spec_from_cfg(cfg, method, eps, seed, **overrides)
                               for eps in epsilons for method in methods for seed in seeds], b.split, fp)
    return [r for eps in epsilons for method in methods
            for r in runs.cached_runs(cache, train.spec_from_cfg(cfg, method, eps, seeds[0] if seeds else 0,
                                                                 **overrides), seeds, b.split, fp, log=log)]


@dataclass
class TableRuns:
    """Every method × ε × seed of a result table (Tables 1, 2), with what the notebooks show of it."""

    results: list[dict]
    runs: pd.DataFrame            # one row per run (:func:`frame`)
    curves: pd.DataFrame          # test metrics during training (:func:`curves`)
    refs: pd.DataFrame            # non-trained anchors (:func:`reference_rows`)
    report: str                   # how many runs were trained here and how many came from the cache
    methods: list = field(default_factory=list)
    epsilons: list = field(default_factory=list)

    def shown(self) -> pd.DataFrame:
        return self.runs[[c for c in RUN_COLUMNS if c not in ("batch_size", "lr")]]

    def paper_layout(self) -> pd.DataFrame:
        return paper_table(self.runs, self.methods, self.epsilons)

    def spread(self) -> pd.DataFrame:
        """Figure 6's seed spread of the vanilla Transformer and DPFormer."""
        sp = seed_spread(self.curves)
        return sp[sp.method.isin(STABILITY_PAIR)].reset_index(drop=True)


def train_table(b: Bundle, cfg: dict, seed: int, cache: RunCache | None = None, log=None) -> TableRuns:
    """Tables 1/2: ``cfg["methods"]`` × ``cfg["epsilons"]`` × the ``cfg["seeds"]`` paired seeds from ``seed``."""
    cache = runs.run_cache() if cache is None else cache
    seeds = paired_seeds(seed, cfg["seeds"])
    results, report = _counted(cache, lambda: run_grid(cache, b, cfg, cfg["methods"], cfg["epsilons"], seeds,
                                                       log=log))
    return TableRuns(results, frame(results), curves(results), pd.DataFrame(reference_rows(b, cfg["max_len"])),
                     report, list(cfg["methods"]), list(cfg["epsilons"]))


def _counted(cache: RunCache, make):
    """(make(), 'N runs: t trained, h from the cache'), counting only the runs ``make`` asked for."""
    misses, hits = cache.misses, cache.hits
    results = make()
    return results, runs.report(len(results), cache.misses - misses, cache.hits - hits)


@dataclass
class GridRuns:
    """A batch size × learning rate grid at one ε and seed (Figures 2, 7)."""

    results: list[dict]
    runs: pd.DataFrame
    dropped_batch_sizes: list     # batch sizes above the number of users, not run
    report: str

    def shown(self) -> pd.DataFrame:
        return self.runs[[c for c in RUN_COLUMNS if c not in ("epsilon", "seed")]]


def train_grid(b: Bundle, cfg: dict, methods, epsilon, seed: int, batch_sizes, lrs, cache: RunCache | None = None,
               log=None, seeds: int = 1) -> GridRuns:
    """Every (B, lr) cell for ``methods`` at the ``seeds`` paired seeds from ``seed``; batch sizes above
    the number of users N are dropped (the paper's grid reaches 4096 on ML-1M's 6,040 users)."""
    cache = runs.run_cache() if cache is None else cache
    kept = [B for B in batch_sizes if B <= b.data.n_users]
    results, report = _counted(cache, lambda: [
        r for B in kept for lr in lrs
        for r in run_grid(cache, b, cfg, methods, [epsilon], paired_seeds(seed, seeds), log=log, batch_size=B,
                          lr=lr)])
    dropped = [B for B in batch_sizes if B not in kept]
    if dropped:
        report += f"; batch sizes above N = {b.data.n_users} users not run: {dropped}"
    return GridRuns(results, frame(results), dropped, report)


def train_diagonal_grid(b: Bundle, cfg: dict, methods, epsilon, seed: int, batch_sizes, lrs, diag_seeds,
                        off_seeds, cache: RunCache | None = None, log=None) -> GridRuns:
    """A B × lr grid with more seeds on its main diagonal (k-th smallest B with k-th smallest lr),
    where Figure 7's claim is judged on paired seeds, than off it (shown only); ``diag_seeds`` and
    ``off_seeds`` are numbers of paired seeds from ``seed``."""
    cache = runs.run_cache() if cache is None else cache
    kept = [B for B in sorted(batch_sizes) if B <= b.data.n_users]
    diag = set(zip(kept, sorted(lrs)))
    results, report = _counted(cache, lambda: [
        r for B in kept for lr in sorted(lrs)
        for r in run_grid(cache, b, cfg, methods, [epsilon],
                          paired_seeds(seed, diag_seeds if (B, lr) in diag else off_seeds),
                          log=log, batch_size=B, lr=lr)])
    dropped = [B for B in batch_sizes if B not in kept]
    if dropped:
        report += f"; batch sizes above N = {b.data.n_users} users not run: {dropped}"
    return GridRuns(results, frame(results), dropped, report)


def premise_attention(b: Bundle, results: list[dict], n_users: int) -> pd.DataFrame:
    """One row per trained model of the premise setting: where its last query row attends on the
    first ``n_users`` test histories (tail items, the trigger, and the tail share uniform attention
    would give; ``premise.attention_mass``). The DPFormer models are read twice: with Re-Attention
    on, as they are evaluated (``*_attention``), and with it off (``*_attention_no_offset``): its
    correction lowers rare items' scores by its formula, so what training with it did to the
    attention shows only with it off. For the other models both readings are the same."""
    import torch

    from . import reattention

    if not isinstance(b.truth, premise.TriggerModel):
        raise ValueError("premise_attention needs the premise data set (its true model names the tail)")
    freq = reattention.item_frequencies(torch.as_tensor(b.split.train), b.split.n_items)
    rows = []
    for r in results:
        spec = train.RunSpec(**r["spec"])
        model = train.load_model(r, b.split.n_items)
        hist = b.split.test_input[:n_users, -spec.max_len:]
        raw = reattention.attention_maps(model, torch.as_tensor(hist))[-1][:, -1].numpy()
        last = raw
        if spec.method == "dpformer" and r.get("privacy"):
            reattention.enable(model, sigma_dp=r["privacy"]["noise_multiplier"], batch_size=spec.batch_size,
                               item_freq=freq)
            last = reattention.attention_maps(model, torch.as_tensor(hist))[-1][:, -1].numpy()
        mass, mass_raw = premise.attention_mass(last, hist, b.truth), premise.attention_mass(raw, hist, b.truth)
        rows.append({"method": spec.method if spec.epsilon is not None else "non-private",
                     "epsilon": spec.epsilon, "seed": spec.seed,
                     "tail_attention": mass["tail"], "trigger_attention": mass["trigger"],
                     "tail_attention_no_offset": mass_raw["tail"], "trigger_attention_no_offset": mass_raw["trigger"],
                     "tail_uniform": mass["tail_uniform"]})
    return pd.DataFrame(rows)


@contextmanager
def corrections_off(models):
    """Within the block, ``models`` run without their logit correction (Re-Attention); each is put
    back after. Here and not in ``reattention``: that module is part of the code that keys every
    cached training run (``runs.TRAINING_MODULES``), and reading a model changes no training."""
    saved = [(layer, layer.logit_correction) for m in models for layer in m.attention_layers()]
    try:
        for layer, _ in saved:
            layer.logit_correction = None
        yield
    finally:
        for layer, fn in saved:
            layer.logit_correction = fn


def attention_shift_table(models: dict, seqs, item_freq, no_offset=("dpformer",),
                          reference: str = "non-private") -> pd.DataFrame:
    """``reattention.attention_shift_table`` of every model (DPFormer read as it is evaluated, its
    Re-Attention on), plus the models of the methods in ``no_offset`` read again with their correction
    off, as method "<method>_no_offset": the correction divides rare (high-variance) keys' scores by
    exp(Cσ²/2), so what training with Re-Attention did to the attention shows only without it."""
    from . import reattention

    table = reattention.attention_shift_table(models, seqs, item_freq, reference=reference)
    raw = {k: m for k, m in models.items() if k[0] in no_offset or k[0] == reference}
    if not any(k[0] in no_offset for k in raw):
        return table
    with corrections_off([m for k, m in raw.items() if k[0] in no_offset]):
        again = reattention.attention_shift_table(raw, seqs, item_freq, reference=reference)
    again = again[again.method.isin(no_offset)].assign(method=lambda d: d.method + "_no_offset")
    return pd.concat([table, again], ignore_index=True)


def sharing_table(grid: pd.DataFrame) -> pd.DataFrame:
    """Figure 2 per (B, lr) cell: NDCG@10 of each arm and whether the tie beats both untied arms.

    A cell without a run of every arm is an error, not a loss."""
    wide = _cells(grid, (TIED, *UNTIED_ARMS))
    best_untied = wide[list(UNTIED_ARMS)].max(axis=1)
    wide["sharing_wins"] = wide[TIED] > best_untied
    wide["gain"] = wide[TIED] - best_untied
    return wide


def grid_differences(grid: pd.DataFrame, ours: str = "dpformer", base: str = "transformer") -> pd.DataFrame:
    """Figure 7 per (B, lr) cell: NDCG@10 of ``ours`` − ``base``, and whether the cell is on the
    grid's main diagonal (the k-th smallest B with the k-th smallest lr: larger B with larger lr)."""
    wide = _cells(grid, (ours, base))
    bs, lrs = sorted(grid.batch_size.unique()), sorted(grid.lr.unique())
    diag = set(zip(bs, lrs))
    out = pd.DataFrame({"batch_size": [i[0] for i in wide.index], "lr": [i[1] for i in wide.index],
                        "diff": (wide[ours] - wide[base]).to_numpy()})
    out["on_diagonal"] = [(B, lr) in diag for B, lr in zip(out.batch_size, out.lr)]
    return out


def _cells(grid: pd.DataFrame, methods) -> pd.DataFrame:
    """(B, lr) × method table of mean NDCG@10; raises if a method lacks a run in some cell."""
    absent = [m for m in methods if m not in set(grid.method)]
    if absent:
        raise ValueError(f"the grid has no runs of {absent} (methods present: {sorted(set(grid.method))})")
    wide = grid.pivot_table(index=["batch_size", "lr"], columns="method", values="ndcg@10")[list(methods)]
    holes = wide[wide.isna().any(axis=1)]
    if len(holes):
        raise ValueError(f"grid cells without a run of every method {list(methods)}: {list(holes.index)}")
    return wide


def frame(results: list[dict]) -> pd.DataFrame:
    """One row per run: method, ε, seed, B, lr, NDCG@10, HIT@10, the privacy budget, time, cache hit."""
    rows = []
    for r in results:
        spec, p = train.RunSpec(**r["spec"]), r.get("privacy") or {}
        rows.append({
            "method": spec.method, "label": train.LABELS[spec.method], "epsilon": spec.epsilon,
            "seed": spec.seed, "batch_size": spec.batch_size, "lr": spec.lr, "d": spec.d,
            "ndcg@10": r["ndcg@10"], "hit@10": r["hit@10"], "test_ce": r.get("test_ce"),
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
                std = v.std(ddof=1) if len(v) > 1 else float("nan")
                row[f"ε={e:g} {k.upper()}"] = train.fmt_pm(v.mean(), std) if len(v) else "–"
        rows.append(row)
    rel = {"method": "Relative improvement"}
    for e in epsilons:
        for k in ("ndcg@10", "hit@10"):
            a = df[(df.method == ours) & (df.epsilon == e)][k].mean()
            b = df[(df.method == base) & (df.epsilon == e)][k].mean()
            rel[f"ε={e:g} {k.upper()}"] = f"{100 * (a / b - 1):+.0f}%" if b > 0 and a == a else "–"
    rows.append(rel)
    return pd.DataFrame(rows)


def eps_key(e) -> str:
    """'e5' for ε = 5: recorded keys must be identifiers (the claims read them as attributes)."""
    return f"e{e:g}".replace(".", "_")


def means(df: pd.DataFrame) -> dict:
    """{method: {'e5': {ndcg, hit, ndcg_std, hit_std, n}}}; a std of one seed is None, not 0."""
    out: dict = {}
    for (m, e), g in df.groupby(["method", "epsilon"]):
        out.setdefault(m, {})[eps_key(e)] = {
            "ndcg": float(g["ndcg@10"].mean()), "hit": float(g["hit@10"].mean()),
            "ndcg_std": float(g["ndcg@10"].std(ddof=1)) if len(g) > 1 else None,
            "hit_std": float(g["hit@10"].std(ddof=1)) if len(g) > 1 else None, "n": int(len(g))}
    return out


def curves(results: list[dict]) -> pd.DataFrame:
    """Long table of the test metrics logged during training (Figure 6)."""
    rows = []
    for r in results:
        spec = train.RunSpec(**r["spec"])
        for c in r["curve"]:
            rows.append({"method": spec.method, "label": train.LABELS[spec.method], "epsilon": spec.epsilon,
                         "seed": spec.seed, "epoch": c["epoch"], "ndcg@10": c["ndcg@10"], "hit@10": c["hit@10"],
                         "ce": c.get("ce")})
    return pd.DataFrame(rows)


def seed_spread(cv: pd.DataFrame, key: str = "ndcg@10") -> pd.DataFrame:
    """Per (method, ε): the std across seeds at each logged epoch, averaged over epochs (Figure 6's
    'variance'), and the mean absolute epoch-to-epoch change of the seed-mean curve ('fluctuation').

    With one seed there is no spread: NaN, never 0 (a 0 would make "less spread" hold trivially)."""
    rows = []
    for (m, e), g in cv.groupby(["method", "epsilon"]):
        per_epoch = g.groupby("epoch")[key]
        mean_curve = per_epoch.mean().sort_index().to_numpy()
        rows.append({"method": m, "epsilon": e, "seeds": g.seed.nunique(),
                     "std_across_seeds": float(per_epoch.std(ddof=1).mean()) if g.seed.nunique() > 1 else np.nan,
                     "fluctuation": float(np.abs(np.diff(mean_curve)).mean()) if len(mean_curve) > 1 else np.nan})
    return pd.DataFrame(rows)


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


def paper_reference_shown(table: str):
    """:func:`paper_reference` for display, its source as the caption."""
    ref = paper_reference(table)
    return ref.style.hide(axis="index").set_caption(f"Source: {ref.attrs['source']}")


def trained_models(cache: RunCache, b: Bundle, cfg: dict, keys, seeds, item_freq) -> dict:
    """{(method, ε, seed): ``trained_model(...)``} for every (method, ε) of ``keys`` and every seed,
    the runs the cache lacks trained on every core first (``runs.train_missing``; at ci, Figure 9's
    non-private references, the rest being Table 1's runs)."""
    specs = [train.spec_from_cfg(cfg, _arch(m), e, s) for s in seeds for m, e in keys]
    runs.train_missing(cache, specs, b.split, b.data)
    return {(m, e, s): trained_model(cache, b, cfg, m, e, s, item_freq) for s in seeds for m, e in keys}


def _arch(method: str) -> str:
    return "transformer" if method == "non-private" else method


def trained_model(cache: RunCache, b: Bundle, cfg: dict, method: str, epsilon, seed: int, item_freq):
    """(result, model) of one run through the cache, the model rebuilt for inspection (Figure 9).

    A DPFormer model is returned with its Re-Attention on, as it is evaluated; ``method``
    "non-private" is the tied Transformer trained without DP."""
    from . import reattention

    arch = _arch(method)
    spec = train.spec_from_cfg(cfg, arch, epsilon, seed)
    res = runs.cached_run(cache, spec, b.split, b.data)
    model = train.load_model(res, b.split.n_items)
    if arch == "dpformer":
        reattention.enable(model, sigma_dp=res["privacy"]["noise_multiplier"], batch_size=spec.batch_size,
                           item_freq=item_freq)
    return res, model
