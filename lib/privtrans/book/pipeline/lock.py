"""One build at a time per checkout: a second one stops at once with a clear message."""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path


class Busy(RuntimeError):
    """Another build holds this checkout's lock."""


@contextmanager
def build_lock(root: Path):
    """Hold ``_build/.lock`` (an OS lock, released when the process ends, however it ends)."""
    path = root / "_build" / ".lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise Busy(f"another build is running in this checkout (pid {other}, lock {path}); "
                       "wait for it to finish or stop it") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)
