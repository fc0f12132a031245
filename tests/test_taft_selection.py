"""``taft.selection``: the grid is every combination on top of the fixed settings; the winner is the
best validation accuracy (ties to the first listed) at the first seed only; the test runs train the
winner at every seed. ``fit_runs`` is replaced by a table of fake accuracies: nothing trains."""

import pytest

from privtrans.taft import selection
from privtrans.taft.finetune import describe

SCHEDULE = {"epochs": 2, "batch": 8}
METHOD = {"fixed": {"method": "taft"}, "grid": {"lr": [1e-3, 1e-4], "kappa": [5.0, 15.0]}}


@pytest.fixture
def fake_fits(monkeypatch):
    """fit_runs answers from ``acc[(task, lr, weight_decay, split)]`` (0.5 when absent) and logs each call."""
    calls, acc = [], {}

    def fit_runs(bench, jobs, progress=None):
        jobs = list(jobs)
        calls.append(jobs)
        return [{"accuracy": acc.get((t, s.lr, s.kappa, split), 0.5), "seconds": 1.0}
                for t, s, seed, split in jobs]

    monkeypatch.setattr(selection, "fit_runs", fit_runs)
    return calls, acc


def test_grid_is_every_combination_over_the_fixed_settings():
    specs = selection.grid_specs(METHOD, SCHEDULE)
    assert len(specs) == 4
    assert {(s.lr, s.kappa) for s in specs} == {(1e-3, 5.0), (1e-3, 15.0), (1e-4, 5.0), (1e-4, 15.0)}
    assert all(s.method == "taft" and s.epochs == 2 for s in specs)
    (only,) = selection.grid_specs({"fixed": {"method": "taft", "lr": 5e-4}}, SCHEDULE)
    assert only.lr == 5e-4


def test_select_takes_the_best_validation_accuracy_and_the_first_of_a_tie(fake_fits):
    calls, acc = fake_fits
    specs = selection.grid_specs(METHOD, SCHEDULE)
    acc[("a", 1e-4, 15.0, "val")] = 0.9
    best, table = selection.select(None, "a", specs, seed=7)
    assert (best.lr, best.kappa) == (1e-4, 15.0)
    assert all(split == "val" and seed == 7 for _, _, seed, split in calls[-1])  # never the test split
    assert list(table.columns) == ["config", "val_accuracy", "seconds"] and len(table) == 4
    acc[("a", 1e-3, 5.0, "val")] = 0.9  # a tie with the first listed candidate: the first wins
    first, _ = selection.select(None, "a", specs, seed=7)
    assert describe(first) == describe(specs[0])


def test_chosen_is_select_per_task(fake_fits):
    _, acc = fake_fits
    acc[("a", 1e-4, 5.0, "val")] = 0.8
    acc[("b", 1e-3, 15.0, "val")] = 0.8
    got = selection.chosen(None, ["a", "b"], METHOD, SCHEDULE, seed=3)
    specs = selection.grid_specs(METHOD, SCHEDULE)
    assert got == {t: selection.select(None, t, specs, 3)[0] for t in ("a", "b")}
    assert (got["a"].lr, got["a"].kappa, got["b"].lr, got["b"].kappa) == (1e-4, 5.0, 1e-3, 15.0)


def test_tuned_runs_select_at_the_first_seed_and_test_the_winner_at_every_seed(fake_fits):
    calls, acc = fake_fits
    acc[("a", 1e-4, 15.0, "val")] = 0.9
    acc[("a", 1e-4, 15.0, "test")] = 0.7
    runs, sel = selection.tuned_runs(None, ["a"], {"TAFT": METHOD}, SCHEDULE, seeds=[5, 6, 7],
                                     extra={"paper": {"method": "taft", "lr": 1e-2}})
    val_jobs = [j for c in calls for j in c if j[3] == "val"]
    assert {j[2] for j in val_jobs} == {5}  # the grid runs only at the first seed
    test_jobs = calls[-1]
    assert all(split == "test" for *_, split in test_jobs)
    assert sorted((m, s) for m, s in zip(runs.method, runs.seed)) == [("TAFT", 5), ("TAFT", 6), ("TAFT", 7),
                                                                       ("paper", 5), ("paper", 6), ("paper", 7)]
    assert set(runs[runs.method == "TAFT"].accuracy) == {0.7}
    assert set(runs[runs.method == "paper"].config) == {describe(selection.spec_from({**SCHEDULE, "method": "taft",
                                                                                        "lr": 1e-2}))}
    assert sel.chosen.sum() == 1 and sel[sel.chosen].val_accuracy.item() == 0.9
    assert set(sel.method) == {"TAFT"}  # the paper's own setting is not selected
