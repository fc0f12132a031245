"""privtrans.dpformer.ghost_baseline: Figure 3's paper-style Ghost Clipping baseline (untied d/2
model with a candidate-lookup output; ghost norms with M×M terms, optionally in groups)."""

import pytest
import torch
from torch import nn

from privtrans.dpformer.ghost_baseline import CandidateLookupHead, PaperGhostClipper, paper_ghost_model
from privtrans.dpformer.sasrec import SASRec, per_sample_loss
from privtrans.shared.dp.brute_force import clipped_sum, norms_of, per_sample_grads
from privtrans.shared.dp.phantom import PhantomClipper

N_ITEMS, L, D, B = 12, 5, 8, 5  # candidate rows M + 1 = 13 ≠ L, so the head's M×M terms are told apart


def _loss_of(run, x, y):
    return per_sample_loss(run(x), y).sum()


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(1, 4, (B, L), generator=g)  # few ids: repeats inside a sequence
    for i in range(B):
        x[i, : i % (L - 1)] = 0                    # left padding of varying length
    y = torch.randint(1, N_ITEMS + 1, (B, L), generator=g)
    y[x == 0] = 0
    return x, y


def _model(seed=0):
    torch.manual_seed(seed)
    return paper_ghost_model(N_ITEMS, L, d=D, dropout=0.0).double().eval()


@pytest.fixture(scope="module")
def case():
    """A float64 model, a batch and its brute-force per-sample gradients (torch.func), built once."""
    m = _model()
    x, y = _batch()
    return m, x, y, per_sample_grads(m, _loss_of, x, y)


def _norms(clipper, model, x, y):
    with clipper.capture():
        losses = per_sample_loss(model(x), y)
    return clipper.backward(losses)


def test_candidate_lookup_head_scores_every_candidate():
    head = CandidateLookupHead(7, 4).double()
    h = torch.randn(3, 5, 4, dtype=torch.float64)
    out = head(h)
    assert out.shape == (3, 5, 7)
    torch.testing.assert_close(out, h @ head.emb.weight.T)  # the same scores as a Linear head


def test_paper_ghost_model_is_untied_half_width_with_a_lookup_head():
    m = paper_ghost_model(N_ITEMS, L, d=D)
    assert isinstance(m, SASRec) and m.d == D // 2 and not m.tied
    assert isinstance(m.head, CandidateLookupHead) and m.head.n_rows == N_ITEMS + 1
    assert m.head.emb.weight.shape == (N_ITEMS + 1, D // 2)
    assert m.head.emb.weight is not m.item_emb.weight
    assert not any(isinstance(mod, nn.Linear) and mod.out_features == N_ITEMS + 1 for mod in m.modules())
    logits = m.eval()(_batch()[0])
    assert logits.shape == (B, L, N_ITEMS + 1)
    assert bool(torch.isneginf(logits[..., 0]).all()) and bool(torch.isfinite(logits[..., 1:]).all())


@pytest.mark.parametrize("max_entries", [None, 1, 2 * (N_ITEMS + 1) ** 2, 10 ** 6])
def test_norms_equal_brute_force(case, max_entries):
    m, x, y, ref = case
    c = PaperGhostClipper(m, max_entries=max_entries)  # validates its factors against autograd too
    norms = _norms(c, m, x, y)
    torch.testing.assert_close(norms, norms_of(ref), rtol=1e-10, atol=0)
    for name in ("head.emb.weight", "item_emb.weight", "blocks.0.attn.q_proj.weight"):
        torch.testing.assert_close(c.per_param_sq_norms[name], ref[name].flatten(1).pow(2).sum(1),
                                   rtol=1e-10, atol=1e-14)


def test_same_norms_as_phantom_on_the_same_model(case):
    """The paper's formulas cost more but give the same numbers as the ordinary clipper."""
    m, x, y, _ = case
    paper = PaperGhostClipper(m, max_entries=3 * (N_ITEMS + 1) ** 2)
    assert paper.mode == "ghost_all"  # the paper's Gram form everywhere
    torch.testing.assert_close(_norms(paper, m, x, y), _norms(PhantomClipper(m), m, x, y), rtol=1e-10, atol=0)


def test_clipped_sum_equals_brute_force(case):
    m, x, y, ref = case
    c = PaperGhostClipper(m, max_entries=N_ITEMS)
    norms = _norms(c, m, x, y)
    factors = 1.0 / (norms + 0.01)
    c.write_clipped_sum(factors)
    want = clipped_sum(ref, factors)
    for name, p in m.named_parameters():
        torch.testing.assert_close(p.grad, want[name], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("max_entries,group", [(None, B), (2 * (N_ITEMS + 1) ** 2, 2),
                                               (2 * (N_ITEMS + 1) ** 2 - 1, 1), (5, 1)])
def test_candidate_gram_is_m_by_m_and_grouped_within_max_entries(monkeypatch, max_entries, group):
    """The head's ghost term builds (group, M, M) Gram matrices, groups of at most max_entries entries
    (one sample at least), covering the batch once."""
    m = _model(3)
    x, y = _batch(3)
    c = PaperGhostClipper(m, max_entries=max_entries, validate="never")
    real_bmm, shapes = torch.bmm, []

    def bmm(a, b):
        out = real_bmm(a, b)
        shapes.append(tuple(out.shape))
        return out

    monkeypatch.setattr(torch, "bmm", bmm)
    _norms(c, m, x, y)
    mm = [s for s in shapes if s[1:] == (N_ITEMS + 1, N_ITEMS + 1)]
    assert [s[0] for s in mm] == [group] * (B // group) + ([B % group] if B % group else [])
    if max_entries is not None and group > 1:
        assert all(s[0] * s[1] * s[2] <= max_entries for s in mm)


def test_refuses_a_bad_validate_setting():
    with pytest.raises(ValueError, match="'first', 'always' or 'never'"):
        PaperGhostClipper(_model(), validate="sometimes")
