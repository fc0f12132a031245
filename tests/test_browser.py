"""The smoke-built book opened in a real headless browser (Debian's chromium, driven by selenium
through Debian's chromedriver; nothing is downloaded). Every page of the HTML is served over
http://127.0.0.1 (file:// would hide failed requests) and must load with no console error, no failed
request and no request leaving the book's origin; every image must have loaded and, where a page has
math, MathJax must have typeset it. Every internal link must resolve to a file and anchor of the
build. Screenshots of the landing page and of each chapter's page go to _build/screenshots/ of the
checkout under test.

No browser: a skip saying how to install one, except in CI (CI=true), where it is a failure."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import tempfile
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.support.ui import WebDriverWait

from privtrans.book.chapters import KEYS as CHAPTERS

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
WAIT_S = 45  # per page, for images and MathJax's first typeset on a loaded 2-core machine
INSTALL = "apt-get install chromium chromium-driver  (Debian/Ubuntu; `make browser` does it as root)"
pytestmark = pytest.mark.book


def _need_browser():
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).is_file()]
    if missing:
        msg = f"no headless browser ({', '.join(missing)} missing): {INSTALL}"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg + "; CI=true, so the browser test may not be skipped")
        pytest.skip(msg)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    failed: list[str]

    def log_message(self, *args):  # a request line per file would drown pytest's output
        pass

    def send_error(self, code, *args, **kwargs):
        self.failed.append(f"{code} {self.path}")
        super().send_error(code, *args, **kwargs)


@pytest.fixture(scope="module")
def served(book):
    root, _ = book
    html = root / "_build" / "html"
    failed: list[str] = []
    handler = type("Handler", (_Quiet,), {"failed": failed})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(html)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield html, f"http://127.0.0.1:{server.server_address[1]}/", failed
    server.shutdown()


@pytest.fixture(scope="module")
def driver():
    _need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    # without the background-networking flags chromium keeps dialling Google and logs refused connections
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,900", f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    # an explicit driver path: selenium-manager (which would download a driver) never runs
    drv = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    drv.set_page_load_timeout(60)
    drv.set_script_timeout(WAIT_S + 30)  # _INSPECT bounds its own waits by WAIT_S
    drv.get("about:blank")  # the start page's own (chrome://) requests go before the first book page
    drv.get_log("browser"), drv.get_log("performance")
    yield drv
    drv.quit()
    shutil.rmtree(profile, ignore_errors=True)


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


_REFRESH = re.compile(r'http-equiv="Refresh"[^>]*url=([^"\s]+)"', re.I)


def _pages(html: Path) -> list[str]:
    return sorted(str(p.relative_to(html)) for p in html.rglob("*.html") if "_static" not in p.parts)


# Waits for every image (lazy ones made eager) and for MathJax's first typeset, then reports them.
# Every wait is bounded (arguments[0] ms) and a wait that ran out is reported by name, so a slow or
# stuck page becomes a readable problem for that page instead of a WebDriver script timeout.
_INSPECT = """
const limit = arguments[0], done = arguments[arguments.length - 1];
const late = [];
const bounded = (name, p) => Promise.race([p, new Promise(r => setTimeout(() => { late.push(name); r(); }, limit))]);
const imgs = Array.from(document.images);
imgs.forEach(i => { if (i.loading === 'lazy') i.loading = 'eager'; });
const loaded = Promise.all(imgs.map(i => i.complete ? null :
    new Promise(r => { i.addEventListener('load', r); i.addEventListener('error', r); })));
const hasMath = document.querySelector('.math, div.math, span.math') !== null;
// MathJax loads async: until its script runs, window.MathJax is only the page's config object
const started = () => window.MathJax && MathJax.startup && MathJax.startup.promise;
const waitFor = (cond) => new Promise(res => { (function poll() { if (cond()) res(); else setTimeout(poll, 50); })(); });
const typeset = hasMath ? waitFor(started).then(() => started()) : Promise.resolve();
Promise.all([bounded('images', loaded), bounded('MathJax', typeset)]).then(() => done({
    late: late,
    broken: imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.currentSrc || i.src),
    images: imgs.length,
    hasMath: hasMath,
    mathjax: !!window.MathJax,
    typeset: document.querySelectorAll('mjx-container').length,
    title: document.title,
}), e => done({error: String(e)}));
"""


def _network(entries, origin):
    """Failed requests and requests to anywhere but the book's origin, from the performance log."""
    failed, outside = [], []
    for e in entries:
        m = json.loads(e["message"])["message"]
        if m["method"] == "Network.requestWillBeSent":
            url = m["params"]["request"]["url"]
            if urlsplit(url).scheme in ("http", "https", "ws", "wss", "ftp") and not url.startswith(origin):
                outside.append(url)
        elif m["method"] == "Network.loadingFailed" and not m["params"].get("canceled"):
            failed.append(m["params"].get("errorText", "?"))
        elif m["method"] == "Network.responseReceived" and m["params"]["response"]["status"] >= 400:
            failed.append(f'{m["params"]["response"]["status"]} {m["params"]["response"]["url"]}')
    return failed, outside


def _loaded_pages(html: Path) -> list[str]:
    """The pages the browser loads: all but the library appendix's module pages, which share one
    template (the appendix index and every chapter's readouts module stand for them; their links
    are still all resolved below)."""
    keep = {f"book/_library/privtrans.{c}.readouts.html" for c in CHAPTERS}
    return [p for p in _pages(html) if not p.startswith("book/_library/") or p in keep]


def test_every_page_loads_clean_in_a_real_browser(served, driver):
    html, origin, server_failed = served
    pages = _loaded_pages(html)
    assert "book/intro.html" in pages and len(pages) > 10, pages
    problems, math_pages, image_count = [], 0, 0
    for rel in pages:
        driver.get_log("browser"), driver.get_log("performance")  # drain what an earlier page left
        driver.get(origin + rel)
        redirect = _REFRESH.search((html / rel).read_text(encoding="utf-8", errors="replace"))
        if redirect:  # inspect where it lands: a script started on a page that navigates away never returns
            target = urljoin(origin + rel, redirect.group(1))
            try:
                WebDriverWait(driver, WAIT_S).until(lambda d: d.current_url == target
                                                    and d.execute_script("return document.readyState") == "complete")
            except TimeoutException:
                problems.append(f"{rel}: did not redirect to {target} in {WAIT_S} s (at {driver.current_url})")
                continue
        seen = driver.execute_async_script(_INSPECT, WAIT_S * 1000)
        console = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        failed, outside = _network(driver.get_log("performance"), origin)
        if "error" in seen:
            problems.append(f"{rel}: page script failed: {seen['error']}")
            continue
        image_count += seen["images"]
        problems += [f"{rel}: {what} not finished after {WAIT_S} s" for what in seen["late"]]
        problems += [f"{rel}: console error: {c}" for c in console]
        problems += [f"{rel}: failed request: {f}" for f in failed]
        problems += [f"{rel}: fetched from outside the book: {u}" for u in outside]
        problems += [f"{rel}: image did not load: {u}" for u in seen["broken"]]
        if seen["hasMath"]:
            math_pages += 1
            if not seen["mathjax"] or seen["typeset"] == 0:
                problems.append(f"{rel}: has math but MathJax typeset nothing (MathJax loaded: {seen['mathjax']})")
    problems += [f"server: {f}" for f in server_failed]
    assert not problems, "\n".join(problems)
    assert math_pages > 0 and image_count > 0  # the checks above actually saw math and images


def test_every_internal_link_resolves(served):
    html, _, _ = served
    broken = []
    for rel in _pages(html):
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


def test_screenshots_of_the_landing_page_and_every_chapter(served, driver):
    html, origin, _ = served
    out = REPO / "_build" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    first = next(c["id"] for c in json.loads((html.parents[1] / "_build" / "summary.json").read_text())["claims"]
                 if c["chapter"] == "taft" and c["kind"] == "reproduction")
    shots = [("landing", "book/intro.html"), *[(c, f"book/{c}.html") for c in CHAPTERS],
             ("claim-row", f"book/taft.html#claim-{first}")]  # a claim row, reached by its anchor
    for name, rel in shots:
        driver.get(origin + rel)
        driver.execute_async_script(_INSPECT)
        tmp = out / f".{name}.png"
        assert driver.save_screenshot(str(tmp)), rel
        tmp.replace(out / f"{name}.png")  # a screenshot cut short never replaces a good one
        assert (out / f"{name}.png").stat().st_size > 10_000, f"{name}.png looks empty"
