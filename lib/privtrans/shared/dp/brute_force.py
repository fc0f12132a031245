"""Reference per-sample gradients by torch.func (vmap over grad): slow, memory B·|θ|, but obviously right.

Used by the tests and the Claim 3.1 notebook to check Phantom Clipping. ``loss_of(model, x, y)``
must return the scalar loss of ONE sample given unbatched-looking inputs (a batch of one is made
inside). Dropout must be off (``model.eval()``) for the two to see the same function.
"""

from __future__ import annotations

import torch
from torch.func import functional_call, grad, vmap


def per_sample_grads(model, loss_of, *batch):
    """Dict name -> (B, *shape) per-sample gradients (tied parameters appear once)."""
    params = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
    buffers = {n: b.detach() for n, b in model.named_buffers()}

    def one(prm, *sample):
        def run(*inputs):
            return functional_call(model, (prm, buffers), inputs, tie_weights=True)
        return loss_of(run, *[s.unsqueeze(0) for s in sample])

    return vmap(grad(one), in_dims=(None,) + (0,) * len(batch))(params, *batch)


def norms_of(grads: dict) -> torch.Tensor:
    return torch.sqrt(sum(g.reshape(g.shape[0], -1).pow(2).sum(1) for g in grads.values()))


def clipped_sum(grads: dict, factors: torch.Tensor) -> dict:
    return {n: torch.einsum("b,b...->...", factors, g) for n, g in grads.items()}
