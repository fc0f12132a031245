"""privtrans.book.progress_bar: progress bars reach the terminal, not the page."""



def test_progress_bars_reach_the_terminal_not_the_page(tmp_path, monkeypatch):
    import io

    from privtrans.book import progress_bar
    from privtrans.book.pipeline.execute import echo_progress

    log, out = tmp_path / "nb.progress.log", io.StringIO()
    monkeypatch.setenv(progress_bar.LOG_ENV, str(log))
    page = io.StringIO()
    monkeypatch.setattr("sys.stderr", page)  # what a kernel's stderr would put on the page
    with echo_progress(log, "merge/04_fig6_retraining", stream=out, every=0.05):
        assert sum(progress_bar.steps(range(50), desc="train")) == sum(range(50))
    lines = [ln for ln in out.getvalue().split("\n") if ln]
    assert lines and all(ln.startswith("\r      merge/04_fig6_retraining: train") for ln in lines)
    assert "50/50" in lines[-1] and "\r" not in lines[-1][1:]  # one clean line per refresh
    assert page.getvalue() == ""
    monkeypatch.delenv(progress_bar.LOG_ENV)  # outside the pipeline the bar is plain stderr
    list(progress_bar.steps(range(3), desc="x"))
    assert "3/3" in page.getvalue()
