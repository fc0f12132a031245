"""privtrans.dp_icl.readouts.ridge on small hand-made inputs (no Monte Carlo): the recorded values and the
verdicts data/dp_icl/claims.yaml gives on them"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from privtrans.dp_icl import experiments
from privtrans.dp_icl.readouts import ridge

from dp_icl_readout_inputs import (
    T1_EPS,
    T1_NS,
    acc_summary,
    authors,
    eps_table,
    judged_not_held,
    table1_paper,
    table1_runs,
    verdict,
    verdicts,
)


def test_table1_values_by_hand():
    out = ridge.table1_dp_ridge(table1_runs(), table1_paper(), T1_NS, T1_EPS)
    assert out["min_log10_gap"] == pytest.approx(4.0)
    assert set(out["gap_cells"]) == {f"N={N} ε={e:g}" for N in T1_NS for e in T1_EPS}
    assert out["gap_cells"]["N=2000 ε=0.2"]["n"] == 8 and 3.99 < out["gap_cells"]["N=2000 ε=0.2"]["mean"] < 4.01
    assert out["noisyhead_ratio_to_paper"] == {"N=2000 ε=0.2": 1.5, "N=2000 ε=0.4": 1.5}
    assert out["dpridge_ratio_to_paper"] == pytest.approx({"N=2000 ε=0.2": 0.3333, "N=2000 ε=0.4": 0.3333})
    assert set(out["noisyhead_vs_paper_cells"]) == {"N=2000 ε=0.2", "N=2000 ε=0.4"}
    assert out["noisyhead_vs_paper_cells"]["N=2000 ε=0.2"]["mean"] == pytest.approx(1.5)
    assert out["max_abs_log10_noisyhead_vs_paper"] == pytest.approx(math.log10(1.5))
    assert out["dpridge_eps_scaling"] == {"2000": 4.0, "3000": 4.0}
    assert "dpridge_paper_over_closed_form" not in out                 # no delta given
    rows = verdicts({"table1_dp_ridge": out})
    assert rows["table1_ridge_beats_noisyhead"]["verdict"] == "held"
    assert rows["table1_noisyhead_column"]["verdict"] == "held"            # within 2x
    assert rows["table1_dpridge_column"]["verdict"] == "contradicted"  # 3x off: its reading, without the closed form, is not shown
    assert rows["table1_dpridge_column"]["reading"] == ""
    with_delta = ridge.table1_dp_ridge(table1_runs(), table1_paper(), T1_NS, T1_EPS, 1e-5)
    assert verdict({"table1_dp_ridge": with_delta}, "table1_dpridge_column") == "contradicted"   # 3x off


def test_table1_dpridge_over_its_closed_form_by_hand():
    from privtrans.dp_icl import baselines, constants

    closed = baselines.dp_ridge_noise_excess(constants.low_dim(2000), 0.2, 1e-5)
    runs = pd.DataFrame([dict(method=m, N=2000, eps=0.2, rep=r, excess=x) for r in range(3)
                         for m, x in ((experiments.noisyhead(), 1.0), (experiments.DP_RIDGE, 3 * closed))])
    paper = pd.concat([authors("table1", {(2000, 0.2): 0.5}, "noisyhead_excess"),
                       authors("table1", {(2000, 0.2): 0.5 * closed}, "dp_ridge_excess")])
    out = ridge.table1_dp_ridge(runs, paper, [2000], [0.2], 1e-5)
    assert out["dpridge_ours_over_closed_form"] == pytest.approx({"N=2000 ε=0.2": 3.0})
    assert out["dpridge_paper_over_closed_form"] == pytest.approx({"N=2000 ε=0.2": 0.5})


def test_table1_small_gap_contradicts_and_missing_cells_raise():
    out = ridge.table1_dp_ridge(table1_runs(gap=100), table1_paper(), T1_NS, T1_EPS)
    assert out["min_log10_gap"] == pytest.approx(2.0)
    assert verdict({"table1_dp_ridge": out}, "table1_ridge_beats_noisyhead") == "contradicted"
    runs = table1_runs()
    with pytest.raises(ValueError, match="DP-ridge"):
        ridge.table1_dp_ridge(runs[~((runs.method == experiments.DP_RIDGE) & (runs.N == 3000))], table1_paper(), T1_NS, T1_EPS)


def test_table1_nulls_are_judged_and_never_held():
    """A gap of exactly 3 orders, and our means exactly on the band's edge (twice the paper's), plus
    noise: neither the gap nor either column is held."""
    for seed in range(5):
        out = ridge.table1_dp_ridge(table1_runs(gap=1e3, noise=0.3, seed=seed),
                                       table1_paper(nh_over_paper=2.0, dr_over_paper=2.0, gap=1e3), T1_NS, T1_EPS)
        rows = verdicts({"table1_dp_ridge": out})
        for cid in ("table1_ridge_beats_noisyhead", "table1_noisyhead_column", "table1_dpridge_column"):
            assert judged_not_held(rows[cid]), (seed, cid, rows[cid]["reason"])


def test_table1_no_paper_cell_in_our_grid_is_none():
    runs = table1_runs()
    out = ridge.table1_dp_ridge(runs[runs.N == 3000], table1_paper(), [3000], T1_EPS, 1e-5)
    assert out["noisyhead_ratio_to_paper"] is None and out["max_abs_log10_noisyhead_vs_paper"] is None
    assert out["noisyhead_vs_paper_cells"] is None and out["dpridge_paper_over_closed_form"] is None
    assert verdict({"table1_dp_ridge": out}, "table1_noisyhead_column") == "not judged"


def test_accountants_values_by_hand():
    out = ridge.accountants(eps_table(), acc_summary(), [1000], [0.2, 1.0], "prv")
    assert out["basic_is_upper_bound"] is True
    assert out["max_eps_rdp_over_target"] == pytest.approx(0.06)
    assert out["max_eps_prv_over_target"] == pytest.approx(0.08)
    assert out["looseness_basic_over_prv"] == pytest.approx(1 / 0.08)
    assert out["prv_over_exact_max"] == pytest.approx(0.08 / 0.079)
    assert out["z_paper_over_z_prv"] == pytest.approx(10.0)
    assert out["median_excess_gain"] == pytest.approx(50.0) == out["min_excess_gain"]
    assert verdict({"accountants": out}, "accounting_basic_is_loose") == "held"


def test_accountants_a_tight_eps_above_basic_fails_the_check():
    """One cell where RDP certifies more than basic composition is enough to fail."""
    table = eps_table(override={(1000, 1.0): {"eps_rdp": 1.2}})
    out = ridge.accountants(table, acc_summary(), [1000], [0.2, 1.0], "prv")
    assert out["basic_is_upper_bound"] is False
    assert verdict({"accountants": out}, "accounting_basic_is_loose") == "contradicted"


def test_accountants_missing_column_or_cell_raises():
    with pytest.raises(ValueError, match="eps_exact"):
        ridge.accountants(eps_table().drop(columns="eps_exact"), acc_summary(), [1000], [0.2, 1.0], "prv")
    with pytest.raises(ValueError, match="eps_target=1"):
        ridge.accountants(eps_table(eps=(0.2,)), acc_summary(), [1000], [0.2, 1.0], "prv")
