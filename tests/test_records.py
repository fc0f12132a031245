"""privtrans.book.records: a per-seed table split into replicates, keys and values, and generated again
around target means by resampling whole seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from privtrans.book.records import seed_frame

from test_controls import make_runs


def test_whole_seeds_are_resampled_with_their_correlation():
    runs = make_runs(np.random.default_rng(7), gain=0.01)
    f = seed_frame(runs)
    assert f.replicate == "seed" and f.values == ["ndcg@10"] and set(f.keys) == {"method", "epsilon"}
    mu = f.means()
    same = f.generate(mu, None)["ndcg@10"]
    assert np.allclose(same, f.table("ndcg@10"))  # no resampling: the recorded table itself
    shifted = f.generate({"ndcg@10": mu["ndcg@10"] + 1.0}, None)["ndcg@10"]
    assert np.allclose(np.nanmean(shifted, axis=1), mu["ndcg@10"] + 1.0)  # re-centred on the target
    gen = f.generate(mu, np.random.default_rng(0))["ndcg@10"]
    assert gen.shape == same.shape and not np.allclose(gen, same)


def test_a_generated_mean_is_its_target_exactly_in_expectation():
    """Two arms a millionth apart (DPFormer and vanilla, whose Re-Attention barely acts) keep their
    difference: deviations are added, never multiplied, so no correction for skew can differ
    between them by as much as they do."""
    rng = np.random.default_rng(0)
    noise = rng.lognormal(0, 0.3, 6)
    rows = [{"method": m, "seed": s, "ndcg": 0.02 * noise[s] + (2e-8 if m == "a" else 0.0)} for m in ("a", "b")
            for s in range(6)]
    f = seed_frame(pd.DataFrame(rows))
    mu = f.means()
    mu["ndcg"][:] = 0.02  # A = B
    gen = np.array([f.generate(mu, np.random.default_rng(j))["ndcg"] for j in range(2000)])
    diff = (gen[:, 0, :] - gen[:, 1, :]).mean()
    assert abs(diff) < 1e-10


def test_rounds_are_repetitions_not_training_runs():
    runs = pd.DataFrame([{"method": m, "round": r, "seconds": float(np.exp(np.random.default_rng(r).normal(0, 1)))}
                         for m in ("a", "b") for r in range(8)])
    f = seed_frame(runs)
    assert f.replicate == "round" and not f.training


def test_settings_are_keys_and_measurements_are_values():
    rng = np.random.default_rng(0)
    df = pd.DataFrame([{"method": m, "lr": lr, "seed": s, "sigma": 0.9, "acc": rng.random()}
                       for m in ("a", "b") for lr in (0.01, 0.03) for s in range(3)])
    f = seed_frame(df)
    assert f.values == ["acc"] and {"lr", "sigma", "method"} <= set(f.keys)


def test_whole_seeds_move_together_across_groups():
    """One draw of seeds for every group, smoothed with the seeds' own covariance: two groups whose
    seeds move together stay together."""
    rng = np.random.default_rng(1)
    shared = rng.normal(0, 1, 8)
    df = pd.DataFrame([{"arm": a, "seed": s, "x": 10 + shared[s] + 0.01 * rng.normal()} for a in ("a", "b")
                       for s in range(8)])
    f = seed_frame(df)
    gen = np.array([f.generate(f.means(), np.random.default_rng(j))["x"] for j in range(300)])
    a, b = gen[:, 0, :].mean(axis=1), gen[:, 1, :].mean(axis=1)
    assert np.corrcoef(a, b)[0, 1] > 0.95


def test_a_replicate_label_is_carried_not_a_key():
    """A column that names the run itself (its config with the seed in it) is not a key: keeping it
    would leave one replicate per group."""
    df = pd.DataFrame([{"arm": a, "seed": s, "config": f"{a}-seed{s}", "acc": float(np.random.default_rng(s).random())}
                       for a in ("a", "b") for s in range(4)])
    f = seed_frame(df)
    assert f.keys == ["arm"] and len(f.reps) == 4 and len(f.groups) == 2


def test_no_replicates_no_table():
    assert seed_frame(pd.DataFrame({"arm": ["a", "b"], "acc": [0.1, 0.2]})) is None
    assert seed_frame(pd.DataFrame({"arm": ["a"], "seed": [0], "acc": [0.1]})) is None  # one seed: nothing varies


def test_a_time_recorded_per_run_is_a_value_even_where_runs_repeat_it():
    """A cached arm repeats its time at every seed, another does not: keying on the time would split
    that arm into one-seed groups."""
    rows = [{"method": m, "seed": s, "seconds": 0.5 if m == "a" else 0.4 + 0.01 * s, "acc": 0.1 * s + (m == "b")}
            for m in ("a", "b") for s in range(4)]
    f = seed_frame(pd.DataFrame(rows))
    assert f.keys == ["method"] and "seconds" in f.values and len(f.groups) == 2
