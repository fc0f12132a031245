"""``mpc_attention.fit``: the grouped means and per-head fits equal their definitions (each group's
rows selected by a mask, each length's mean taken on its own)."""

import numpy as np
import pytest

from privtrans.mpc_attention import fit as F


def _denominators(rows=20_000, layers=3, heads=4, seed=0):
    rng = np.random.default_rng(seed)
    n = rng.integers(2, 40, rows)
    layer, head = rng.integers(0, layers, rows), rng.integers(0, heads, rows)
    value = (1.0 + 0.3 * layer + 0.1 * head) * n ** (0.3 + 0.05 * head) * rng.uniform(0.8, 1.2, rows)
    return F.Denominators(n, layer, head, value)


def _by_definition(d, sel):
    ns = np.unique(d.n[sel])
    means = np.array([d.value[sel & (d.n == k)].mean() for k in ns])
    counts = np.array([(sel & (d.n == k)).sum() for k in ns])
    return ns, means, counts


def test_mean_by_n_is_each_lengths_mean():
    d = _denominators()
    sel = d.layer == 1
    for got, want in zip(d.mean_by_n(sel), _by_definition(d, sel)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    for got, want in zip(d.mean_by_n(), _by_definition(d, np.ones(len(d.n), bool))):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("per_layer", [True, False])
def test_per_head_fits_equal_a_fit_of_each_heads_rows(per_layer):
    d = _denominators()
    a, b = F.fit_per_head(d, per_layer=per_layer)
    for li in range(3) if per_layer else [None]:
        for h in range(4):
            sel = (d.head == h) & (d.layer == li) if per_layer else d.head == h
            want = F.power_law_fit(*_by_definition(d, sel))
            got = (a[li][h], b[li][h]) if per_layer else (a[h], b[h])
            assert got == pytest.approx(want, rel=1e-10)
    # the heads were made with different exponents: the fits tell them apart
    bs = np.array(b).reshape(-1, 4) if per_layer else np.array([b])
    assert np.all(np.diff(bs, axis=1) > 0.02)
