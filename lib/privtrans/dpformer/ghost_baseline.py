"""The paper-style Ghost Clipping baseline of DPFormer's Figure 3.

Ghost clipping cannot tie the embedding, so the paper trains an *untied* model with the
embedding dimension halved (footnote 3), and its analysis charges the output layer as a second
embedding applied to the one-hot of all M candidates, a_c = I (Claim 3.1, A.2): per sample the
candidate embedding e_c ∈ R^{M×d/2} and its gradient are materialised, and the ghost norm
⟨a_c a_cᵀ, ∇e_c ∇e_cᵀ⟩ builds two M×M matrices (fastDP's embedding rule: an id-equality mask and a
Gram matrix). That is the O(B·M²) memory and O(B·M²·d) time of the paper's comparison.

``paper_ghost_model(n_items, max_len, d=64, **kw)`` returns that model (SASRec, untied, d/2, with a
:class:`CandidateLookupHead`); ``PaperGhostClipper(model, max_entries=None)`` is the clipper that
follows the paper's formulas everywhere. ``max_entries`` (optional) processes the M×M terms in
groups of samples so that a group holds at most that many entries: the time is unchanged, the
peak memory is capped (the benchmark uses it on a shared machine; the notebook says when).

A modern ghost clipping (opacus ≥ 1.5) treats an untied ``nn.Linear`` head with the T×T rule
instead, O(B·L²): that is the "opacus ghost" column of Figure 3, a much stronger baseline.
"""

from __future__ import annotations

import torch
from torch import nn

from .sasrec import SASRec
from privtrans.shared.dp.phantom import PhantomClipper


class CandidateLookupHead(nn.Module):
    """Scores = H · e_cᵀ with e_c = Emb(1..M) looked up per sample, as the paper's Ghost sees it."""

    def __init__(self, n_rows: int, d: int):
        super().__init__()
        self.n_rows = n_rows
        self.emb = nn.Embedding(n_rows, d)
        nn.init.normal_(self.emb.weight, std=d ** -0.5)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        cand = torch.arange(self.n_rows, device=h.device).repeat(h.shape[0], 1)  # a_c = I, (B, M)
        e_c = self.emb(cand)  # (B, M, d): materialised per sample
        return h @ e_c.transpose(1, 2)


def paper_ghost_model(n_items: int, max_len: int, d: int = 64, **kw) -> SASRec:
    """Untied SASRec with embedding dimension d/2 and a candidate-lookup output layer."""
    model = SASRec(n_items, max_len, d=d // 2, tied=False, **kw)
    model.head = CandidateLookupHead(n_items + 1, d // 2)
    return model


class PaperGhostClipper(PhantomClipper):
    """Ghost clipping with the paper's embedding rule (M×M terms for the candidate embedding)."""

    def __init__(self, model: nn.Module, *, max_entries: int | None = None, **kw):
        super().__init__(model, mode="ghost_all", **kw)
        self.max_entries = max_entries

    def _self_term(self, it) -> torch.Tensor:
        kind, ids, r = it
        if kind != "index":
            return super()._self_term(it)
        b, t = ids.shape
        step = b if self.max_entries is None else max(1, self.max_entries // (t * t))
        out = []
        for lo in range(0, b, step):
            i, x = ids[lo:lo + step], r[lo:lo + step]
            gram = torch.bmm(x, x.transpose(1, 2))  # ∇e ∇eᵀ, (b, T, T)
            gram.masked_fill_(i.unsqueeze(2) != i.unsqueeze(1), 0.0)  # ⊙ a aᵀ (id-equality mask)
            out.append(gram.sum((1, 2)))
            del gram
        return torch.cat(out)
