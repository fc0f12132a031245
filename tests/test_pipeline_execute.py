"""privtrans.book.pipeline.execute: papermill's problems are detected and its progress echo writes whole
lines."""

import nbformat

from privtrans.book.pipeline import execute


def test_papermill_problems_are_detected(tmp_path):
    nb = nbformat.v4.new_notebook()
    p = tmp_path / "n.ipynb"
    nbformat.write(nb, p)
    assert "no papermill metadata" in execute.papermill_problem(p)
    nb.metadata["papermill"] = {"exception": True, "end_time": "t"}
    nbformat.write(nb, p)
    assert "exception" in execute.papermill_problem(p)
    nb.metadata["papermill"] = {"exception": None, "end_time": None}
    nbformat.write(nb, p)
    assert "no end time" in execute.papermill_problem(p)
    nb.metadata["papermill"] = {"exception": None, "end_time": "2026-01-01"}
    nbformat.write(nb, p)
    assert execute.papermill_problem(p) is None
    assert execute.papermill_problem(tmp_path / "missing.ipynb") == "not executed yet"
    p.write_text('{"cells": [')  # cut short: re-run, not a crash of the build
    assert "not a readable notebook" in execute.papermill_problem(p)


def test_progress_echo_writes_whole_lines_only(tmp_path):
    """Notebooks side by side share the build's stdout with the parent's "[i/n] ... ok" lines: each
    write the echo makes must end its line, or the next line from another process joins it."""
    from privtrans.book.pipeline.execute import echo_progress

    class Writes:
        def __init__(self):
            self.calls = []

        def write(self, s):
            self.calls.append(s)

        def flush(self):
            self.calls.append(None)

    log, out = tmp_path / "nb.progress.log", Writes()
    log_lines = "".join(f"train: {i}/3\n" for i in range(1, 4))
    with echo_progress(log, "taft/03_composition", stream=out, every=0.05):
        log.write_text(log_lines)
    writes = [w for w in out.calls if w is not None]
    assert writes and all(w.endswith("\n") for w in writes), writes
    assert "".join(writes).count("taft/03_composition: train") == 3
