"""GRU4Rec-style GRU and LSTM next-item models, the recurrent baselines of Tables 1 and 2.

As the paper states ("embedding sharing is applied for all evaluated methods if not explicitly
stated"), the output layer reuses the item embedding: logits = h Eᵀ. The tie is made through two
*modules* sharing one Parameter (nn.Embedding and nn.Linear), the form that both Phantom Clipping
(:mod:`privtrans.shared.dp.phantom`) and opacus's hooks follow (a functional ``h @ E.T`` would be missed).

The cells are written out with plain ``nn.Linear`` layers (the standard GRU / LSTM equations of
Cho et al. 2014 and Hochreiter & Schmidhuber 1997): the input projection runs once over the whole
sequence, the recurrent projection once per step. So the same per-sample-gradient machinery as for
the Transformer applies (Linear, Embedding), and every method of Table 1 is clipped by the same
code. Padding (item 0) is zeroed at the input and masked out of the softmax, so no sample sends a
gradient to the padding row.
"""

from __future__ import annotations

import torch
from torch import nn


class RNNRec(nn.Module):
    """Embedding → dropout → GRU/LSTM → dropout → tied output layer; one prediction per position."""

    def __init__(self, n_items: int, d: int = 64, cell: str = "gru", dropout: float = 0.2, tie: bool = True):
        super().__init__()
        if cell not in ("gru", "lstm"):
            raise ValueError(f"cell must be 'gru' or 'lstm', got {cell!r}")
        if n_items < 1 or d < 1:
            raise ValueError(f"bad sizes: n_items={n_items}, d={d}")
        self.n_items, self.d, self.cell = n_items, d, cell
        gates = 3 if cell == "gru" else 4
        self.item_emb = nn.Embedding(n_items + 1, d, padding_idx=0)
        nn.init.normal_(self.item_emb.weight, std=d ** -0.5)
        with torch.no_grad():
            self.item_emb.weight[0].zero_()
        self.ih = nn.Linear(d, gates * d)
        self.hh = nn.Linear(d, gates * d)
        bound = d ** -0.5
        for lin in (self.ih, self.hh):
            nn.init.uniform_(lin.weight, -bound, bound)
            nn.init.uniform_(lin.bias, -bound, bound)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(d, n_items + 1, bias=False)
        if tie:
            self.out.weight = self.item_emb.weight
        self.tied = tie

    def encode(self, seq: torch.Tensor) -> torch.Tensor:
        """(B, L) item ids, left-padded with 0 → (B, L, d) states."""
        if seq.dim() != 2:
            raise ValueError(f"seq must be (B, L), got shape {tuple(seq.shape)}")
        mask = (seq > 0).unsqueeze(-1).to(self.item_emb.weight.dtype)
        xp = self.ih(self.drop(self.item_emb(seq) * mask))  # (B, L, gates·d), one call
        b, length, _ = xp.shape
        h = xp.new_zeros(b, self.d)
        c = xp.new_zeros(b, self.d)
        states = []
        for t in range(length):
            hp = self.hh(h)
            if self.cell == "gru":
                xr, xz, xn = xp[:, t].chunk(3, -1)
                hr, hz, hn = hp.chunk(3, -1)
                r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
                n = torch.tanh(xn + r * hn)
                h = (1 - z) * n + z * h
            else:
                i, f, g, o = (xp[:, t] + hp).chunk(4, -1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
            states.append(h)
        return self.drop(torch.stack(states, 1))

    def scores(self, h: torch.Tensor) -> torch.Tensor:
        """Logits over items from states (..., d); column 0 (padding) is -inf."""
        logits = self.out(h)
        return logits.masked_fill(_pad_column(logits), float("-inf"))

    def forward(self, seq: torch.Tensor) -> torch.Tensor:
        """Next-item logits (B, L, M+1) at every position (same interface as SASRec)."""
        return self.scores(self.encode(seq))


def _pad_column(logits: torch.Tensor) -> torch.Tensor:
    m = torch.zeros(logits.shape[-1], dtype=torch.bool, device=logits.device)
    m[0] = True
    return m
