"""A synthetic long-tailed setting built on the paper's premise: popular items drive, rare items distract.

Why: at CPU scale the MovieLens runs end near the MostPopular level, where no comparison between DP
Transformers can show. The paper's argument (§4.1) is that on long-tailed data the rare items' noisy
keys draw attention away from the tokens that matter. This generator makes that the whole task:

- item popularity is Zipf(``alpha``) over ``n_items`` items (ranks randomly permuted over the ids);
  the ``n_head`` most popular are the *head*, every other item is the *tail*;
- every head item h has one successor ``succ[h]``, another head item (a random permutation of the
  head), so what is worth predicting is popular;
- each user's sequence starts with a popularity draw; afterwards, with probability ``rho`` the next
  item is the successor of the *most recent head item* of the history (the trigger), otherwise it
  is an independent popularity draw (head or tail). Tail items carry no information about what
  comes next: they are distractors sitting between the trigger and the query, at any position.

So a model that attends to the last head item and maps it through ``succ`` reaches the oracle; one
that attends to the last item, whatever it is, is misled whenever that is a tail item; one that
ignores the history is MostPopular. Every sequence has ``length`` items (no filtering, every user
is kept), drawn from ``numpy.random.default_rng(seed)``, so the same arguments give the same data.
``oracle_scores`` ranks items by the true next-item probability.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .data import SeqData


@dataclass(frozen=True)
class TriggerModel:
    """The true generative structure (item ids 1..M, 0 = padding)."""

    popularity: np.ndarray  # (M+1,) probability of an independent draw; entry 0 is 0
    successor: np.ndarray   # (M+1,) successor of each head item, 0 for tail items and padding
    rho: float

    @property
    def head(self) -> np.ndarray:
        """Boolean (M+1,) mask of the head (trigger) items."""
        return self.successor > 0


def popular_trigger(n_users: int = 20_000, n_items: int = 400, alpha: float = 1.2, n_head: int = 40,
                    length: int = 14, rho: float = 0.6, seed: int = 0) -> tuple[SeqData, TriggerModel]:
    """Draw ``n_users`` sequences of ``length`` items; return them with the true model."""
    if not 0 < rho < 1:
        raise ValueError(f"rho must lie in (0, 1), got {rho}")
    if not 2 <= n_head < n_items:
        raise ValueError(f"need 2 <= n_head < n_items, got n_head={n_head}, n_items={n_items}")
    if min(n_users, length - 2) < 1 or alpha <= 0:
        raise ValueError(f"need n_users >= 1, length >= 3 and alpha > 0, got {n_users}, {length}, {alpha}")
    rng = np.random.default_rng(seed)
    pop = np.zeros(n_items + 1)
    pop[1:] = rng.permutation(np.arange(1, n_items + 1, dtype=float) ** -alpha)
    pop /= pop.sum()
    head = np.argsort(-pop[1:], kind="stable")[:n_head] + 1
    succ = np.zeros(n_items + 1, dtype=np.int64)
    succ[head] = rng.permutation(head)

    seq = np.zeros((n_users, length), dtype=np.int64)
    seq[:, 0] = rng.choice(n_items + 1, size=n_users, p=pop)
    trigger = np.where(succ[seq[:, 0]] > 0, seq[:, 0], 0)   # the most recent head item so far (0: none)
    for t in range(1, length):
        draw = rng.choice(n_items + 1, size=n_users, p=pop)
        follow = (rng.random(n_users) < rho) & (trigger > 0)
        seq[:, t] = np.where(follow, succ[trigger], draw)
        trigger = np.where(succ[seq[:, t]] > 0, seq[:, t], trigger)

    data = SeqData("Popular-trigger (synthetic)", list(seq), n_items)
    data.meta["generator"] = dict(n_users=n_users, n_items=n_items, alpha=alpha, n_head=n_head, length=length,
                                  rho=rho, seed=seed)
    return data, TriggerModel(pop, succ, rho)


def last_trigger(model: TriggerModel, histories: np.ndarray) -> np.ndarray:
    """(N,) the most recent head item of each left-padded history (0 when it has none)."""
    is_head = model.head[histories]
    last = histories.shape[1] - 1 - np.argmax(is_head[:, ::-1], axis=1)
    return np.where(is_head.any(1), histories[np.arange(len(histories)), last], 0)


def oracle_scores(model: TriggerModel, histories: np.ndarray) -> np.ndarray:
    """True next-item probabilities (N, M+1) given left-padded histories (N, L), pad = 0.

    The histories are what a model sees (the last L items); the generator's trigger may lie before
    them, so on a history without a head item the oracle falls back to popularity, as a model must.
    """
    trig = last_trigger(model, histories)
    has = trig > 0
    scores = np.tile(model.popularity, (len(histories), 1))
    scores[has] *= 1 - model.rho
    scores[np.flatnonzero(has), model.successor[trig[has]]] += model.rho
    scores[:, 0] = 0
    return scores


def attention_mass(last_row, histories: np.ndarray, model: TriggerModel) -> dict:
    """Where the last query row's attention goes (N, L probabilities over the history's positions):
    mean mass on tail items (the distractors) and, over histories that have one, on the trigger (the
    most recent head item), the position the oracle reads; and ``tail_uniform``, the mass uniform
    attention over the non-pad positions would put on tail items (the share of tail items in the
    history), against which a lean to the tail is read: a model that has learnt nothing attends
    about uniformly, which is more tail mass than a trained model's without any lean to the tail."""
    a = np.asarray(last_row, dtype=float)
    h = np.asarray(histories)
    if a.shape != h.shape:
        raise ValueError(f"attention {a.shape} and histories {h.shape} must have the same shape")
    tail = (h > 0) & ~model.head[h]
    is_head = model.head[h]
    has = is_head.any(1)
    last = h.shape[1] - 1 - np.argmax(is_head[:, ::-1], axis=1)
    real = (h > 0).sum(1)
    uniform = np.where(real > 0, tail.sum(1) / np.maximum(real, 1), np.nan)
    return {"tail": float((a * tail).sum(1).mean()), "tail_uniform": float(np.nanmean(uniform)),
            "trigger": float(a[np.arange(len(a)), last][has].mean()) if has.any() else float("nan")}
