"""privtrans.book.truths: target means at which a claim's cells are where a control needs them."""

from __future__ import annotations

import numpy as np
import pytest

from privtrans.book import replay, truths

from test_controls import claim, make_curves, make_runs, probed, readout


@pytest.fixture(scope="module")
def records():
    rng = np.random.default_rng(7)
    return make_runs(rng, gain=0.01), make_curves(rng)


def test_every_arm_equal_puts_a_difference_on_zero(records):
    path, p = probed(claim("nb.dp_vs_vanilla"), readout, *records)
    eq = truths.all_equal(path)
    assert np.allclose(truths.noise_free(path, eq), 0.0, atol=1e-12)
    mu = eq[(0, "runs")]["ndcg@10"]
    assert np.allclose(mu, mu[0])


def test_a_truth_is_placed_through_the_readout(records):
    path, p = probed(claim("nb.dp_vs_vanilla"), readout, *records)
    target = np.array([0.003, -0.002])
    placed, cells = truths.place(path, p, truths.all_equal(path), target)
    assert placed is not None and np.allclose(cells, target, atol=1e-9)
    assert np.allclose(truths.noise_free(path, placed), target, atol=1e-9)


def test_a_margin_other_than_zero_is_reached(records):
    path, p = probed(claim("nb.dp_vs_vanilla", margin=-0.004), readout, *records)
    null, how = truths.at_margin(path, p, path.c, -0.004)
    assert null is not None and "moved" in how
    assert np.allclose(truths.noise_free(path, null), -0.004, atol=1e-9)


def test_nothing_learning_is_flat_curves_and_one_level(records):
    path, p = probed(claim("nb.stabler"), readout, *records)
    t = truths.nothing_learns(path)
    curves = path.calls[0].frames["curves"]
    mu = t[(0, "curves")]["ndcg@10"]
    for idx in truths.curve_groups(curves).values():
        assert np.allclose(mu[idx], mu[idx][0])
    assert np.allclose(t[(0, "runs")]["ndcg@10"], t[(0, "runs")]["ndcg@10"][0])


def test_a_creeping_curve_rises_monotonically_and_barely(records):
    path, p = probed(claim("nb.stabler"), readout, *records)
    shapes = truths.curve_shapes(path, p)
    creep, spread = shapes["the favoured arm's curves creep up without learning"]
    curves = path.calls[0].frames["curves"]
    groups = truths.curve_groups(curves)
    key = next(k for k in groups if k[0] == "dpformer")
    mu = creep[(0, "curves")]["ndcg@10"][groups[key]]
    assert (np.diff(mu) > 0).all() and mu[-1] - mu[0] < 0.01 * (0.05 - mu[0])
    assert (spread[(0, "curves")]["ndcg@10"][groups[key]] == 0).all()  # no jitter: a share of 0
