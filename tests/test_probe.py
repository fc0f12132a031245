"""privtrans.book.probe: what a claim compares, read off its own path."""

from __future__ import annotations

import numpy as np
import pytest

from privtrans.book import probe

from test_controls import claim, make_curves, make_runs, probed, readout


@pytest.fixture(scope="module")
def records():
    rng = np.random.default_rng(7)
    return make_runs(rng, gain=0.01), make_curves(rng)


def test_the_compared_arms_are_read_off_the_path(records):
    path, p = probed(claim("nb.dp_vs_vanilla"), readout, *records)
    f = path.calls[0].frames["runs"]
    favoured = {f.groups.at[g, "method"] for (_, _, _, g) in p.favoured()}
    against = {f.groups.at[g, "method"] for (_, _, _, g) in p.against()}
    assert favoured == {"dpformer"} and against == {"transformer"}  # GRU is not compared
    assert all(abs(abs(s).max() - 1.0) < 1e-6 for s in p.slopes.values())  # a difference of means: slope ±1
    assert probe.arm_keys(path, p)[(0, "runs")] == ["method"]  # ε is a setting both arms share


def test_a_curve_claim_reads_whole_curves(records):
    """Figure 6's stability reads the curves: degrading DPFormer's lowers its cells, vanilla's raises
    them; GRU's (read only by the gate) leaves them."""
    path, p = probed(claim("nb.stabler"), readout, *records)
    resp = p.curve_groups[(0, "curves")]
    by_method = {}
    for key, sign in resp.items():
        by_method.setdefault(key[0], set()).add(sign)
    assert by_method["dpformer"] == {1} and by_method["transformer"] == {-1} and by_method["gru"] == {0}


def test_the_same_arm_is_found_in_every_table_that_holds_it(records):
    path, p = probed(claim("nb.dp_vs_vanilla"), readout, *records)
    f = path.calls[0].frames["runs"]
    g = next(k[3] for k in p.favoured())
    arm = probe.same_arm(path, 0, "runs", g, ["method"], {"epsilon": {"5.0", "10.0"}})
    curves = path.calls[0].frames["curves"]
    assert {curves.groups.at[h, "method"] for h in arm[(0, "curves")]} == {"dpformer"}  # its curves, every epoch
    assert {f.groups.at[h, "epsilon"] for h in arm[(0, "runs")]} == {5.0, 10.0}  # at every setting compared
    assert probe.same_arm(path, 0, "runs", g, [], {}) == {(0, "runs"): [g]}  # two measures of one group: itself


def test_a_degraded_curve_is_rougher_with_the_same_best_and_end():
    curve = 1 - np.exp(-np.arange(8) / 2)
    worse = probe._degraded(curve)
    assert (worse <= curve + 1e-12).all() and (np.diff(worse) < 0).any()
    assert worse.max() == curve.max() and worse[-1] == curve[-1]
