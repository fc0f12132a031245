"""Phantom Clipping: exact per-sample gradient norms, tied embeddings included, without per-sample grads.

Why
---
DP-SGD needs ‖g_i‖ for every sample i. Ghost clipping (Li et al. 2022) gets the norm of a Linear
layer's per-sample gradient gᵢ = Σ_t g_t a_tᵀ from two T×T Gram matrices, but it treats each
module on its own: when one weight E is used twice, as in a recommender whose item embedding is
tied to the output layer, ‖g_E‖² also has a cross term, and opacus 1.6 refuses the tie in ghost
mode. DPFormer's Phantom Clipping (Claim 3.1, corrected: notebooks/dpformer/02_claim31_phantom_exact.md) writes

    ‖g_E‖² = N1 + N2 + 2·N3,
    N1 = Σ_{t,u} 1[s_t = s_u] ⟨∇e_t, ∇e_u⟩          (input lookup, ghost identity)
    N2 = ⟨G Gᵀ, H Hᵀ⟩                                (output layer, logits grad G, hidden H)
    N3 = Σ_{t,u} G[u, s_t] ⟨∇e_t, H_u⟩               (cross term: a gather of G by the input ids)

How (book-keeping, one backward)
--------------------------------
Every use of a parameter contributes a per-sample gradient in *factored* form Σ_t L_t R_tᵀ:
nn.Linear / a tied output head: L = grad of the output (B,T,out), R = input (B,T,in);
nn.Embedding: L = one-hot of the ids (kept as ids), R = grad of the lookup output. The squared norm
of a sum of such contributions is Σ_i self(i) + 2 Σ_{i<j} cross(i, j), and every term is a sum over
(t, u) of products of two small Gram-like quantities, so nothing of size B·M·d is ever built (a
dense self-term is materialised instead when that is cheaper: T² > in·out). N1/N2/N3 above are
exactly self(embedding), self(head) and cross(embedding, head). LayerNorm gets its exact (B, d)
per-sample gradients; biases Σ_t g_t. One backward pass computes only activation gradients (no
weight gradients); the clipped sum Σ_i c_i g_i is then formed from the stored factors.

Safety: a parameter used outside the recorded modules (e.g. a functional tie ``h @ emb.weight.T``)
would get a wrong norm. The first ``backward`` of each clipper (and every one with ``validate``)
therefore also asks autograd for the ordinary summed gradient and checks that the factors
reconstruct it; it raises otherwise. Modules with parameters of an unsupported type raise at once.

API
---
``clipper = PhantomClipper(model)``; then per step::

    with clipper.capture():
        losses = per_sample_loss(model(x), y)     # (B,)
    norms = clipper.backward(losses)              # (B,) exact per-sample gradient norms
    clipper.write_clipped_sum(factors)            # p.grad = Σ_i factors[i] · g_i (no noise)

``clipper.per_param_sq_norms`` (dict name -> (B,)) is kept after ``backward`` for inspection, and
``clipper.per_param_terms[name]`` the terms of a factored parameter: ``self[i:kind]`` and
``cross[i,j]`` (counted twice in the norm). For the tied SASRec embedding, uses are recorded in
call order (lookup first, head last), so self[0:index] = N1, self[1:dense] = N2, cross[0,1] = N3.
``PhantomClipper(model, cross_terms=False)`` drops the cross terms (wrong; used to show it).
``PhantomClipper(model, mode="ghost_all")`` always uses the Gram (ghost) form for dense terms
(the DPFormer chapter builds its paper-style Ghost baseline of Figure 3 on it).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from torch import nn

SUPPORTED = (nn.Linear, nn.Embedding, nn.LayerNorm)


@dataclass
class _Use:
    """One recorded call of a supported module."""

    module: nn.Module
    inp: torch.Tensor  # activation (Linear, LayerNorm) or ids (Embedding), detached
    out: torch.Tensor  # live output tensor; its gradient is asked from autograd
    grad: torch.Tensor | None = None


def _flat3(x: torch.Tensor) -> torch.Tensor:
    """(B, ..., k) -> (B, T, k); a 2-D (B, k) activation is one position."""
    if x.dim() == 2:
        return x.unsqueeze(1)
    return x.reshape(x.shape[0], -1, x.shape[-1])


class PhantomClipper:
    def __init__(self, model: nn.Module, *, cross_terms: bool = True, mode: str = "auto",
                 validate: str = "first", rtol: float = 1e-3):
        if mode not in ("auto", "ghost_all"):
            raise ValueError(f"mode must be 'auto' or 'ghost_all', got {mode!r}")
        if validate not in ("first", "always", "never"):
            raise ValueError(f"validate must be 'first', 'always' or 'never', got {validate!r}")
        self.model, self.cross_terms, self.mode = model, cross_terms, mode
        self.validate, self.rtol = validate, rtol
        self._validated = False
        owned = {}
        for mname, mod in model.named_modules():
            for pname, p in mod.named_parameters(recurse=False):
                if not p.requires_grad:
                    continue
                if not isinstance(mod, SUPPORTED):
                    raise NotImplementedError(
                        f"parameter {mname}.{pname} belongs to {type(mod).__name__}; Phantom "
                        f"supports only {', '.join(c.__name__ for c in SUPPORTED)}")
                if isinstance(mod, nn.LayerNorm) and pname not in ("weight", "bias"):
                    raise NotImplementedError(f"unexpected LayerNorm parameter {mname}.{pname}")
                owned.setdefault(id(p), (f"{mname}.{pname}".lstrip("."), p))
        self.params = dict(owned.values())  # name -> Parameter (tied parameters once)
        self._name_of = {id(p): n for n, p in self.params.items()}
        self.uses: list[_Use] = []
        self.per_param_sq_norms: dict[str, torch.Tensor] = {}
        self.per_param_terms: dict[str, dict[str, torch.Tensor]] = {}
        self._handles = []

    # -- recording -------------------------------------------------------------------------
    @contextlib.contextmanager
    def capture(self):
        """Record every call of a supported module during the forward passes inside the block."""
        self.uses = []
        for mod in self.model.modules():
            if isinstance(mod, SUPPORTED) and any(p.requires_grad for p in mod.parameters(recurse=False)):
                self._handles.append(mod.register_forward_hook(self._hook))
        try:
            yield self
        finally:
            for h in self._handles:
                h.remove()
            self._handles = []

    def _hook(self, module, inputs, output):
        if not torch.is_grad_enabled() or not output.requires_grad:
            return
        self.uses.append(_Use(module, inputs[0].detach(), output))

    # -- gradients of the recorded outputs --------------------------------------------------
    def backward(self, losses: torch.Tensor) -> torch.Tensor:
        """One backward pass of Σ_i losses[i]; returns the (B,) exact per-sample gradient norms."""
        if losses.dim() != 1:
            raise ValueError(f"losses must be the (B,) per-sample losses, got shape {tuple(losses.shape)}")
        if not self.uses:
            raise RuntimeError("no module call was recorded: run the forward inside `with clipper.capture():`")
        bad = sorted({type(u.module).__name__ for u in self.uses if u.out.shape[0] != losses.shape[0]})
        if bad:
            raise ValueError(f"{', '.join(bad)} saw a leading dimension other than the batch size "
                             f"{losses.shape[0]}: Phantom needs batch-first activations (no flattening "
                             f"of the batch into other dimensions)")
        outs = [u.out for u in self.uses]
        check = self.validate == "always" or (self.validate == "first" and not self._validated)
        params = list(self.params.values()) if check else []
        grads = torch.autograd.grad(losses.sum(), outs + params, allow_unused=True)
        for u, g in zip(self.uses, grads[:len(outs)]):
            u.grad = torch.zeros_like(u.out) if g is None else g.detach()
        self._batch = losses.shape[0]
        self._contribs = self._collect()
        if check:
            self._check(dict(zip(self.params, grads[len(outs):])))
            self._validated = True
        self.per_param_terms = {}
        self.per_param_sq_norms = {n: self._sq_norm(n, c) for n, c in self._contribs.items()}
        total = sum(self.per_param_sq_norms.values())
        return total.clamp(min=0).sqrt()

    def _collect(self) -> dict[str, list[tuple]]:
        """Per parameter, its contributions: ("dense", L, R), ("index", ids, R) or ("vec", G)."""
        contribs: dict[str, list[tuple]] = {n: [] for n in self.params}

        def add(p, item):
            if p is not None and id(p) in self._name_of:
                contribs[self._name_of[id(p)]].append(item)

        for u in self.uses:
            mod, g = u.module, u.grad
            if isinstance(mod, nn.Linear):
                g3, a3 = _flat3(g), _flat3(u.inp)
                add(mod.weight, ("dense", g3, a3))
                add(mod.bias, ("vec", g3.sum(1)))
            elif isinstance(mod, nn.Embedding):
                ids = u.inp.reshape(u.inp.shape[0], -1)
                r = g.reshape(ids.shape[0], ids.shape[1], -1)
                if mod.padding_idx is not None:  # autograd gives the pad row no gradient
                    r = r * (ids != mod.padding_idx).unsqueeze(-1).to(r.dtype)
                add(mod.weight, ("index", ids, r))
            elif isinstance(mod, nn.LayerNorm):
                x, nd = u.inp, len(mod.normalized_shape)
                dims = tuple(range(x.dim() - nd, x.dim()))
                var, mean = torch.var_mean(x, dims, unbiased=False, keepdim=True)
                xhat = (x - mean) / torch.sqrt(var + mod.eps)
                sum_dims = tuple(range(1, x.dim() - nd))
                add(mod.weight, ("vec", (g * xhat).sum(sum_dims) if sum_dims else g * xhat))
                add(mod.bias, ("vec", g.sum(sum_dims) if sum_dims else g))
        return contribs

    # -- norms ------------------------------------------------------------------------------
    def _sq_norm(self, name: str, items: list[tuple]) -> torch.Tensor:
        b = self._batch
        if not items:
            return torch.zeros(b, device=self.params[name].device)
        kinds = {it[0] for it in items}
        if "vec" in kinds:
            if kinds != {"vec"}:
                raise NotImplementedError("a parameter used both by LayerNorm-like and Linear/Embedding modules")
            v = sum(it[1] for it in items)
            return v.reshape(b, -1).pow(2).sum(1)
        terms = {f"self[{i}:{it[0]}]": self._self_term(it) for i, it in enumerate(items)}
        if self.cross_terms:
            for i in range(len(items)):
                for j in range(i + 1, len(items)):
                    terms[f"cross[{i},{j}]"] = self._cross_term(items[i], items[j])
        self.per_param_terms[name] = terms
        return sum(v if k.startswith("self") else 2 * v for k, v in terms.items())

    def _self_term(self, it) -> torch.Tensor:
        kind, left, r = it
        if kind == "index":
            return _index_index(left, r, left, r)
        t = left.shape[1]
        if self.mode == "auto" and t * t > left.shape[2] * r.shape[2]:
            per_sample = torch.einsum("btp,btq->bpq", left, r)  # cheaper than two T×T Grams
            return per_sample.pow(2).sum((1, 2))
        return _dense_dense(left, r, left, r)

    @staticmethod
    def _cross_term(x, y) -> torch.Tensor:
        if x[0] == "dense" and y[0] == "index":
            x, y = y, x
        if x[0] == "index" and y[0] == "index":
            return _index_index(x[1], x[2], y[1], y[2])
        if x[0] == "index":
            return _index_dense(x[1], x[2], y[1], y[2])
        return _dense_dense(x[1], x[2], y[1], y[2])

    # -- clipped sum ------------------------------------------------------------------------
    def summed_grads(self, factors: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Σ_i factors[i]·g_i per parameter (factors None = 1: the ordinary summed gradient)."""
        out = {}
        for name, items in self._contribs.items():
            p = self.params[name]
            acc = torch.zeros_like(p)
            for item in items:
                kind, left, r = item if len(item) == 3 else (*item, None)
                if kind == "vec":
                    w = left if factors is None else left * factors.view(-1, *[1] * (left.dim() - 1))
                    acc += w.sum(0).view_as(p)
                    continue
                rw = r if factors is None else r * factors.view(-1, 1, 1)
                if kind == "dense":
                    acc += left.reshape(-1, left.shape[-1]).T @ rw.reshape(-1, rw.shape[-1])
                else:
                    acc.index_add_(0, left.reshape(-1), rw.reshape(-1, rw.shape[-1]))
            out[name] = acc
        return out

    def write_clipped_sum(self, factors: torch.Tensor) -> None:
        """Set p.grad = Σ_i factors[i]·g_i for every parameter (noise is added by the optimizer)."""
        if factors.shape != (self._batch,):
            raise ValueError(f"factors must have shape ({self._batch},), got {tuple(factors.shape)}")
        for name, g in self.summed_grads(factors.detach()).items():
            self.params[name].grad = g
        self.uses, self._contribs = [], {}  # free the stored activations

    def _check(self, auto: dict[str, torch.Tensor | None]) -> None:
        recon = self.summed_grads(None)
        refs = {n: torch.zeros_like(recon[n]) if r is None else r for n, r in auto.items()}
        # float32 rounding of a sum over the batch reaches ~1e-6 absolute: a parameter whose gradient
        # is that small (TAFT's final Δβ at Δ = 0: 1.6e-6 against a whole gradient of 26) is judged
        # against the whole gradient's norm, which a missed use of any size-relevant weight exceeds
        whole = torch.sqrt(sum((r.double() ** 2).sum() for r in refs.values()))
        for name, ref in refs.items():
            err = (recon[name] - ref).norm()
            if err > self.rtol * ref.norm() + 1e-6 + 1e-5 * whole:
                raise RuntimeError(
                    f"Phantom Clipping does not see every use of parameter {name!r}: the recorded "
                    f"module calls do not rebuild autograd's gradient (no norms are printed: they are "
                    f"statistics of the private batch). Is it used functionally (e.g. `h @ emb.weight.T`)? Tie "
                    f"weights through modules (nn.Linear.weight = nn.Embedding.weight) instead.")


# -- the three kinds of Gram products (all (B,) results) ---------------------------------------
def _dense_dense(l1, r1, l2, r2):
    """⟨Σ_t l1_t r1_tᵀ, Σ_u l2_u r2_uᵀ⟩ = Σ_{t,u} ⟨l1_t, l2_u⟩⟨r1_t, r2_u⟩."""
    return (torch.bmm(l1, l2.transpose(1, 2)) * torch.bmm(r1, r2.transpose(1, 2))).sum((1, 2))


def _index_index(ids1, r1, ids2, r2):
    """One-hot lefts: Σ_{t,u} 1[ids1_t = ids2_u]⟨r1_t, r2_u⟩."""
    same = (ids1.unsqueeze(2) == ids2.unsqueeze(1)).to(r1.dtype)
    return (same * torch.bmm(r1, r2.transpose(1, 2))).sum((1, 2))


def _index_dense(ids, r1, l2, r2):
    """One-hot left vs dense left: Σ_{t,u} l2[u, ids_t]⟨r1_t, r2_u⟩ (a gather, no one-hot)."""
    b, t = ids.shape
    gathered = torch.gather(l2, 2, ids.unsqueeze(1).expand(b, l2.shape[1], t))  # (B, U, T)
    return (gathered * torch.bmm(r2, r1.transpose(1, 2))).sum((1, 2))
