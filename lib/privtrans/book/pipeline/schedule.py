"""Which notebook runs next when ``--jobs`` lets several run at once.

Notebooks of one chapter run in their order, one at a time: a later notebook may start from what an
earlier one cached (a teacher, a backbone), and two runs of one chapter at once would train the same
artefact twice. Chapters share no cache, so different chapters run side by side; the chapter with
the most work left goes first (longest-processing-time first, by the previous build's seconds), so
the last chapter to finish is not the longest one started late.
"""

from __future__ import annotations

from collections import OrderedDict, deque


class ChapterQueue:
    """``next()`` gives a notebook whose chapter has none running, or None; ``finished(nb)`` frees it."""

    def __init__(self, notebooks, previous_seconds):
        if len(notebooks) != len(previous_seconds):
            raise ValueError(f"one previous time per notebook: got {len(notebooks)} notebooks and "
                             f"{len(previous_seconds)} times")
        self.queues: OrderedDict[str, deque] = OrderedDict()
        self.seconds = {}
        for nb, s in zip(notebooks, previous_seconds):
            self.queues.setdefault(nb.chapter, deque()).append(nb)
            # a notebook never timed counts as the mean of those that were, so that a new chapter is
            # not scheduled last; with no timings at all every notebook counts 1 (order by count)
            self.seconds[nb] = s
        known = [s for s in previous_seconds if s]
        fill = sum(known) / len(known) if known else 1.0
        self.seconds = {nb: (s or fill) for nb, s in self.seconds.items()}
        self.busy: set[str] = set()

    def left(self, chapter: str) -> float:
        return sum(self.seconds[nb] for nb in self.queues[chapter])

    def next(self):
        free = [ch for ch, q in self.queues.items() if q and ch not in self.busy]
        if not free:
            return None
        ch = max(free, key=self.left)  # ties keep chapter order (max returns the first)
        self.busy.add(ch)
        return self.queues[ch].popleft()

    def finished(self, nb):
        self.busy.discard(nb.chapter)

    def empty(self) -> bool:
        return not any(self.queues.values())
