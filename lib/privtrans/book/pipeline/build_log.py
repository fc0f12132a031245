"""What a long build shows while it runs, and how it stops.

- one line per notebook, ``[i/n]``, with its time and an estimate of what is left from the previous
  build's timings (a terminal also gets a line that counts the running notebook's seconds);
- Ctrl-C (or SIGTERM, SIGHUP) ends the build with one line that says what finished and what is
  kept (every finished notebook's executed copy and state, written atomically; the interrupted one
  is not kept), and ends every process the build started (:mod:`privtrans.book.stopping`).

One build at a time per checkout is :mod:`privtrans.book.pipeline.lock`.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager


class Interrupted(RuntimeError):
    """The build was stopped with Ctrl-C; the message says what is kept."""


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """Lines ``[i/n] chapter/notebook  seconds  status  (elapsed, ~left)`` for a list of notebooks."""

    def __init__(self, notebooks, previous_seconds, stream=None, jobs: int = 1):
        self.n = len(notebooks)
        self.jobs = jobs
        self.previous = {nb: s for nb, s in zip(notebooks, previous_seconds)}
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty()
        self.started = time.perf_counter()
        self.finished: list[str] = []

    def _left(self, after) -> str:
        if self.jobs > 1:  # side by side: what has not finished, shared among the jobs
            rest = [nb for nb in self.previous if nb.label not in self.finished and nb is not after]
        else:
            rest = list(self.previous)[list(self.previous).index(after) + 1:]
        known = [self.previous[nb] for nb in rest if self.previous[nb]]
        if not rest:
            return ""
        guess = f"~{_clock(sum(known) / self.jobs)} left" if known else "no estimate yet"
        return guess + (f" (+{len(rest) - len(known)} never timed)" if known and len(known) < len(rest) else "")

    def _prefix(self, nb) -> str:
        return f"  [{len(self.finished) + 1}/{self.n}] {nb.label:<44}"

    def done(self, nb, seconds: float, status: str):
        line = f"{self._prefix(nb)} {seconds:7.1f}s  {status}"
        tail = ", ".join(x for x in (f"elapsed {_clock(time.perf_counter() - self.started)}", self._left(nb)) if x)
        print(f"{chr(13) if self.live else ''}{line}  ({tail})", file=self.stream, flush=True)
        self.finished.append(nb.label)

    def _hint(self, nb) -> str:
        last = self.previous.get(nb)
        return f"last build {last:.0f}s" if last else "not timed before"

    def start_line(self, nb):
        """A start line (notebooks side by side: no ticking line, they would overwrite each other)."""
        print(f"{self._prefix(nb)}   start   ({self._hint(nb)})", file=self.stream, flush=True)

    def interrupted_message(self, running: list[str]) -> str:
        kept = f"{len(self.finished)} finished and kept" + (f" (last: {self.finished[-1]})" if self.finished else "")
        return (f"interrupted during {', '.join(running)}: {kept}; {', '.join(running)} "
                f"{'was' if len(running) == 1 else 'were'} not kept and "
                f"{self.n - len(self.finished) - len(running)} did not start; the last good HTML book in "
                "_build/html is unchanged")

    @contextmanager
    def running(self, nb):
        """While a notebook runs: a ticking line on a terminal, a start line in a log."""
        hint = self._hint(nb)
        stop = threading.Event()
        if self.live:
            t0 = time.perf_counter()

            def tick():
                while not stop.wait(1.0):
                    print(f"\r{self._prefix(nb)} {time.perf_counter() - t0:7.0f}s  running ({hint})",
                          end="", file=self.stream, flush=True)

            threading.Thread(target=tick, daemon=True).start()
        else:
            print(f"{self._prefix(nb)}   start   ({hint})", file=self.stream, flush=True)
        try:
            yield
        except KeyboardInterrupt:
            stop.set()
            raise Interrupted(self.interrupted_message([nb.label])) from None
        finally:
            stop.set()
