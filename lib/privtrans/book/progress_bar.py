"""Progress of a long loop inside a notebook, shown in the build's terminal log, not on the page.

A notebook run by the pipeline is a kernel whose stdout and stderr become the page's outputs, so a
bar written there would end up in the HTML. The pipeline instead names a log file in
$PRIVTRANS_PROGRESS_LOG; `steps` writes tqdm's plain-text bar there, one line per refresh, and the
pipeline echoes new lines to its terminal with the notebook's name. Outside the pipeline (Jupyter,
a script) the bar goes to stderr as usual. Never tqdm.auto/notebook: widgets would need JavaScript.
"""

from __future__ import annotations

import os
import sys

from tqdm import tqdm

LOG_ENV = "PRIVTRANS_PROGRESS_LOG"
MININTERVAL = 10.0  # seconds between refreshes: a few lines per minute in a CI log


class _Lines:
    """A file for tqdm that turns each carriage-return refresh into one appended line."""

    def __init__(self, path: str):
        self.path = path

    def write(self, s: str):
        s = s.replace("\r", "").strip()
        if s:
            with open(self.path, "a", encoding="utf-8") as f:  # opened per line: the reader tails the file
                f.write(s + "\n")

    def flush(self):
        pass


def steps(iterable=None, *, total: int | None = None, desc: str = ""):
    """``tqdm(iterable)`` with a plain-text bar that reaches the build's terminal (see the module doc)."""
    path = os.environ.get(LOG_ENV)
    out = _Lines(path) if path else sys.stderr
    return tqdm(iterable, total=total, desc=desc, file=out, ascii=True, dynamic_ncols=False, ncols=90,
                mininterval=MININTERVAL if path else 1.0)
