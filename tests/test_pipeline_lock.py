"""privtrans.book.pipeline.lock: one build at a time."""

import pytest


def test_one_build_at_a_time(root):
    from privtrans.book.pipeline import lock

    with lock.build_lock(root):
        with pytest.raises(lock.Busy, match="another build is running in this checkout"):
            with lock.build_lock(root):
                pass
    with lock.build_lock(root):  # released when the first one ends
        pass
