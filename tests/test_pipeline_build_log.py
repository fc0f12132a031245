"""privtrans.book.pipeline.build_log: the build's progress counts, estimates and stops in one line each."""

import pytest

from privtrans.book.pipeline.discover import Notebook


def test_progress_counts_estimates_and_stops_in_one_line(root):
    import io

    from privtrans.book.pipeline import build_log

    nbs = [Notebook("dp_icl", root / f"notebooks/dp_icl/0{i}_x{i}.md") for i in (1, 2, 3)]
    out = io.StringIO()
    bar = build_log.Progress(nbs, [10.0, 20.0, None], stream=out)
    bar.done(nbs[0], 9.5, "ok (cached)")
    with bar.running(nbs[1]):
        pass
    bar.done(nbs[1], 21.0, "ok")
    lines = [ln for ln in out.getvalue().split("\n") if ln]
    assert lines[0].startswith("  [1/3] dp_icl/01_x1") and "9.5s  ok (cached)" in lines[0]
    assert "~0:20 left (+1 never timed)" in lines[0]
    assert "[2/3]" in lines[1] and "start" in lines[1] and "last build 20s" in lines[1]
    assert "[2/3]" in lines[2] and "21.0s  ok" in lines[2] and "no estimate yet" in lines[2]
    with pytest.raises(build_log.Interrupted, match=r"interrupted during dp_icl/03_x3: 2 finished and kept"):
        with bar.running(nbs[2]):
            raise KeyboardInterrupt
