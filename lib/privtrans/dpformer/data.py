"""Sequences for next-item recommendation: SASRec preprocessing and long-tail statistics.

The raw MovieLens-100K file comes from :mod:`privtrans.shared.datasets.movielens` (the recbole
wheel's copy; the GroupLens licence forbids shipping it). Preprocessing follows Kang & McAuley
(2018), as the paper does (A.9.1): iterative 5-core filter, chronological order per user, the last
item of each sequence held out for testing. 49% of consecutive MovieLens events share a timestamp,
so the order is made deterministic by a stable tie-break: timestamp, then the row's position in the
file, then the item id.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from privtrans.shared.datasets import movielens


@dataclass
class SeqData:
    """One chronological item sequence per user; items are re-indexed 1..n_items, 0 is padding."""

    name: str
    seqs: list[np.ndarray]
    n_items: int
    meta: dict = field(default_factory=dict)

    @property
    def n_users(self) -> int:
        return len(self.seqs)

    @property
    def n_interactions(self) -> int:
        return int(sum(len(s) for s in self.seqs))

    def fingerprint(self) -> str:
        """A short hash of the sequences: part of every cache key, so new data never hits old models."""
        h = hashlib.sha256(f"{self.name}|{self.n_items}|".encode())
        for s in self.seqs:
            h.update(np.asarray(s, dtype=np.int32).tobytes())
            h.update(b"|")
        return h.hexdigest()[:16]


def k_core(df: pd.DataFrame, k: int = 5) -> pd.DataFrame:
    """Drop users and items with fewer than k interactions, repeatedly, until none is left."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    while True:
        n = len(df)
        ucount = df.groupby("user")["item"].transform("size")
        icount = df.groupby("item")["user"].transform("size")
        df = df[(ucount >= k) & (icount >= k)]
        if len(df) == n:
            return df.copy()


def to_sequences(df: pd.DataFrame, name: str) -> SeqData:
    """Chronological sequences with the stable tie-break; items re-indexed 1..M by original id."""
    if "row" not in df:
        df = df.assign(row=np.arange(len(df)))
    df = df.sort_values(["user", "timestamp", "row", "item"], kind="mergesort")
    items = np.sort(df["item"].unique())
    index = {it: i + 1 for i, it in enumerate(items)}
    mapped = df["item"].map(index).to_numpy(np.int64)
    users = df["user"].to_numpy()
    cut = np.flatnonzero(np.diff(users)) + 1 if len(users) else np.array([], int)
    seqs = [np.asarray(s, dtype=np.int64) for s in np.split(mapped, cut)] if len(users) else []
    return SeqData(name, seqs, len(items), {"item_ids": items})


def load_movielens(k: int = 5, path: str | Path | None = None) -> SeqData:
    """ML-100K after the k-core filter (943 users, 1,349 items at k = 5)."""
    data = to_sequences(k_core(movielens.read_ml100k(path), k), "MovieLens-100K")
    data.meta["source"] = (f"{movielens.PIN} wheel: {'/'.join(movielens.ML100K_RELPATH)} "
                           f"(GroupLens licence)")
    return data


@dataclass
class Split:
    """Leave-one-out: train on seq[:-1]; at test time the model reads seq[:-1] and must rank seq[-1]."""

    train: np.ndarray      # (N, L) left-padded training sequences (inputs and targets shifted inside)
    test_input: np.ndarray  # (N, L) left-padded history seen at test time
    test_target: np.ndarray  # (N,) held-out last item of each user
    n_items: int


def pad_left(seqs: list[np.ndarray], length: int) -> np.ndarray:
    """The last ``length`` items of each sequence, left-padded with 0."""
    if length < 1:
        raise ValueError(f"length must be >= 1, got {length}")
    out = np.zeros((len(seqs), length), dtype=np.int64)
    for i, s in enumerate(seqs):
        s = np.asarray(s)[-length:]
        if len(s):
            out[i, length - len(s):] = s
    return out


def leave_one_out(data: SeqData, max_len: int) -> Split:
    """Hold out the last item of every user.

    The training array holds ``max_len + 1`` items per user (the last max_len + 1 of seq[:-1]) so that a
    model trained on inputs ``train[:, :-1]`` and targets ``train[:, 1:]`` sees ``max_len`` positions.
    """
    short = [i for i, s in enumerate(data.seqs) if len(s) < 2]
    if short:
        raise ValueError(f"{len(short)} users have fewer than 2 items; apply k_core first")
    hist = [s[:-1] for s in data.seqs]
    return Split(
        train=pad_left(hist, max_len + 1),
        test_input=pad_left(hist, max_len),
        test_target=np.array([s[-1] for s in data.seqs], dtype=np.int64),
        n_items=data.n_items,
    )


def item_counts(data: SeqData) -> np.ndarray:
    """Interactions per item, index 0 (padding) included and always 0."""
    return np.bincount(np.concatenate(data.seqs), minlength=data.n_items + 1)


def long_tail_stats(data: SeqData) -> dict:
    """The statistics of Figure 5's embedded table, plus how heavy the tail is."""
    counts = np.sort(item_counts(data)[1:])[::-1]
    counts = counts[counts > 0]
    lens = np.array([len(s) for s in data.seqs])
    n_top = max(1, int(round(0.2 * len(counts))))
    ranks = np.arange(1, len(counts) + 1)
    slope = float(np.polyfit(np.log(ranks), np.log(counts), 1)[0])
    cum = np.cumsum(np.sort(counts)) / counts.sum()
    gini = float(1 - 2 * np.trapezoid(np.concatenate([[0], cum]), dx=1 / len(counts)))
    return {
        "dataset": data.name,
        "users": data.n_users,
        "items": int(len(counts)),
        "interactions": data.n_interactions,
        "avg_len": float(lens.mean()),
        "median_len": float(np.median(lens)),
        "density": data.n_interactions / (data.n_users * len(counts)),
        "top20_share": float(counts[:n_top].sum() / counts.sum()),
        "max_item_count": int(counts[0]),
        "median_item_count": float(np.median(counts)),
        "loglog_slope": slope,
        "gini": gini,
    }


def rank_frequency(data: SeqData) -> tuple[np.ndarray, np.ndarray]:
    """(rank, relative frequency) of items, most popular first, for the log-log plot."""
    counts = np.sort(item_counts(data)[1:])[::-1]
    counts = counts[counts > 0]
    return np.arange(1, len(counts) + 1), counts / counts.sum()
