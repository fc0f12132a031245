"""privtrans.dpformer.opacus_compare: what opacus 1.6 does with a tied embedding (Claim 3.1's
references): hooks mode is exact on a module tie, ghost mode refuses it, a functional tie is
silently missed."""

import pytest
import torch

from privtrans.dpformer.efficiency import random_batch
from privtrans.dpformer.opacus_compare import (TIE_REFUSAL, FunctionalTieSASRec, opacus_ghost_norms,
                                              opacus_hooks_norms)
from privtrans.dpformer.sasrec import SASRec, per_sample_loss
from privtrans.shared.dp.brute_force import norms_of, per_sample_grads

pytestmark = pytest.mark.filterwarnings("ignore:Full backward hook is firing:UserWarning")

N_ITEMS, L, D, B = 15, 6, 8, 4


def _loss_of(run, x, y):
    return per_sample_loss(run(x), y).sum()


def _model(cls=SASRec, seed=0, **kw):
    torch.manual_seed(seed)
    return cls(N_ITEMS, L, d=D, dropout=0.0, **kw).double().eval()


@pytest.fixture(scope="module")
def batch():
    return random_batch(N_ITEMS, L, B, seed=1)


def _exact(model, x, y):
    return norms_of(per_sample_grads(model.eval(), _loss_of, x, y))


def _hooks_left(model):
    return sum(len(m._forward_hooks) + len(m._backward_hooks) + len(m._forward_pre_hooks)
               for m in model.modules())


def test_hooks_norms_are_exact_on_a_module_tie(batch):
    x, y = batch
    m = _model()
    assert m.head.weight is m.item_emb.weight
    hooks = opacus_hooks_norms(m, x, y)
    torch.testing.assert_close(hooks, _exact(m, x, y), rtol=1e-10, atol=0)
    # the wrapper leaves the model as it was: no hooks, no per-sample gradients; a second call agrees
    assert _hooks_left(m) == 0
    assert all(getattr(p, "grad_sample", None) is None for p in m.parameters())
    torch.testing.assert_close(opacus_hooks_norms(m, x, y), hooks, rtol=1e-12, atol=0)


def test_ghost_refuses_the_module_tie(batch):
    x, y = batch
    m = _model()
    err = opacus_ghost_norms(m, x, y)
    assert isinstance(err, NotImplementedError) and str(err).startswith(TIE_REFUSAL)
    assert _hooks_left(m) == 0


def test_ghost_norms_are_exact_without_a_tie(batch):
    x, y = batch
    m = _model(tied=False)
    ghost = opacus_ghost_norms(m, x, y)
    assert isinstance(ghost, torch.Tensor) and ghost.shape == (B,)
    torch.testing.assert_close(ghost, _exact(m, x, y), rtol=1e-10, atol=0)
    assert _hooks_left(m) == 0


def test_functional_tie_has_the_same_function_and_no_head(batch):
    x, _ = batch
    ft, tied = _model(FunctionalTieSASRec), _model(SASRec)
    assert not hasattr(ft, "head") and ft.tied
    torch.testing.assert_close(ft(x), tied(x), rtol=0, atol=0)  # same parameters, same scores
    assert bool(torch.isneginf(ft(x)[..., 0]).all())
    assert {n for n, _ in ft.named_parameters()} == {n for n, _ in tied.named_parameters()}


class _LookupOnly(FunctionalTieSASRec):
    """The same function, but the output layer's use of the table carries no gradient to it."""

    def scores(self, h):
        logits = h @ self.item_emb.weight.detach().T
        col = torch.zeros(logits.shape[-1], dtype=logits.dtype)
        col[0] = float("-inf")
        return logits + col


def test_hooks_miss_exactly_the_output_layer_term_of_a_functional_tie(batch):
    """opacus' norm on ``h @ emb.weight.T`` is the norm of a gradient without the output layer's
    share of the embedding gradient: smaller for every sample, silently."""
    x, y = batch
    ft = _model(FunctionalTieSASRec)
    exact = _exact(ft, x, y)
    hooks = opacus_hooks_norms(ft, x, y)
    lookup_only = _exact(_model(_LookupOnly), x, y)
    torch.testing.assert_close(hooks, lookup_only, rtol=1e-10, atol=0)
    assert bool((hooks < exact * (1 - 1e-3)).all())
