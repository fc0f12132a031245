"""What opacus 1.6 does with a tied embedding: the references of the Claim 3.1 notebook.

- hooks mode (``GradSampleModule``) follows a *module* tie (nn.Embedding and nn.Linear sharing one
  Parameter): it materialises B×M×d per-sample gradients and its norms are exact;
- ghost mode (``GradSampleModuleFastGradientClipping``) refuses the tie (NotImplementedError);
- a *functional* tie (``h @ emb.weight.T``) is invisible to every opacus mode: the norm misses the
  output-layer term, silently (:class:`FunctionalTieSASRec` builds such a model).
"""

from __future__ import annotations

import torch

from .sasrec import SASRec, per_sample_loss

# the start of what opacus 1.6 ghost clipping raises for a parameter used by two modules
TIE_REFUSAL = "Parameter tying is not supported"


class FunctionalTieSASRec(SASRec):
    """SASRec whose scores are ``h @ item_emb.weight.T``: the tie written as a function call."""

    def __init__(self, *args, **kw):
        super().__init__(*args, tied=True, **kw)
        del self.head

    def scores(self, h):
        logits = h @ self.item_emb.weight.T
        col = torch.zeros(logits.shape[-1], dtype=logits.dtype, device=logits.device)
        col[0] = float("-inf")
        return logits + col


def _norms_from_grad_samples(params) -> torch.Tensor:
    return torch.sqrt(sum(p.grad_sample.flatten(1).pow(2).sum(1) for p in params
                          if getattr(p, "grad_sample", None) is not None))


def opacus_hooks_norms(model, seqs, targets) -> torch.Tensor:
    """Per-sample gradient norms as opacus' hooks mode computes them (loss_reduction="sum")."""
    from opacus import GradSampleModule

    model.train()  # opacus records activations in training mode only (use dropout = 0)
    gsm = GradSampleModule(model, loss_reduction="sum")
    try:
        gsm.zero_grad(set_to_none=True)
        per_sample_loss(gsm(seqs), targets).sum().backward()
        params = list({id(p): p for p in model.parameters() if p.requires_grad}.values())
        return _norms_from_grad_samples(params).detach()
    finally:
        gsm._close()


def opacus_ghost_norms(model, seqs, targets):
    """Opacus ghost-clipping norms, or the exception opacus raises (e.g. for a tied model)."""
    from opacus.grad_sample import GradSampleModuleFastGradientClipping

    model.train()
    gsm = GradSampleModuleFastGradientClipping(model, max_grad_norm=1.0, use_ghost_clipping=True,
                                               loss_reduction="sum")
    try:
        per_sample_loss(gsm(seqs), targets).sum().backward()
        return gsm.get_norm_sample().detach()
    except NotImplementedError as err:
        return err
    finally:
        gsm._close()
