"""privtrans.dpformer.baselines: the GRU and LSTM recommenders tie their embedding, and Phantom Clipping's
per-sample norms are exact for them."""

from __future__ import annotations

import pytest
import torch

from privtrans.dpformer import baselines, train


# ----------------------------------------------------------------------------------- baselines
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_rnn_tied_and_per_sample_norms_exact(cell):
    from privtrans.shared.dp.phantom import PhantomClipper

    torch.manual_seed(0)
    m = baselines.RNNRec(40, 8, cell, dropout=0.0)
    assert m.out.weight is m.item_emb.weight
    seq = torch.randint(0, 41, (4, 6))
    seq[0, :3] = 0
    tgt = torch.randint(1, 41, (4, 6))
    clipper = PhantomClipper(m)
    with clipper.capture():
        losses = train.per_sample_loss(m(seq), tgt)
    norms = clipper.backward(losses)
    ps = list(m.parameters())
    ref = [torch.sqrt(sum(g.pow(2).sum() for g in torch.autograd.grad(
        train.per_sample_loss(m(seq[i:i + 1]), tgt[i:i + 1]).sum(), ps))) for i in range(4)]
    torch.testing.assert_close(norms, torch.stack(ref), rtol=1e-4, atol=1e-6)
    assert m.item_emb.weight.grad is None or m.item_emb.weight.grad[0].abs().max() == 0
