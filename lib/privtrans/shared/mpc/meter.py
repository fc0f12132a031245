"""Wall time, communication rounds and bytes of one party, per operation group.

The paper's benchmark wraps every op group ("Embed", "Linear", "Softmax", "Norm", "Act", "Gen")
with ``time.time()`` and deltas of CrypTen's ``get_communication_stats()``. ``Meter`` does the same
with *exclusive* accounting: when a group opens inside another (e.g. a matmul inside the
generation loop) the outer group is paused, so the groups add up to the metered total.

Bytes are CrypTen's per-party count (8 B per ring element, both directions, the paper's "GB" is
GiB); they need ``crypten.cfg.communicator.verbose = True``, which ``compat.crypten()`` sets.
Rounds count communication calls (a batched reveal is one round). With ``trace=True`` the meter
also keeps each group's message trace (``privtrans.shared.mpc.trace``), from which the parties'
traces together give the protocol's rounds (its longest chain of dependent messages) and bytes per
link per direction (``trace.counts``); CrypTen's own counters stay beside them.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

#: the paper's column groups (Table 1/2 plus the rest of the total)
GROUPS = ("Embed", "Linear", "Softmax", "Norm", "Act", "Gen", "Other")


def _stats():
    from . import compat

    s = compat.comm().get_communication_stats()
    return s["rounds"], s["bytes"], s.get("time", 0.0)


class Meter:
    """Per-group totals: ``meter.groups[name] == {"seconds", "rounds", "bytes", "comm_seconds", "calls"}``."""

    def __init__(self, default: str = "Other", trace: bool = False):
        from . import compat

        if not compat.module().cfg.communicator.verbose:
            raise RuntimeError("byte counting is off: set crypten.cfg.communicator.verbose = True "
                               "(privtrans.shared.mpc.compat.crypten() does) before metering")
        self.default = default
        self.groups: dict[str, dict] = {}
        self._stack: list[str] = []
        self._mark = None
        self.enabled = True
        self.events: list | None = [] if trace else None
        self._traces: dict[str, list] = {}
        self._event_mark = 0

    def _charge(self, name: str):
        now = (time.perf_counter(), *_stats())
        if self._mark is not None:
            g = self.groups.setdefault(name, dict(seconds=0.0, rounds=0, bytes=0, comm_seconds=0.0, calls=0))
            g["seconds"] += now[0] - self._mark[0]
            g["rounds"] += now[1] - self._mark[1]
            g["bytes"] += int(now[2] - self._mark[2])
            g["comm_seconds"] += now[3] - self._mark[3]
            if self.events is not None:
                self._traces.setdefault(name, []).extend(self.events[self._event_mark:])
        if self.events is not None:
            self._event_mark = len(self.events)
        self._mark = now

    @contextmanager
    def __call__(self, name: str):
        """Charge everything inside the block to group ``name`` (exclusive of nested groups)."""
        if not self.enabled:
            yield self
            return
        self._charge(self._stack[-1] if self._stack else self.default)
        self._stack.append(name)
        self.groups.setdefault(name, dict(seconds=0.0, rounds=0, bytes=0, comm_seconds=0.0, calls=0))
        self.groups[name]["calls"] += 1
        try:
            yield self
        finally:
            self._charge(name)
            self._stack.pop()

    @contextmanager
    def total(self):
        """Meter a whole run: time outside any group goes to the default group."""
        from contextlib import nullcontext

        from . import trace

        self._mark = None
        with trace.recording(self.events) if self.events is not None else nullcontext():
            self._charge(self.default)
            try:
                yield self
            finally:
                self._charge(self.default)
                self._mark = None

    def summary(self) -> dict:
        """{group: totals} plus "Total"; plain dicts, picklable across the runner. With ``trace``,
        each group (and "Total") also holds its message trace ("trace")."""
        out = {k: dict(v) for k, v in self.groups.items()}
        out["Total"] = {k: sum(g[k] for g in self.groups.values())
                        for k in ("seconds", "rounds", "bytes", "comm_seconds", "calls")}
        if self.events is not None:
            for k in out:
                out[k]["trace"] = list(self.events) if k == "Total" else list(self._traces.get(k, []))
        return out


class NullMeter:
    """A meter that records nothing (plaintext runs, or tests that do not time)."""

    groups: dict = {}

    @contextmanager
    def __call__(self, name: str):
        yield self

    @contextmanager
    def total(self):
        yield self

    def summary(self) -> dict:
        return {}
