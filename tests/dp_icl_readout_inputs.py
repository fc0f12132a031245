"""Hand-made inputs for the tests of privtrans.dp_icl.readouts (no training), shared by its test files."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from privtrans.book import claims
from privtrans.book.session import _jsonable
from privtrans.dp_icl import experiments
from privtrans.dp_icl.readouts import dp_sgd, early_stopping, excess_risk, news_text, repetitions, ridge, robustness, theorem51


NS = [1000, 2000, 4000]


EPS = [0.2, 0.4, 0.6, 0.8]


JUDGED_NOT_HELD = ("inconclusive", "contradicted")


# ------------------------------------------------------------------------------------ fixtures
def summary(method: str, cells: dict, **extra) -> pd.DataFrame:
    """A ``summarise`` frame: {(N, eps): mean} -> one row per cell (sd, n, se filled in)."""
    return pd.DataFrame([dict(method=method, N=N, eps=e, mean=m, sd=0.1 * m, n=10, se=0.1 * m / math.sqrt(10),
                              **extra) for (N, e), m in cells.items()])


def pattern(reps: int) -> np.ndarray:
    """A fixed zero-mean pattern over the repetitions, in [-1, 1]: a repetition's luck, shared by
    every setting of it (common random numbers), so that every mean is exactly what a test asks."""
    return np.linspace(-1, 1, reps) if reps > 1 else np.zeros(1)


def grid_runs(method: str, f, Ns=NS, eps=EPS, reps=8, spread=0.1, noise=0.0, seed=0, **extra) -> pd.DataFrame:
    """One row per repetition and (N, eps): f(N, eps) (1 + spread w_r) (1 + noise z), with w_r of
    ``pattern`` shared by every cell of repetition r and z an independent normal draw per run."""
    rng = np.random.default_rng(seed)
    w = pattern(reps)
    return pd.DataFrame([dict(method=method, N=N, eps=e, rep=r, **extra,
                              excess=f(N, e) * (1 + spread * w[r]) * (1 + noise * rng.standard_normal()))
                         for N in Ns for e in eps for r in range(reps)])


def power_law(N, e, a=-1.0, b=-2.0, c=1.0):
    """c N^a eps^b: falls with N and with eps, with known log-log slopes."""
    return c * (N / 1000) ** a * e ** b


def grid(f, Ns=NS, eps=EPS):
    return {(N, e): f(N, e) for N in Ns for e in eps}


def gd_runs(Ns=NS, reps=8, **extra) -> pd.DataFrame:
    return pd.DataFrame([dict(method=experiments.GD, N=N, eps=np.nan, rep=r, excess=1e-6, **extra)
                         for N in Ns for r in range(reps)])


def fig1_runs(f=power_law, drop=(), **kw) -> pd.DataFrame:
    runs = grid_runs(experiments.noisyhead(), f, **kw)
    runs = runs[[(N, e) not in drop for N, e in zip(runs.N, runs.eps)]]
    return pd.concat([runs, gd_runs(reps=kw.get("reps", 8))], ignore_index=True)


def authors(figure: str, cells: dict, quantity: str = "dp_excess", **extra) -> pd.DataFrame:
    """A ``paper_values`` frame; the CSV reads N as float, as the real one does."""
    cols = ["figure", "quantity", "N", "eps", *extra, "value"]
    return pd.DataFrame([dict(figure=figure, quantity=quantity, N=float(N), eps=e, value=v, **extra)
                         for (N, e), v in cells.items()], columns=cols)


def elsewhere(figure: str, **extra) -> pd.DataFrame:
    """Authors' values at a setting no fixture runs: nothing to match."""
    return authors(figure, {(9000, 0.3): 1.0}, **extra)


def verdicts(values: dict[str, dict], profile: str = "ci") -> dict[str, dict]:
    """{claim id: summary row} of data/dp_icl/claims.yaml, from values as the session records them."""
    doc = claims.load("dp_icl")
    results = {nb: {"profile": profile, "values": _jsonable(v)} for nb, v in values.items()}
    return {r["id"]: r for r in claims.evaluate("dp_icl", doc, results, profile)}


def verdict(values: dict[str, dict], cid: str) -> str:
    return verdicts(values)[cid]["verdict"]


def judged_not_held(row: dict) -> bool:
    """A null input must be judged and not held: 'not judged' would be a test that never ran."""
    return row["verdict"] in JUDGED_NOT_HELD


# ------------------------------------------------------------------------------------ Figure 1
FIG1_INTERVALS = ("fig1_falls_with_n", "fig1_falls_between_consecutive_n", "fig1_rises_as_eps_falls")


# ------------------------------------------------------------------------------------ Figure 2
def fig2_runs(f_paper=power_law, f_code=lambda N, e: power_law(N, e, a=+1.0), noise=0.0, seed=0):
    gd = pd.DataFrame([dict(method=experiments.GD, delta=np.nan, N=N, eps=np.nan, rep=r, excess=power_law(N, 0.8))
                       for N in NS for r in range(8)])
    return pd.concat([grid_runs(experiments.noisyhead(), f_paper, delta=1e-5, noise=noise, seed=seed),
                      grid_runs(experiments.noisyhead(), f_code, delta=1e-2, noise=noise, seed=seed + 1), gd],
                     ignore_index=True)


# ------------------------------------------------------------------------------------ Figures 3 and 6
TS = [1, 50, 100, 200]


U = {1: 8.0, 50: 1.0, 100: 2.0, 200: 4.0}       # minimum at T = 50, 4x higher at the end


def t_runs(curves: dict, Ts=TS, reps=10, spread=0.2, noise=0.0, seed=0) -> pd.DataFrame:
    """One row per repetition and T: each column ``curves[col](T)`` times a repetition's luck shared
    by every T (``pattern``, so the log differences between T are exact) and, with ``noise``, an
    independent log-normal factor per value."""
    rng = np.random.default_rng(seed)
    w = pattern(reps)
    return pd.DataFrame([dict(rep=r, T=t, **{c: f(t) * (1 + spread * w[r]) * math.exp(noise * rng.standard_normal())
                                             for c, f in curves.items()})
                         for r in range(reps) for t in Ts])


def fig3(descent=lambda t: 1 / t, privacy=U.get, **kw) -> dict:
    return early_stopping.fig3_early_stopping(t_runs({"descent": descent, "privacy": privacy}, **kw), TS)


def fig6(gd=lambda t: 1 / t, nh=U.get, gd_fixed=None, nh_fixed=None, **kw) -> dict:
    chosen = t_runs({"gd": gd, "noisyhead": nh}, **kw)
    fixed = t_runs({"gd": gd_fixed or gd, "noisyhead": nh_fixed or nh}, **kw)
    return news_text.fig6_news_text(chosen, fixed, TS, n_articles=800)


def _u_legs_held(runs: pd.DataFrame, split: bool) -> tuple[bool, bool]:
    """Whether each leg of the U clears zero at its one-sided 2.5 %: T* chosen on the other half
    (``split``, the readout) or, as the readout once did, on the very repetitions it tests."""
    if split:
        cells = early_stopping.u_shape_cells(runs, "privacy", TS13, "cost")["cells"]
        return tuple(c["lo"] > 0 for c in cells.values())
    wide = np.log(runs.pivot(index="rep", columns="T", values="privacy"))
    t_star = wide[TS13[1:-1]].mean().idxmin()
    legs = [repetitions.paired(list(wide[t]), list(wide[t_star])) for t in (TS13[0], TS13[-1])]
    return tuple(c["lo"] > 0 for c in legs)


TS13 = [1, 40, 80, 120, 160, 200, 240, 280, 320, 360, 400, 440, 480]


# ------------------------------------------------------------------------------------ Figure 4
CS, PS = [2, 4], [2.0, 2.05, 2.1]


def fig4_runs(ridge=lambda c, p: c * (p - 1.6), dp=lambda c, p: 0.01, direct=None, crn=lambda c, p: 1e-9,
              reps=6, jitter=1e-3, noise=0.0, seed=0) -> pd.DataFrame:
    """``robustness_grid``-like runs: each quantity f(c, p) plus a per-repetition offset shared by
    every quantity and setting of that repetition (``jitter``, mean zero over the repetitions, so the
    means are exactly f) and, with ``noise``, independent noise per value (sd ``noise`` times f)."""
    direct = direct or ridge
    f = {"ridge": ridge, "ridge_direct": direct, "dp": dp, "dp_crn": crn}
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(reps):
        off = jitter * (r - (reps - 1) / 2)
        for c in CS:
            for p in PS:
                rows.append(dict(rep=r, c=c, p=p, **{q: g(c, p) * (1 + noise * rng.standard_normal()) + off * g(c, p)
                                                     for q, g in f.items()}))
    return pd.DataFrame(rows)


def fig4_out(runs: pd.DataFrame) -> dict:
    return robustness.fig4_robustness(experiments.robustness_summary(runs), CS, PS, runs)


# ------------------------------------------------------------------------------------ Figure 4, theorem region
ALPHAS = (10, 40, 80, 160)


def theorem_runs(ridge_at, dp=1e-8, reps=4, jitter=1e-6, noise=0.0, seed=0, alphas=ALPHAS):
    """One row per (rep, alpha): ridge risk ridge_at(alpha) + a per-rep offset shared by every alpha
    (and, with ``noise``, independent noise per value)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame([dict(rep=r, alpha=a, ridge=ridge_at(a) * (1 + noise * rng.standard_normal()) + jitter * r,
                              dp_crn=dp * (1 + noise * rng.standard_normal()) + 1e-10 * r, dp=0.01)
                         for r in range(reps) for a in alphas])


def fig4_base():
    return fig4_out(fig4_runs())


def theorem_values(df, alphas=ALPHAS):
    from privtrans.dp_icl import constants

    hp = constants.robustness(5000, 500, 5, 0.1)
    paper = constants.robustness(5000, 500, 5, 0.01)
    return theorem51.fig4_theorem_region(df, list(alphas), hp, paper, 2 * 5000.0**2, 1.0)


# ------------------------------------------------------------------------------------ Figure 5
def fig5_inputs(sgd_factor=0.5, spent=(0.95, 0.9), Ns=(1000, 2000), eps=(0.2, 1.0)):
    """Every method's excess risk per (N, eps), and opacus' reported eps as fractions ``spent`` of each target."""
    Ns, eps = list(Ns), list(eps)
    base = lambda N, e: power_law(N, e)  # noqa: E731
    parts = [summary(experiments.noisyhead(), grid(base, Ns, eps)),
             summary(experiments.noisyhead("prv"), grid(lambda N, e: 0.1 * base(N, e), Ns, eps)),
             summary(experiments.DPSGD_ADD_REMOVE, grid(lambda N, e: 0.5 * sgd_factor * base(N, e), Ns, eps)),
             summary(experiments.DPSGD_REPLACE_ONE, grid(lambda N, e: sgd_factor * base(N, e), Ns, eps))]
    spent_df = pd.DataFrame([dict(N=N, eps=e, method=m, eps_spent=f * e) for N in Ns for e, f in zip(eps, spent)
                             for m in (experiments.DPSGD_ADD_REMOVE, experiments.DPSGD_REPLACE_ONE)])
    return pd.concat(parts, ignore_index=True), spent_df, Ns, eps


def bracket_runs(factor, basic=1.0, reps=5, jitter=0.02, Ns=(1000, 2000), eps=(0.2, 1.0), noise=0.0, seed=0):
    """Raw runs: tight NoisyHead at 1.0 (times a per-rep wobble shared by every method), the paper's
    NoisyHead at ``basic`` times it, each bracket corner at ``factor[corner]`` times it; ``jitter``
    also varies the ratio from rep to rep, ``noise`` adds independent log-normal noise per run."""
    rng = np.random.default_rng(seed)
    e_ = lambda: float(np.exp(noise * rng.standard_normal()))  # noqa: E731
    rows = []
    for N in Ns:
        for e in eps:
            for r in range(reps):
                wob = 1 + 0.3 * r
                rows.append(dict(method=experiments.noisyhead("prv"), N=N, eps=e, rep=r, excess=wob * e_()))
                rows.append(dict(method=experiments.noisyhead(), N=N, eps=e, rep=r, excess=wob * basic * e_()))
                for c in experiments.BRACKET:
                    rows.append(dict(method=c, N=N, eps=e, rep=r,
                                     excess=wob * factor.get(c, 1.0) * (1 + jitter * (-1) ** r) * e_()))
    return pd.DataFrame(rows)


def fig5_base():
    s5, spent, N5, e5 = fig5_inputs()
    return dp_sgd.fig5_dp_sgd(s5, spent, N5, e5, "prv")


def bracket_rows(out):
    rows = verdicts({"fig5_dp_sgd": {**fig5_base(), **out}})
    return rows["fig5_tight_on_par_with_dpsgd"], rows["fig5_parity_with_dpsgd"]


# ------------------------------------------------------------------------------------ Table 1
T1_NS, T1_EPS = [2000, 3000], [0.2, 0.4]


def table1_runs(gap=1e4, nh=power_law, reps=8, noise=0.0, seed=0):
    """NoisyHead at nh(N, eps) and DP-ridge ``gap`` times lower, per repetition; DP-ridge's luck
    runs the other way from NoisyHead's, so the per-repetition gap varies around ``gap``."""
    rng = np.random.default_rng(seed)
    w = pattern(reps)
    rows = []
    for N in T1_NS:
        for e in T1_EPS:
            for r in range(reps):
                z = math.exp(noise * rng.standard_normal())
                rows.append(dict(method=experiments.noisyhead(), N=N, eps=e, rep=r, excess=nh(N, e) * (1 + 0.1 * w[r]) * z))
                rows.append(dict(method=experiments.DP_RIDGE, N=N, eps=e, rep=r, excess=nh(N, e) / gap * (1 - 0.1 * w[r])))
    return pd.DataFrame(rows)


def table1_paper(nh_over_paper=1.5, dr_over_paper=1 / 3, gap=1e4):
    """The paper has N = 2000 and 4000: only N = 2000 is shared with our grid."""
    cells = [(2000, 0.2), (2000, 0.4), (4000, 0.2), (4000, 0.4)]
    return pd.concat([authors("table1", {k: power_law(*k) / nh_over_paper for k in cells}, "noisyhead_excess"),
                      authors("table1", {k: power_law(*k) / gap / dr_over_paper for k in cells}, "dp_ridge_excess")])


# ------------------------------------------------------------------------------------ accountants
def eps_table(basic=1.0, tight=(0.05, 0.06, 0.08, 0.079), Ns=(1000,), eps=(0.2, 1.0), override=None):
    """Like ``epsilon_table``: the tight accountants' eps as fractions of the target (zcdp, rdp, prv,
    exact); ``override``: {(N, eps): {column: value}} for single cells."""
    rows = []
    for N in Ns:
        for e in eps:
            row = dict(N=N, T=40, eps_target=e, z_paper=1000.0 / e, eps_basic=basic * e)
            for a, f in zip(("zcdp", "rdp", "prv", "exact"), tight):
                row[f"eps_{a}"] = f * e
                row[f"z_{a}"] = 100.0 / e
            row["z_basic"] = row["z_paper"]
            row.update((override or {}).get((N, e), {}))
            rows.append(row)
    return pd.DataFrame(rows)


def acc_summary(gain=50.0, Ns=(1000,), eps=(0.2, 1.0)):
    base = grid(power_law, list(Ns), list(eps))
    return pd.concat([summary(experiments.noisyhead(), base),
                      summary(experiments.noisyhead("prv"), {k: v / gain for k, v in base.items()})], ignore_index=True)


# ------------------------------------------------------------------------------------ the claims file
def all_values() -> dict:
    s5, spent, N5, e5 = fig5_inputs()
    return {
        "fig1_low_dim": excess_risk.fig1_low_dim(fig1_runs(), authors("fig1", grid(power_law)), NS, EPS),
        "fig2_high_dim": excess_risk.fig2_high_dim(fig2_runs(), elsewhere("fig2", delta=1e-2), NS, EPS, 1e-5),
        "fig3_early_stopping": fig3(),
        "fig4_robustness": {**fig4_base(), **theorem_values(theorem_runs(lambda a: 1e-4 * (1 + a / 100)))},
        "fig5_dp_sgd": {**dp_sgd.fig5_dp_sgd(s5, spent, N5, e5, "prv"),
                        **dp_sgd.fig5_bracket(bracket_runs({}), "prv", [1000, 2000], [0.2, 1.0])},
        "fig6_news_text": fig6(),
        "table1_dp_ridge": ridge.table1_dp_ridge(table1_runs(), table1_paper(), T1_NS, T1_EPS, 1e-5),
        "accountants": ridge.accountants(eps_table(), acc_summary(), [1000], [0.2, 1.0], "prv"),
    }
