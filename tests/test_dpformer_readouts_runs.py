"""privtrans.dpformer.readouts.runs: paired comparisons keep every planned seed."""

from __future__ import annotations

from privtrans.dpformer.readouts import grid, runs, tables

from dpformer_readout_inputs import EPS, N_USERS, refs, table_curves, table_runs, verdicts


def test_paired_keyed_keeps_every_planned_key():
    p = runs.paired_keyed({0: 1.0, 1: 2.0, 2: float("nan")}, {0: 0.5, 1: 1.0, 3: 1.0})
    assert p["keys"] == [0, 1, 2, 3] and p["a"] == [1.0, 2.0, None, None] and p["b"] == [0.5, 1.0, None, 1.0]
    assert (p["n"], p["planned"]) == (2, 4)
    q = runs.paired_keyed({0: 1.0}, {0: 0.5}, keys=[0, 1, 2])
    assert (q["n"], q["planned"]) == (1, 3)
    # Figure 2's halves: a seed one cell of a half lacks is lost, not a smaller maximum
    cells = {(256, 0.01): {0: 0.1, 1: 0.2}, (512, 0.01): {0: 0.3}}
    assert grid.large_vs_small_halves(cells)["batch_size"]["planned"] == 2
    # Tables 1, 2: a seed missing from one method at one ε
    run_table = table_runs(seeds=(0, 1, 2))
    run_table = run_table[~((run_table.method == "dpformer") & (run_table.epsilon == 8) & (run_table.seed == 1))]
    out = tables.table1_movielens(run_table, table_curves(seeds=(0, 1, 2)), refs(False), EPS, n_test_users=N_USERS)
    assert [(p["n"], p["planned"]) for p in out["dpformer_vs_vanilla"]] == [(3, 3), (2, 3)]
    row = verdicts({"table1_movielens": out})["table1_dpformer_ge_vanilla"]
    assert row["verdict"] != "held" and "of 3" in row["reason"], row["reason"]
