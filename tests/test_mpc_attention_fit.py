"""``mpc_attention.fit``: the grouped means and per-head fits equal their definitions (each group's
rows selected by a mask, each length's mean taken on its own); f(n) = a n^b recovered from a power law
and from an untrained model; 2ReLU's stabiliser read from a model's unpadded rows."""

import numpy as np
import pytest
import torch

from privtrans.mpc_attention import attention, encoder, fit


def _denominators(rows=20_000, layers=3, heads=4, seed=0):
    rng = np.random.default_rng(seed)
    n = rng.integers(2, 40, rows)
    layer, head = rng.integers(0, layers, rows), rng.integers(0, heads, rows)
    value = (1.0 + 0.3 * layer + 0.1 * head) * n ** (0.3 + 0.05 * head) * rng.uniform(0.8, 1.2, rows)
    return fit.Denominators(n, layer, head, value)


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
    a, b = fit.fit_per_head(d, per_layer=per_layer)
    for li in range(3) if per_layer else [None]:
        for h in range(4):
            sel = (d.head == h) & (d.layer == li) if per_layer else d.head == h
            want = fit.power_law_fit(*_by_definition(d, sel))
            got = (a[li][h], b[li][h]) if per_layer else (a[h], b[h])
            assert got == pytest.approx(want, rel=1e-10)
    # the heads were made with different exponents: the fits tell them apart
    bs = np.array(b).reshape(-1, 4) if per_layer else np.array([b])
    assert np.all(np.diff(bs, axis=1) > 0.02)


def test_relu_eps_change_of_a_model_reads_its_unpadded_rows():
    torch.manual_seed(0)
    m = encoder.TinyEncoder(encoder.EncoderConfig(vocab_size=30, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=12))
    for p in m.parameters():
        torch.nn.init.normal_(p, std=0.3)
    ids = torch.randint(0, 30, (2, 12))
    mask = torch.ones(2, 12)
    mask[1, 5:] = 0
    got = fit.relu_eps_change(m, [(ids, mask)])
    assert got["rows"] == 2 * 2 * (12 + 5) and got["n_max"] == 12  # layers x heads x real query rows
    with torch.no_grad():
        want = attention.relu_eps_change([attention.relu_eps_entries(s, mask[:, None, None, :] * mask[:, None, :, None])
                                  for s in m(ids, mask)["scores"]])
    assert got == want and 0 < got["median_rel"] <= got["max_rel"] < 1


def test_fit_recovers_a_power_law_and_untrained_model_constants():
    ns = np.arange(2, 60)
    assert np.allclose(fit.power_law_fit(ns, 3.0 * ns**0.4), (3.0, 0.4))
    # an untrained model has scores ~ 0: softmax D = n, 2Quad D = 25 n
    torch.manual_seed(0)
    m = encoder.TinyEncoder(encoder.EncoderConfig(vocab_size=50))
    ids = torch.randint(0, 50, (16, 20))
    mask = (torch.arange(20)[None] < torch.randint(3, 21, (16, 1))).float()
    a, b = fit.fit_all(fit.collect(m, [(ids, mask)], "softmax"))
    assert abs(a - 1) < 0.05 and abs(b - 1) < 0.01
    a, b = fit.fit_all(fit.collect(m, [(ids, mask)], "2quad"))
    assert abs(a / 25 - 1) < 0.05 and abs(b - 1) < 0.01
    a2, b2 = fit.fit_per_head(fit.collect(m, [(ids, mask)], "2quad"))
    assert np.array(a2).shape == (2, 2)
    student = m.converted("2quad_freediv", "quad", (a2, b2))
    assert torch.isfinite(student(ids, mask)["logits"]).all()
