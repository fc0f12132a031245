"""Checks of the smoke book that run beside the book's other tests: the browser's walk of every page
(test_browser.py) and verify's cold re-run (test_pipeline_verify.py). conftest.py starts them at the
first test that reads the book, and their tests collect the results at the end.

Each works on its own copy of the built book, taken before any test changes it, so the tests that
re-run the pipeline in the book (test_book.py) and these never see each other's edits. Why beside:
one after another the book's tests were the last 155 s of `make test`, with a core idle half of it.
The browser mostly waits (page loads, MathJax: 22 CPU-s in 49 s) and the re-runs keep one core.
Measured on copies of one smoke book (reference_s 0.05): the three files one after another 179 s,
side by side 110 and 121 s; in a fresh-clone `make test` the book's tests took 116 s after the
build where they had taken 155 s."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from privtrans.book.chapters import KEYS as CHAPTERS

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
WAIT_S = 45  # per page, for images and MathJax's first typeset on a loaded 2-core machine


def copy_book(root: Path, dest: Path, *, html: bool) -> Path:
    """A copy of the built book at ``root``: its sources, results and state, and its HTML if asked
    (the notebook caches and Sphinx's own files stay behind: nothing here reads them)."""
    skip = {"jb", "cache", "papermill", "screenshots"} | (set() if html else {"html"})
    build = root / "_build"
    shutil.copytree(root, dest, ignore=lambda d, names: [n for n in names if Path(d) == build and n in skip])
    return dest


class _Quiet(http.server.SimpleHTTPRequestHandler):
    failed: list[str]

    def log_message(self, *args):  # a request line per file would drown pytest's output
        pass

    def send_error(self, code, *args, **kwargs):
        self.failed.append(f"{code} {self.path}")
        super().send_error(code, *args, **kwargs)


def pages(html: Path) -> list[str]:
    return sorted(str(p.relative_to(html)) for p in html.rglob("*.html") if "_static" not in p.parts)


def loaded_pages(html: Path) -> list[str]:
    """The pages the browser loads: all but the library appendix's module pages, which share one
    template (the appendix index and every chapter's readouts module stand for them; their links
    are still all resolved by test_browser.py)."""
    keep = {f"book/_library/privtrans.{c}.readouts.html" for c in CHAPTERS}
    return [p for p in pages(html) if not p.startswith("book/_library/") or p in keep]


_REFRESH = re.compile(r'http-equiv="Refresh"[^>]*url=([^"\s]+)"', re.I)

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


class BrowserWalk:
    """Headless chromium (Debian's, driven through Debian's chromedriver: nothing is downloaded)
    loads every page of a copy of the HTML, served over http://127.0.0.1 (file:// would hide failed
    requests), in a thread of its own; then it takes the screenshots. The copy is served from the
    start; ``start`` starts the browser. ``missing`` names an absent browser (nothing is started);
    ``walk`` and ``screenshots`` are the two results (None before ``start``)."""

    def __init__(self, root: Path, tmp: Path, shots: Path):
        self.missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).is_file()]
        self.html = copy_book(root, tmp / "repo", html=True) / "_build" / "html"
        self.summary = json.loads((tmp / "repo" / "_build" / "summary.json").read_text())
        self.shots, self.profile, self.driver = shots, tmp / "chromium-profile", None
        self.server_failed: list[str] = []
        handler = type("Handler", (_Quiet,), {"failed": self.server_failed})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      functools.partial(handler, directory=str(self.html)))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="browser")  # one thread drives the browser
        self.walk: Future | None = None
        self.screenshots: Future | None = None

    def start(self) -> "BrowserWalk":
        """The page walk, then the screenshots, in the browser's thread (nothing where ``missing``)."""
        if not self.missing and self.walk is None:
            self.walk = self._pool.submit(self._walk)
            self.screenshots = self._pool.submit(self._screenshots)
        return self

    def _start(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        # without the background-networking flags chromium keeps dialling Google and logs refused connections
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--disable-dev-shm-usage", "--window-size=1280,900", f"--user-data-dir={self.profile}"):
            opts.add_argument(flag)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        # an explicit driver path: selenium-manager (which would download a driver) never runs
        drv = self.driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
        drv.set_page_load_timeout(60)
        drv.set_script_timeout(WAIT_S + 30)  # _INSPECT bounds its own waits by WAIT_S
        drv.get("about:blank")  # the start page's own (chrome://) requests go before the first book page
        drv.get_log("browser"), drv.get_log("performance")
        return drv

    def _walk(self) -> tuple[list[str], int, int, list[str]]:
        """(problems, pages with math, images seen, pages loaded)."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        driver, origin, html = self._start(), self.origin, self.html
        loaded = loaded_pages(html)
        problems, math_pages, image_count = [], 0, 0
        for rel in loaded:
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
        problems += [f"server: {f}" for f in self.server_failed]
        return problems, math_pages, image_count, loaded

    def _screenshots(self) -> list[str]:
        """The landing page, each chapter's page and a claim row reached by its anchor, as PNGs in
        ``shots`` (each written, then renamed: a screenshot cut short never replaces a good one)."""
        if self.driver is None:  # the walk failed before the browser started: its test says why
            raise RuntimeError("the browser did not start (see the page walk's failure)")
        first = next(c["id"] for c in self.summary["claims"] if c["chapter"] == "taft" and c["kind"] == "reproduction")
        shots = [("landing", "book/intro.html"), *[(c, f"book/{c}.html") for c in CHAPTERS],
                 ("claim-row", f"book/taft.html#claim-{first}")]
        self.shots.mkdir(parents=True, exist_ok=True)
        for name, rel in shots:
            self.driver.get(self.origin + rel)
            self.driver.execute_async_script(_INSPECT)
            tmp = self.shots / f".{name}.png"
            if not self.driver.save_screenshot(str(tmp)):
                raise RuntimeError(f"no screenshot of {rel}")
            tmp.replace(self.shots / f"{name}.png")
        return [name for name, _ in shots]

    def close(self):
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self.driver is not None:
            self.driver.quit()
        self.server.shutdown()


class ColdRerun:
    """``make verify CH=dp_icl`` on a copy of the built book: 3 notebooks drawn from the chapter (its
    default; the whole chapter, 8 notebooks, cost 93 s of `make test`, a re-run being mostly kernel
    starts and imports) re-run cold, with one cached value of the fastest of them changed beforehand
    to a value the re-run cannot give. One cold re-run serves both checks of its test, and is most of
    its time. dp_icl records no wall-clock value under a name the check cannot tell (taft/cost's
    ratios were one)."""

    def __init__(self, root: Path, tmp: Path, env_for):
        from privtrans.book.pipeline import verify

        self.root = copy_book(root, tmp / "repo", html=False)
        summary = json.loads((self.root / "_build" / "summary.json").read_text())
        self.chosen = [x.split("/")[1] for x in verify.choose(self.root, "dp_icl", [], 3, 0)]
        rows = {r["notebook"].split("_", 1)[1]: r for r in summary["notebooks"] if r["chapter"] == "dp_icl"}
        assert len(self.chosen) == 3 and set(self.chosen) <= set(rows), (self.chosen, rows)
        self.fastest = min(self.chosen, key=lambda n: rows[n]["seconds"])
        self.fastest_stem = rows[self.fastest]["notebook"]  # NN_name, its source's file name
        f = self.root / "book" / "_generated" / "dp_icl" / self.fastest / "results.json"
        tampered = json.loads(f.read_text())
        head, last, self.changed = first_value_leaf(tampered["values"])
        head[last] += 1.0
        f.write_text(json.dumps(tampered))
        self.out = open(tmp / "verify.out", "w+")
        cmd = [sys.executable, "-m", "privtrans.book.pipeline.verify", "--root", str(self.root),
               "--chapter", "dp_icl", "--n", "3"]
        self.proc = subprocess.Popen(cmd, cwd=self.root, env=env_for(self.root), stdout=self.out, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)

    def result(self, timeout: float = 900) -> tuple[int, str]:
        rc = self.proc.wait(timeout=timeout)
        self.out.seek(0)
        return rc, self.out.read()

    def close(self):
        end_session(self.proc)
        self.out.close()


def end_session(proc: subprocess.Popen, grace_s: float = 60):
    """SIGTERM to a process started in a session of its own that is still running (it ends what it
    started: privtrans.book.stopping), then SIGKILL to the whole session after ``grace_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def first_value_leaf(node, path=""):
    """(container, key, flattened name) of the first float that is not a wall-clock value, walked in
    the order and with the names of ``verify.flatten`` (whose dotted names cannot be split back: keys
    such as "ε=0.1" hold dots)."""
    from privtrans.book.pipeline import verify

    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        name = (f"{path}.{k}" if path else str(k)) if isinstance(node, dict) else f"{path}[{k}]"
        if isinstance(v, float) and not isinstance(v, bool) and not verify.TIMING.search(name):
            return node, k, name
        found = first_value_leaf(v, name)
        if found is not None:
            return found
    return None

