"""privtrans.dpformer.reattention: the logit correction (DPFormer §4), on the moments that
tests/test_dpformer_moments.py checks."""

import math

import pytest
import torch

from privtrans.dpformer import moments
from privtrans.dpformer import reattention as ra_mod
from privtrans.dpformer.sasrec import SASRec


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------ the correction itself
def test_constant_key_variance_leaves_attention_unchanged():
    q = torch.randn(2, 1, 6, 8, generator=gen(16))
    k = torch.randn(2, 1, 6, 8, generator=gen(17))
    scores = q @ k.transpose(-1, -2) / math.sqrt(8)
    off = ra_mod.logit_offset(q, torch.full((2, 1, 6), 0.7), 1 / math.sqrt(8))
    assert torch.allclose(torch.softmax(scores + off, -1), torch.softmax(scores, -1), atol=1e-6)
    # and a non-constant variance moves mass away from the noisier key
    var = torch.zeros(2, 1, 6)
    var[..., 2] = 1.0
    p0, p1 = torch.softmax(scores, -1), torch.softmax(scores + ra_mod.logit_offset(q, var, 1 / math.sqrt(8)), -1)
    assert torch.all(p1[..., 2] < p0[..., 2])


def tiny_model(seed=0, activation="relu", n_items=60, L=10):
    torch.manual_seed(seed)
    return SASRec(n_items, L, d=16, n_blocks=2, dropout=0.0, activation=activation)


def tiny_batch(n_items=60, L=10):
    seqs = torch.randint(1, n_items + 1, (5, L), generator=gen(18))
    seqs[0, :3] = 0
    seqs[1, :7] = 0
    return seqs


def test_constant_variance_in_model_leaves_outputs_unchanged():
    m, seqs = tiny_model(), tiny_batch()
    m.eval()
    base = m(seqs)
    ra = ra_mod.enable(m, sigma_dp=3.0, batch_size=8, item_freq=torch.full((61,), 0.05))
    ra.keys_var = lambda blk, bt, v: torch.full(v.shape, 2.5)
    assert torch.allclose(m(seqs), base, atol=1e-5)
    ra_mod.disable(m)


def test_model_correction_changes_output_and_zero_noise_is_identity():
    m, seqs = tiny_model(), tiny_batch()
    m.eval()
    base = m(seqs)
    p = torch.linspace(0.005, 0.5, 61)
    ra = ra_mod.enable(m, sigma_dp=0.0, batch_size=8, item_freq=p)
    assert torch.equal(m(seqs), base)
    ra.sigma_dp = 4.0
    out = m(seqs)
    assert not torch.allclose(out, base, atol=1e-4)
    assert set(ra.key_var) == {0, 1} and torch.all(ra.key_var[0][seqs > 0] > 0)
    assert torch.all(torch.isfinite(out[seqs > 0][:, 1:]))
    ra.at_eval = False
    assert torch.equal(m(seqs), base)
    ra_mod.disable(m)
    assert m.attention_layers()[0].logit_correction is None


def test_attention_can_be_read_with_the_correction_off_and_it_is_put_back():
    """Figure 9 and the premise claims read DPFormer's attention without its correction (the correction
    lowers rare items' scores by its formula): the reading equals the bare model's, differs from the
    corrected one, and leaves the correction installed."""
    from privtrans.dpformer import experiments

    m, seqs = tiny_model(), tiny_batch()
    bare = ra_mod.attention_maps(m, seqs)
    ra = ra_mod.enable(m, sigma_dp=4.0, batch_size=8, item_freq=torch.linspace(0.005, 0.5, 61))
    on = ra_mod.attention_maps(m, seqs)
    with experiments.corrections_off([m]):
        off = ra_mod.attention_maps(m, seqs)
    assert all(torch.allclose(a, b) for a, b in zip(off, bare))
    assert not all(torch.allclose(a, b, atol=1e-4) for a, b in zip(on, bare))
    assert all(layer.logit_correction is ra for layer in m.attention_layers())
    assert all(torch.allclose(a, b) for a, b in zip(ra_mod.attention_maps(m, seqs), on))
    freq = torch.linspace(0.005, 0.5, 61)
    table = experiments.attention_shift_table({("non-private", None, 0): tiny_model(), ("dpformer", 5, 0): m},
                                              seqs, freq)
    assert set(table.method) == {"non-private", "dpformer", "dpformer_no_offset"}
    lean = table.groupby("method").rarity_lean.mean()
    assert lean["dpformer"] != pytest.approx(lean["dpformer_no_offset"])
    bare_table = ra_mod.attention_shift_table({("non-private", None, 0): tiny_model(), ("dpformer", 5, 0): tiny_model()},
                                              seqs, freq)
    assert lean["dpformer_no_offset"] == pytest.approx(bare_table.groupby("method").rarity_lean.mean()["dpformer"])
    assert all(layer.logit_correction is ra for layer in m.attention_layers())
    ra_mod.disable(m)


def test_rarer_items_get_larger_key_variance():
    m, seqs = tiny_model(), tiny_batch()
    p = torch.full((61,), 0.3)
    rare = int(seqs[2, 4])
    p[rare] = 0.003
    ra = ra_mod.enable(m, sigma_dp=2.0, batch_size=64, item_freq=p)
    m.eval()
    m(seqs)
    kv = ra.key_var[0][2]
    assert int(kv.argmax()) == 4
    ra_mod.disable(m)


def test_gradients_flow_with_correction_in_training():
    m, seqs = tiny_model(activation="gelu"), tiny_batch()
    m.train()
    ra_mod.enable(m, sigma_dp=2.0, batch_size=16, item_freq=torch.linspace(0.01, 0.4, 61))
    logits = m(seqs)
    loss = logits[seqs > 0][:, 1:].logsumexp(-1).mean()
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)
    assert m.blocks[0].attn.k_proj.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("sigma", [1.0, 6.0])
def test_tracked_key_variance_matches_monte_carlo_of_noisy_weights(sigma):
    """End to end: LayerNorm, Linear, ReLU, attention·V and residuals chained over two blocks."""
    m, seqs = tiny_model(), tiny_batch()
    p = torch.exp(torch.empty(61).uniform_(-6, -0.5, generator=gen(19)))
    ra = ra_mod.enable(m, sigma_dp=sigma, batch_size=256, item_freq=p)
    m.eval()
    m(seqs)
    mc = ra_mod.monte_carlo_key_var(m, seqs, ra, 400, gen(20))
    mask = seqs > 0
    for layer in (0, 1):
        ratio = ra.key_var[layer][mask].mean() / mc[layer][mask].mean()
        assert 0.9 < float(ratio) < 1.1, (layer, float(ratio))
    ra_mod.disable(m)


def test_distraction_monte_carlo_inflates_tails_and_correction_fixes_it():
    out = ra_mod.distraction_monte_carlo([0.0, 2.0, 2.0, 0.0], [1.0, 0.1, 0.1, 1.0], 100_000, generator=gen(21))
    assert out["noisy"][0] > out["truth"][0] + 5 * out["noisy_se"][0]
    tv = lambda a: 0.5 * abs(a - out["truth"]).sum()  # noqa: E731
    assert tv(out["corrected"]) < tv(out["noisy"]) / 2


def test_bad_inputs_raise():
    m = tiny_model()
    with pytest.raises(ValueError):
        ra_mod.enable(m, sigma_dp=1.0, batch_size=8, item_freq=torch.full((10,), 0.1))
    with pytest.raises(ValueError):
        ra_mod.enable(m, sigma_dp=-1.0, batch_size=8, item_freq=torch.full((61,), 0.1))
    with pytest.raises(ValueError):
        moments.relu_moments(0.0, -1.0)
    with pytest.raises(TypeError):
        ra_mod.enable(torch.nn.Linear(2, 2), sigma_dp=1.0, batch_size=8, item_freq=[0.1])


def test_item_frequencies_is_document_frequency():
    seqs = torch.tensor([[0, 1, 1, 2], [0, 0, 2, 3], [1, 2, 3, 3]])
    p = ra_mod.item_frequencies(seqs, 4)
    assert torch.allclose(p[1:], torch.tensor([2 / 3, 1.0, 2 / 3, 1 / 3], dtype=p.dtype))


def test_phantom_norms_stay_exact_with_reattention_on():
    """DP safety: with the correction installed, Phantom's per-sample norms equal brute force."""
    from privtrans.dpformer.sasrec import per_sample_loss
    from privtrans.shared.dp.brute_force import norms_of, per_sample_grads
    from privtrans.shared.dp.phantom import PhantomClipper

    m, seqs = tiny_model(), tiny_batch()
    targets = torch.roll(seqs, -1, 1)
    targets[:, -1] = 0
    targets[seqs == 0] = 0
    m.eval()
    ra_mod.enable(m, sigma_dp=3.0, batch_size=8, item_freq=torch.linspace(0.01, 0.5, 61))
    clipper = PhantomClipper(m)
    with clipper.capture():
        losses = per_sample_loss(m(seqs), targets)
    norms = clipper.backward(losses)
    ref = norms_of(per_sample_grads(m, lambda run, x, y: per_sample_loss(run(x), y)[0], seqs, targets))
    assert torch.allclose(norms, ref, rtol=1e-4, atol=1e-6)
    # and the correction really is active in this forward
    base = m(seqs).detach()
    ra_mod.disable(m)
    assert not torch.allclose(m(seqs), base, atol=1e-5)
