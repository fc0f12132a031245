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
    """fit_runs answers from ``acc[(task, lr, kappa, split, loss, seed)]``, else ``acc[(task, lr, kappa,
    split, loss)]``, else ``acc[(task, lr, kappa, split)]`` (0.5 when absent), and logs each call."""
    calls, acc = [], {}

    def fit_runs(bench, jobs, progress=None):
        jobs = list(jobs)
        calls.append(jobs)
        return [{"accuracy": acc.get((t, s.lr, s.kappa, split, s.loss, seed),
                                     acc.get((t, s.lr, s.kappa, split, s.loss), acc.get((t, s.lr, s.kappa, split), 0.5))),
                 "seconds": 1.0}
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
    assert list(table.columns) == ["config", "val_accuracy", "seconds", "n_seeds"] and len(table) == 4
    assert set(table.n_seeds) == {1}
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


def test_tuned_runs_select_at_a_validation_seed_and_test_the_winner_at_every_seed(fake_fits):
    calls, acc = fake_fits
    acc[("a", 1e-4, 15.0, "val")] = 0.9
    acc[("a", 1e-4, 15.0, "test")] = 0.7
    runs, sel = selection.tuned_runs(None, ["a"], {"TAFT": METHOD}, SCHEDULE, seeds=[5, 6, 7],
                                     extra={"paper": {"method": "taft", "lr": 1e-2}})
    val_jobs = [j for c in calls for j in c if j[3] == "val"]
    assert {j[2] for j in val_jobs} == {5 + selection.VALIDATION_SEED_OFFSET}  # one validation seed, not a judged one
    test_jobs = calls[-1]
    assert all(split == "test" for *_, split in test_jobs)
    assert sorted((m, s) for m, s in zip(runs.method, runs.seed)) == [("TAFT", 5), ("TAFT", 6), ("TAFT", 7),
                                                                       ("paper", 5), ("paper", 6), ("paper", 7)]
    assert set(runs[runs.method == "TAFT"].accuracy) == {0.7}
    assert set(runs[runs.method == "paper"].config) == {describe(selection.spec_from({**SCHEDULE, "method": "taft",
                                                                                        "lr": 1e-2}))}
    assert sel.chosen.sum() == 1 and sel[sel.chosen].val_accuracy.item() == 0.9
    assert set(sel.method) == {"TAFT"}  # the paper's own setting is not selected


def test_select_averages_the_validation_accuracy_over_several_seeds(fake_fits):
    calls, acc = fake_fits
    specs = selection.grid_specs({"fixed": {"method": "taft", "loss": "rsl", "kappa": 5.0}, "grid": {"lr": [1e-3, 1e-2]}},
                                 SCHEDULE)
    acc[("a", 1e-3, 5.0, "val", "rsl", 4)] = 0.9  # one lucky seed
    acc[("a", 1e-3, 5.0, "val", "rsl", 5)] = 0.1
    acc[("a", 1e-2, 5.0, "val", "rsl")] = 0.6
    assert selection.select(None, "a", specs, 4)[0].lr == 1e-3
    best, table = selection.select(None, "a", specs, [4, 5])
    assert best.lr == 1e-2 and table.val_accuracy.tolist() == [0.5, 0.6] and set(table.n_seeds) == {2}
    assert {(seed, split) for _, _, seed, split in calls[-1]} == {(4, "val"), (5, "val")}


METHOD_LR = {"fixed": {"method": "taft", "loss": "rsl", "kappa": 5.0}, "grid": {"lr": [1e-3, 1e-2, 3e-2]}}
VARIANTS = {"RSL": {}, "MSE": {"loss": "mse"}, "PT=T": {"pt": True}}


def test_variant_specs_retune_the_named_variants_on_the_mean_over_the_seeds(fake_fits):
    calls, acc = fake_fits
    acc[("a", 3e-2, 5.0, "val", "rsl")] = 0.9  # RSL's rate
    v4, v5 = selection.validation_seeds([4, 5], 2)
    acc[("a", 1e-3, 5.0, "val", "rsl", v4)] = 0.95  # Table 1's choice at the first seed alone: not used
    acc[("a", 1e-3, 5.0, "val", "mse", v4)] = 0.9  # MSE: best at the first seed, not on the mean
    acc[("a", 1e-3, 5.0, "val", "mse", v5)] = 0.1
    acc[("a", 1e-2, 5.0, "val", "mse")] = 0.6
    acc[("a", 3e-2, 5.0, "test", "mse")] = 0.99  # the test split must never decide
    specs, grids = selection.variant_specs(None, ["a"], METHOD_LR, SCHEDULE, VARIANTS, [4, 5], retuned=["RSL", "MSE"],
                                           reference="RSL")
    assert list(specs) == list(VARIANTS)
    assert (specs["RSL"]["a"].lr, specs["RSL"]["a"].loss) == (3e-2, "rsl")
    assert (specs["MSE"]["a"].lr, specs["MSE"]["a"].loss) == (1e-2, "mse")
    assert (specs["PT=T"]["a"].lr, specs["PT=T"]["a"].pt) == (3e-2, True)  # the retuned reference's rate
    assert {(seed, split) for c in calls for _, _, seed, split in c} == {(v4, "val"), (v5, "val")}  # never 4 or 5
    assert set(grids.variant) == {"RSL", "MSE"} and len(grids) == 6 and grids.chosen.sum() == 2
    assert grids[grids.chosen & (grids.variant == "RSL")].at_edge.item()  # 3e-2, the grid's largest
    assert grids[grids.chosen & (grids.variant == "MSE")].config.item() == describe(specs["MSE"]["a"])


def test_variant_specs_without_retuning_start_every_variant_from_table_1s_choice(fake_fits):
    _, acc = fake_fits
    acc[("a", 1e-3, 5.0, "val", "rsl", selection.validation_seeds([4])[0])] = 0.95  # Table 1 selects at the first validation seed
    acc[("a", 1e-2, 5.0, "val", "mse")] = 0.99
    specs, grids = selection.variant_specs(None, ["a"], METHOD_LR, SCHEDULE, VARIANTS, [4, 5])
    assert {v: s["a"].lr for v, s in specs.items()} == {"RSL": 1e-3, "MSE": 1e-3, "PT=T": 1e-3} and grids.empty
    assert specs["MSE"]["a"].loss == "mse" and specs["PT=T"]["a"].pt
    # Table 12's variants all change something (no reference): each starts from Table 1's choice
    pgd = {"CE R=1": {"loss": "ce", "radius": 1.0}, "RSL R=1": {"radius": 1.0}}
    specs, _ = selection.variant_specs(None, ["a"], METHOD_LR, SCHEDULE, pgd, [4, 5])
    assert [(s["a"].lr, s["a"].loss, s["a"].radius) for s in specs.values()] == [(1e-3, "ce", 1.0), (1e-3, "rsl", 1.0)]
    # retuned without a reference: the others still start from Table 1's choice
    specs, _ = selection.variant_specs(None, ["a"], METHOD_LR, SCHEDULE, VARIANTS, [4, 5], retuned=["MSE"])
    assert specs["PT=T"]["a"].lr == 1e-3 and specs["RSL"]["a"].lr == 1e-3


def test_variant_specs_refuse_a_retuned_name_that_is_no_variant_and_a_reference_that_changes_something(fake_fits):
    with pytest.raises(ValueError, match=r"retuned names variants that are not in variants: \['mse'\]"):
        selection.variant_specs(None, ["a"], METHOD_LR, SCHEDULE, VARIANTS, [0], retuned=["mse"])
    with pytest.raises(ValueError, match="reference must name a retuned variant with no overrides; got 'MSE'"):
        selection.variant_specs(None, ["a"], METHOD_LR, SCHEDULE, VARIANTS, [0], retuned=["MSE"], reference="MSE")
    with pytest.raises(ValueError, match="reference must name a retuned variant"):
        selection.variant_specs(None, ["a"], METHOD_LR, SCHEDULE, VARIANTS, [0], retuned=["MSE"], reference="RSL")


def test_a_grid_of_one_candidate_is_chosen_without_a_validation_fit(fake_fits):
    calls, _ = fake_fits
    (only,) = selection.grid_specs({"fixed": {"method": "taft"}, "grid": {"lr": [1e-2]}}, SCHEDULE)
    best, table = selection.select(None, "a", [only], seed=[4, 5])
    assert best == only and calls == []
    assert table.val_accuracy.isna().all() and table.n_seeds.tolist() == [0] and len(table) == 1
    runs, sel = selection.tuned_runs(None, ["a"], {"one": {"fixed": {"method": "taft"}, "grid": {"lr": [3e-2]}},
                                                    "two": {"fixed": {"method": "taft"}, "grid": {"lr": [1e-3, 1e-2]}}},
                                     SCHEDULE, seeds=[5, 6])
    val_jobs = [j for c in calls for j in c if j[3] == "val"]
    assert {s.lr for _, s, _, _ in val_jobs} == {1e-3, 1e-2}  # only the two-point grid is validated
    assert sel[sel.method == "one"].chosen.tolist() == [True]
    assert len(runs) == 4


def test_validation_seeds_are_disjoint_from_the_judged_seeds():
    judged = list(range(0, 10))
    got = selection.validation_seeds(judged, 5)
    assert len(got) == 5 and not set(got) & set(judged)
    assert not set(selection.validation_seeds([100, 101], 2)) & set(range(0, 1000))
    with pytest.raises(ValueError, match="between 1 and the number of judged seeds 2"):
        selection.validation_seeds([0, 1], 3)


def test_at_edge_flags_a_choice_at_either_end_of_a_grid():
    grid = {"lr": [1e-3, 1e-2, 3e-2]}
    spec = selection.spec_from({**SCHEDULE, "method": "taft"})
    assert selection.at_edge(grid, spec.with_(lr=1e-3)) and selection.at_edge(grid, spec.with_(lr=3e-2))
    assert not selection.at_edge(grid, spec.with_(lr=1e-2))
    assert selection.at_edge({"lr": [1e-3, 1e-2]}, spec.with_(lr=1e-2))  # two points: no interior
    assert not selection.at_edge({"lr": [1e-2]}, spec.with_(lr=1e-2))  # one point: nothing was chosen


def test_shard_tuned_chooses_per_task_and_n_by_its_score_at_validation_seeds(monkeypatch):
    calls = []

    def fake(bench, task, spec, n, seed):
        calls.append((task, spec.method, spec.lr, n, seed))
        composed = {1e-3: 0.5, 1e-2: 0.7 if n == 10 else 0.4}[spec.lr]
        vote = {1e-3: 0.6, 1e-2: 0.5}[spec.lr]
        return {"composed": composed, "vote": vote, "seconds": 1.0}

    class Bench:
        def prepare(self, *a):
            pass

    monkeypatch.setattr(selection, "shard_validation", fake)
    monkeypatch.setattr(selection.workers, "in_parallel", lambda calls, progress=None: [c() for c in calls])
    methods = {"Soup": {"fixed": {**SCHEDULE, "method": "nlft"}, "grid": {"lr": [1e-3, 1e-2]}},
               "SISA": {"fixed": {**SCHEDULE, "method": "nlft"}, "grid": {"lr": [1e-3, 1e-2]}, "score": "vote"},
               "One": {"fixed": {**SCHEDULE, "method": "taft", "lr": 3e-2}}}
    best, table = selection.shard_tuned(Bench(), ["a"], methods, [10, 50], seeds=[0, 1, 2])
    assert best["a", "Soup", 10].lr == 1e-2 and best["a", "Soup", 50].lr == 1e-3  # per N
    assert best["a", "SISA", 10].lr == 1e-3  # the vote's score
    assert best["a", "One", 10].lr == 3e-2 and not any(m == "taft" for _, m, *_ in calls)  # one candidate: no fit
    assert {seed for *_, seed in calls} == {selection.VALIDATION_SEED_OFFSET}  # not a judged seed
    assert table.groupby(["method", "shards"]).chosen.sum().eq(1).all()
    with pytest.raises(ValueError, match="score must be one of"):
        selection.shard_tuned(Bench(), ["a"], {"X": {**methods["Soup"], "score": "mean"}}, [10], seeds=[0])


# the arms each comparison sets against one another, per experiment (profile key of their grids)
COMPARED = {"composition": ("methods", None), "forgetting": ("methods", None), "table10_textures": ("methods", None),
            "table11_peft": ("methods", None), "table7_linearised_cnn": ("methods", None),
            "table1_finetuning": ("methods", ["FC", "NLFT-1", "TAFT-1"])}


@pytest.mark.parametrize("profile", ["smoke", "ci", "paper"])
@pytest.mark.parametrize("experiment", sorted(COMPARED))
def test_compared_arms_get_as_many_candidates(experiment, profile):
    """Every arm of a comparison has a grid of the same size (the same search budget); NLFT-2 and
    TAFT-2 of Table 1 are compared with each other and both have one rate."""
    from privtrans.book import profiles

    cfg = profiles.settings("taft", experiment, profile)
    key, names = COMPARED[experiment]
    arms = {m: len(selection.grid_specs(c, {})) for m, c in cfg[key].items() if names is None or m in names}
    assert len(set(arms.values())) == 1, f"{experiment} at {profile}: candidates per arm {arms}"
    if experiment == "table1_finetuning":
        assert len(selection.grid_specs(cfg[key]["NLFT-2"], {})) == len(selection.grid_specs(cfg[key]["TAFT-2"], {}))


@pytest.mark.parametrize("profile", ["smoke", "ci", "paper"])
def test_every_profile_has_no_more_validation_seeds_than_judged_seeds(profile):
    """``validation_seeds`` shifts the first n judged seeds: n may not exceed them (a smoke build
    of Table 12 failed on 3 validation seeds of 2)."""
    from privtrans.book import profiles

    for e in profiles.experiments("taft"):
        cfg = profiles.settings("taft", e, profile)
        if "validation_seeds" in cfg:
            assert 1 <= cfg["validation_seeds"] <= cfg["seeds"], f"{e} at {profile}"
