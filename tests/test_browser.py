"""The smoke-built book opened in a real headless browser (Debian's chromium, driven by selenium
through Debian's chromedriver; nothing is downloaded). Every page of the HTML is served over
http://127.0.0.1 (file:// would hide failed requests) and must load with no console error, no failed
request and no request leaving the book's origin; every image must have loaded and, where a page has
math, MathJax must have typeset it. Every internal link must resolve to a file and anchor of the
build. Screenshots of the landing page and of each chapter's page go to _build/screenshots/ of the
checkout under test.

The browser works on a copy of the HTML in a thread of its own, beside the book's other tests
(``browsed`` in conftest.py, book_beside.BrowserWalk); these tests read what it found. The link
test reads the copy only (``served_book``): run alone, it starts no browser.

No browser: a skip saying how to install one, except in CI (CI=true), where it is a failure."""

from __future__ import annotations

import functools
import os
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import pytest

from book_beside import pages

INSTALL = "apt-get install chromium chromium-driver  (Debian/Ubuntu; `make browser` does it as root)"
pytestmark = pytest.mark.book


def _need_browser(walk):
    if walk.missing:
        msg = f"no headless browser ({', '.join(walk.missing)} missing): {INSTALL}"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg + "; CI=true, so the browser test may not be skipped")
        pytest.skip(msg)


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])


@functools.lru_cache(maxsize=None)
def _parse(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(encoding="utf-8", errors="replace"))
    return p


def test_every_page_loads_clean_in_a_real_browser(browsed):
    _need_browser(browsed)
    problems, math_pages, image_count, loaded = browsed.walk.result()
    assert "book/intro.html" in loaded and len(loaded) > 10, loaded
    assert not problems, "\n".join(problems)
    assert math_pages > 0 and image_count > 0  # the checks above actually saw math and images


def test_every_internal_link_resolves(served_book):
    html = served_book.html
    broken = []
    for rel in pages(html):
        page = html / rel
        for href in _parse(page).hrefs:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
                continue  # external links may be shown; the browser test checks none is fetched
            target, frag = urldefrag(urljoin(page.as_uri(), href))
            path = Path(unquote(urlsplit(target).path))
            if path.is_dir():
                path = path / "index.html"
            if not path.is_file():
                broken.append(f"{rel}: {href} -> no file {path.relative_to(html) if html in path.parents else path}")
            elif frag and path.suffix == ".html" and unquote(frag) not in _parse(path).ids:
                broken.append(f"{rel}: {href} -> no anchor #{frag} in {path.relative_to(html)}")
    assert not broken, "\n".join(broken)


def test_screenshots_of_the_landing_page_and_every_chapter(browsed):
    _need_browser(browsed)
    for name in browsed.screenshots.result():
        shot = browsed.shots / f"{name}.png"
        assert shot.stat().st_size > 10_000, f"{name}.png looks empty"
