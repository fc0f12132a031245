"""k seeds of one configuration trained as one vectorised model, so that five seeds cost little more
than one on a CPU where tiny models spend their time in per-operation overhead, not arithmetic.

PyTorch's model-ensembling recipe (``torch.func.stack_module_state`` + ``vmap`` over
``functional_call``), with what a training loop needs around it. Why k seeds together equal k runs
apart (the tests check it to float tolerance):

- seeds never interact: the stack's loss is the *sum* of the seeds' losses, so the gradient of
  slice i of a stacked parameter is seed i's own gradient;
- Adam/AdamW and SGD act entry by entry, so one optimiser over the stacked tensors takes each
  seed's own step (its step count and learning rate are the same in every seed);
- each seed keeps its own initialisation (the models are built apart, then stacked) and its own data
  order (the caller stacks each seed's batch: inputs carry a leading seed dimension).

A loop with a cross-parameter operation (a global grad-norm clip) or per-sample DP gradients needs
more than this; TAFT's fine-tunes (its ``finetune.fit_together``), the one user, need neither. The
DPFormer and MPC-attention chapters train one seed per process: vectorising their loops was
measured slower on the book's CPU (the comments at their ``experiments.run_grid`` and
``experiments.teachers`` say by how much).

Not exact, only equal in distribution: dropout, whose masks come from one stream for the whole
stack (``randomness="different"``) instead of each run's stream. Methods that cannot run under
``vmap`` (opacus' hooks, CrypTen's secret shares) keep one run per seed on the process pool.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap


class Stack:
    """k models of one architecture as stacked parameters (leading dimension k) and one forward.

    ``stack(*inputs)`` runs every seed on its own inputs (leading dimension k; pass ``in_dims`` with
    ``None`` for an input all seeds share) and returns outputs with a leading k. ``parameters()``
    are the stacked leaves to give an optimiser; ``write_back()`` copies each slice into its
    original model, which the caller then evaluates, saves or caches exactly as a single run's.
    """

    def __init__(self, models: Sequence[nn.Module]):
        if not models:
            raise ValueError("Stack needs at least one model")
        kinds = {type(m) for m in models}
        if len(kinds) != 1:
            raise ValueError(f"all models must share one class, got {sorted(k.__name__ for k in kinds)}")
        shapes = [{n: tuple(p.shape) for n, p in m.named_parameters()} for m in models]
        if any(s != shapes[0] for s in shapes[1:]):
            raise ValueError("all models must have the same parameter names and shapes")
        self.models = list(models)
        self.k = len(models)
        self.params, self.buffers = stack_module_state(self.models)
        self.base = copy.deepcopy(self.models[0]).to("meta")
        _retie(self.base, self.models[0])

    def parameters(self) -> list[torch.Tensor]:
        """The stacked tensors that require grad (a model's frozen parameters stay frozen)."""
        return [p for p in self.params.values() if p.requires_grad]

    def train(self, mode: bool = True) -> "Stack":
        self.base.train(mode)
        return self

    def eval(self) -> "Stack":
        return self.train(False)

    def __call__(self, *inputs, in_dims: Sequence[int | None] | None = None, **kwargs):
        in_dims = tuple(in_dims) if in_dims is not None else (0,) * len(inputs)
        if len(in_dims) != len(inputs):
            raise ValueError(f"in_dims has {len(in_dims)} entries for {len(inputs)} inputs")

        def one(p, b, *x):
            return functional_call(self.base, (p, b), x, kwargs, tie_weights=True)

        return vmap(one, in_dims=(0, 0) + in_dims, randomness="different")(self.params, self.buffers, *inputs)

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    @torch.no_grad()
    def write_back(self) -> list[nn.Module]:
        """Copy slice i of every parameter and buffer into model i; returns the models."""
        for i, m in enumerate(self.models):
            for name, t in m.named_parameters():
                t.copy_(self.params[name][i])
            for name, t in m.named_buffers():
                if name in self.buffers:
                    t.copy_(self.buffers[name][i])
        return self.models


def _retie(base: nn.Module, model: nn.Module) -> None:
    """Tie in ``base`` what ``model`` ties (e.g. an item embedding shared with the output layer).

    ``.to("meta")`` gives every module its own meta Parameter, so a tie is lost, and
    ``functional_call(tie_weights=True)`` can only follow a tie the base still has: without this a
    tied output layer would read a meta tensor instead of the stacked embedding."""
    uses: dict[int, list[tuple[str, str]]] = {}
    for mname, mod in model.named_modules():
        for pname, p in mod.named_parameters(recurse=False):
            uses.setdefault(id(p), []).append((mname, pname))
    modules = dict(base.named_modules())
    for (m0, p0), *rest in uses.values():
        for mname, pname in rest:
            setattr(modules[mname], pname, getattr(modules[m0], p0))


class StackedBatches:
    """Index tensors (k, b) of each seed's next ``size`` examples, for k permutations of one length
    (each seed's own data order; the last batch is shorter in every seed alike). Sized, so a loop
    over it (``book.dry.loop``) reads the number of batches."""

    def __init__(self, perms: Sequence[torch.Tensor], size: int):
        n = {len(p) for p in perms}
        if len(n) != 1:
            raise ValueError(f"every seed's permutation must have one length, got {sorted(n)}")
        self.idx, self.size = torch.stack(list(perms)), size

    def __len__(self) -> int:
        return -(-self.idx.shape[1] // self.size)

    def __iter__(self):
        for i in range(0, self.idx.shape[1], self.size):
            yield self.idx[:, i:i + self.size]
