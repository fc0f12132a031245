"""The three GLUE stand-in tasks from the Rotten-Tomatoes and Amazon snippets of VADER's sdist.

``data/mpc_attention/*_GroundTruth.txt.gz`` are the files of the vaderSentiment 3.3.2 source
distribution on PyPI (``additional_resources/hutto_ICWSM_2014.tar.gz``; MIT, C.J. Hutto), gzipped,
with their sha256 checked here (the README gives the provenance). Rows: id, mean human rating in
[-4, 4], sentence. The movie snippets are the source sentences of SST.

- ``mr2`` (SST-2 stand-in): movie snippets, label rating > 0, rating 0 dropped; accuracy.
- ``mrreg`` (STS-B stand-in): the same snippets, target the rating / 4 (in [-1, 1]); the paper's
  metric (Pearson + Spearman) / 2.
- ``pair`` (RTE stand-in): two Amazon snippets joined by [SEP] with segment ids, label "the second
  is more positive than the first"; accuracy. Snippets are split into train and dev before pairing
  (no snippet is in both), each is paired at most ``PAIRS_PER_SNIPPET`` times, and pairs whose
  ratings differ by less than ``MIN_GAP`` are dropped (the human ratings are noisy). The label needs
  both segments, as entailment does. An earlier "same polarity" label left a 2-layer teacher at
  chance: it is an XOR of two polarities, which the model did not learn from ~1 400 pairs.

Tokeniser: lower-cased regex words, vocabulary from the training split (no pretrained vocabulary
exists offline; the paper's WordPiece model is BERT-Base-Cased's).

Vocabulary size: the same for every seed of one (task, settings), so that the seeds' encoders have
one shape (made for a vectorised trainer of several seeds, since deleted: one shape keeps the
recorded runs as they are). Each seed's words still come from its own training split (no dev word gets its own
embedding, as before), but their number is that of a *reference* draw, ``REFERENCE_SEED``'s
training split, whatever the run's seed (``vocab_rows``): a seed whose split has more words keeps
its most frequent ones (the dropped words are its rarest kept ones, two occurrences, and become
[UNK]), one with fewer is padded with ``[unusedN]`` rows that no text maps to (BERT's vocabulary
has such rows too); a padded row is never looked up, so its gradient is 0 and only AdamW's weight
decay touches it. At ci (seeds 0-4) that is at most 46 words cut or 54 rows padded of ~5 400 (mr2,
mrreg) and ~4 160 (pair). Why this and not the profile's cap (``vocab_size`` rows for every seed)
or one vocabulary from the whole snippet pool: the secure forward (CrypTen and SPU) shares a one-hot
(T, V) input and multiplies it by the (V, d) table, so the cost tables grow with V; the cap would
make V 8 004 for every task (+47 % for mr2, +92 % for pair), the pool 8 004 (movie) or 2 837
(amazon), while this keeps seed 0's vocabulary, data and V exactly as they were (the costs are
measured with the first seed's teacher, seed 0 in the book).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch

from privtrans.book import paths

FILES = {
    "movie": ("movieReviewSnippets_GroundTruth.txt.gz",
              "c8293b0d942e90e223ea2c0955d969040d1a1be514a978b9af0698940bd13350"),
    "amazon": ("amazonReviewSnippets_GroundTruth.txt.gz",
               "11a9807a0974a2506a2d3b4851eaf69b3d6d20688ce4923adda2312a4f6dd6c2"),
}
TASKS = ("mr2", "mrreg", "pair")
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")
PAD, UNK, CLS, SEP = range(4)
PAIRS_PER_SNIPPET = 3
MIN_GAP = 1.0  # rating points (of -4..4) between the two snippets of a pair
REFERENCE_SEED = 0  # the draw whose training-split vocabulary size every seed's vocabulary takes
TOKEN = re.compile(r"[a-z0-9']+|[^\sa-z0-9']")


def check_task(task: str) -> str:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}: allowed values are {', '.join(TASKS)}")
    return task


def snippets(source: str) -> list[tuple[float, str]]:
    """(rating, sentence) rows of one ground-truth file, after checking its sha256."""
    if source not in FILES:
        raise ValueError(f"unknown snippet source {source!r}: allowed values are {', '.join(FILES)}")
    name, sha = FILES[source]
    raw = gzip.decompress((paths.data_dir("mpc_attention") / name).read_bytes())
    if hashlib.sha256(raw).hexdigest() != sha:
        raise ValueError(f"{name}: sha256 differs from the vaderSentiment 3.3.2 file")
    rows = []
    for line in raw.decode("utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3:
            rows.append((float(parts[1]), "\t".join(parts[2:]).strip()))
    return rows


def tokenize(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


class Vocab:
    """Words of the training split with count >= ``min_count``, at most ``size`` (plus specials);
    with ``rows``, cut or padded (``[unusedN]``, never produced by ``tokenize``) to ``rows`` entries."""

    def __init__(self, texts, size: int = 8000, min_count: int = 2, rows: int | None = None):
        counts = Counter(w for t in texts for w in tokenize(t))
        if rows is not None:
            size = min(size, rows - len(SPECIALS))
        words = [w for w, c in counts.most_common(size) if c >= min_count]
        if rows is not None:
            words += [f"[unused{i}]" for i in range(rows - len(SPECIALS) - len(words))]
        self.itos = list(SPECIALS) + words
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def ids(self, text: str) -> list[int]:
        return [self.stoi.get(w, UNK) for w in tokenize(text)]


@dataclass
class Split:
    ids: torch.Tensor     # (N, T) long, [CLS] a [SEP] (b [SEP]), padded with [PAD]
    mask: torch.Tensor    # (N, T) float 0/1
    types: torch.Tensor   # (N, T) long segment ids
    y: torch.Tensor       # (N,) long labels or float targets

    def __len__(self):
        return len(self.y)

    def batches(self, size: int, shuffle: bool = False, seed: int = 0) -> "Batches":
        """(ids, mask, types, y) batches of ``size`` in order, or shuffled by ``seed``."""
        idx = torch.randperm(len(self), generator=torch.Generator().manual_seed(seed)) if shuffle \
            else torch.arange(len(self))
        return Batches(self, idx, size)


@dataclass
class Batches:
    """A split's batches in one order: an iterable that knows how many it yields, so a training loop
    (``book.dry.loop``, a progress bar) can read the count instead of computing it again."""

    split: Split
    order: torch.Tensor
    size: int

    def __len__(self):
        return -(-len(self.order) // self.size)

    def __iter__(self):
        s = self.split
        for i in range(0, len(self.order), self.size):
            j = self.order[i:i + self.size]
            yield s.ids[j], s.mask[j], s.types[j], s.y[j]


@dataclass
class Task:
    name: str
    vocab: Vocab
    train: Split
    dev: Split
    n_out: int            # 2 classes, or 1 for regression
    max_len: int


def _encode(vocab, pairs, max_len):
    ids = torch.full((len(pairs), max_len), PAD, dtype=torch.long)
    types = torch.zeros_like(ids)
    for r, (a, b) in enumerate(pairs):
        ta = vocab.ids(a)
        if b is None:
            seq, typ = [CLS] + ta[:max_len - 2] + [SEP], None
        else:
            tb = vocab.ids(b)
            half = (max_len - 3) // 2
            ta, tb = ta[:half], tb[:max_len - 3 - min(len(ta), half)]
            seq = [CLS] + ta + [SEP] + tb + [SEP]
            typ = [0] * (len(ta) + 2) + [1] * (len(tb) + 1)
        ids[r, :len(seq)] = torch.tensor(seq)
        if typ is not None:
            types[r, :len(typ)] = torch.tensor(typ)
    return ids, (ids != PAD).float(), types


def _pairs(rows, rng) -> list:
    """((a, b), second-more-positive) items from disjoint random pairings of ``rows``, repeated
    ``PAIRS_PER_SNIPPET`` times; pairs closer than ``MIN_GAP`` are dropped."""
    items = []
    for _ in range(PAIRS_PER_SNIPPET):
        order = rng.permutation(len(rows))
        for i in range(0, len(order) - 1, 2):
            (ra, a), (rb, b) = rows[order[i]], rows[order[i + 1]]
            if abs(ra - rb) >= MIN_GAP:
                items.append(((a, b), int(rb > ra)))
    return items


def _items(task: str, seed: int) -> tuple[list, list]:
    """(train, dev) items of one seed's draw, before the cut to ``n_train`` / ``n_dev``."""
    rng = np.random.default_rng(seed)
    if task in ("mr2", "mrreg"):
        rows = [r for r in snippets("movie") if task == "mrreg" or r[0] != 0]
        rows = [rows[i] for i in rng.permutation(len(rows))]
        items = [((t, None), (1 if r > 0 else 0) if task == "mr2" else r / 4.0) for r, t in rows]
        n = len(items)
        tr, dv = items[: int(0.8 * n)], items[int(0.8 * n): int(0.9 * n)]
    else:
        amazon = snippets("amazon")
        rows = [amazon[i] for i in rng.permutation(len(amazon))]
        n = len(rows)
        tr, dv = _pairs(rows[: int(0.8 * n)], rng), _pairs(rows[int(0.8 * n): int(0.9 * n)], rng)
    return tr, dv


def _texts(items) -> list[str]:
    return [t for (a, b), _ in items for t in (a, b) if t]


@functools.lru_cache(maxsize=None)
def vocab_rows(task: str, n_train: int | None = None, vocab_size: int = 8000) -> int:
    """Vocabulary entries (specials included) of every seed: those of ``REFERENCE_SEED``'s split."""
    tr, _ = _items(check_task(task), REFERENCE_SEED)
    return len(Vocab(_texts(tr[:n_train] if n_train else tr), size=vocab_size))


def load(task: str, n_train: int | None = None, n_dev: int | None = None, max_len: int = 48,
         seed: int = 0, vocab_size: int = 8000) -> Task:
    """One task, split 80/10 (train/dev; the rest unused) with a fixed shuffle, optionally cut.
    The vocabulary has ``vocab_rows(task, n_train, vocab_size)`` entries for every seed."""
    check_task(task)
    tr, dv = _items(task, seed)
    tr, dv = tr[:n_train] if n_train else tr, dv[:n_dev] if n_dev else dv
    vocab = Vocab(_texts(tr), size=vocab_size, rows=vocab_rows(task, n_train, vocab_size))
    ydtype = torch.float32 if task == "mrreg" else torch.long

    def split(part):
        ids, mask, types = _encode(vocab, [x for x, _ in part], max_len)
        return Split(ids, mask, types, torch.tensor([y for _, y in part], dtype=ydtype))

    return Task(task, vocab, split(tr), split(dv), 1 if task == "mrreg" else 2, max_len)
