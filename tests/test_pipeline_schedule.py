"""Notebooks side by side (``--jobs``): one chapter's notebooks in order, chapters at once."""

import json

import pytest

from privtrans.book.pipeline import schedule
from privtrans.book.pipeline.discover import Notebook


def _nbs(tmp_path, spec):
    return [Notebook(ch, tmp_path / "notebooks" / ch / f"{i:02d}_x{i}.md") for ch, n in spec for i in range(1, n + 1)]


def test_a_chapter_never_runs_two_notebooks_at_once_and_keeps_its_order(tmp_path):
    nbs = _nbs(tmp_path, [("dpformer", 3), ("taft", 2)])
    q = schedule.ChapterQueue(nbs, [5, 5, 5, 1, 1])
    first = q.next()
    second = q.next()
    assert first.label == "dpformer/01_x1" and second.label == "taft/01_x1"
    assert q.next() is None  # both chapters busy
    q.finished(first)
    assert q.next().label == "dpformer/02_x2"  # in order, once the first has finished
    assert q.next() is None


def test_the_chapter_with_most_work_left_goes_first_and_untimed_notebooks_count_as_the_mean(tmp_path):
    nbs = _nbs(tmp_path, [("dpformer", 1), ("taft", 2), ("merge", 1)])
    q = schedule.ChapterQueue(nbs, [10, 4, 4, None])  # merge never timed: counts 6, the mean
    assert [q.next().chapter for _ in range(3)] == ["dpformer", "taft", "merge"]
    q = schedule.ChapterQueue(nbs, [None] * 4)  # nothing timed: by count, ties in chapter order
    assert q.next().chapter == "taft"
    assert q.next().chapter == "dpformer"


def test_one_time_per_notebook(tmp_path):
    with pytest.raises(ValueError, match="one previous time per notebook"):
        schedule.ChapterQueue(_nbs(tmp_path, [("taft", 2)]), [1.0])


NOTEBOOK = '''---
jupytext:
  text_representation: {{extension: .md, format_name: myst}}
kernelspec: {{display_name: Python 3, language: python, name: python3}}
---

# {name}

```{{code-cell}} ipython3
:tags: [parameters]
profile = "smoke"
seed = 0
```

```{{code-cell}} ipython3
import json, pathlib, time
log = pathlib.Path("runs")
log.mkdir(exist_ok=True)
{check}
t0 = time.time()
time.sleep(1.5)
(log / "{chapter}_{name}.json").write_text(json.dumps([t0, time.time()]))
```
'''


def test_two_jobs_run_chapters_side_by_side_and_each_chapter_in_order(tmp_path, monkeypatch):
    from privtrans.book.pipeline import __main__ as pipeline

    (tmp_path / "_config.yml").write_text("title: t\n")
    (tmp_path / "lib" / "privtrans").mkdir(parents=True)
    for ch in ("dp_icl", "merge"):
        d = tmp_path / "notebooks" / ch
        d.mkdir(parents=True)
        for i, name in enumerate(("a", "b"), 1):
            # the second notebook of a chapter needs what the first one wrote
            check = f'assert (log / "{ch}_a.json").is_file(), "ran before its chapter\'s first notebook"' if i == 2 else ""
            (d / f"0{i}_{name}.md").write_text(NOTEBOOK.format(name=name, chapter=ch, check=check))
    monkeypatch.setenv("PRIVTRANS_ROOT", str(tmp_path))
    assert pipeline.main(["--root", str(tmp_path), "--profile", "smoke", "--jobs", "2", "--no-html"]) == 0
    span = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*.json")}
    assert len(span) == 4
    for ch in ("dp_icl", "merge"):
        assert span[f"{ch}_a"][1] <= span[f"{ch}_b"][0]  # in order within the chapter
    overlap = [(x, y) for x in ("dp_icl_a", "dp_icl_b") for y in ("merge_a", "merge_b")
               if span[x][0] < span[y][1] and span[y][0] < span[x][1]]
    assert overlap, f"the chapters never ran at the same time: {span}"
    summary = json.loads((tmp_path / "_build" / "summary.json").read_text())
    assert {n["jobs"] for n in summary["notebooks"]} == {2} and {n["status"] for n in summary["notebooks"]} == {"ok"}


def test_jobs_must_be_a_positive_int(tmp_path, capsys):
    from privtrans.book.pipeline import __main__ as pipeline

    for bad in ("0", "two", "-1"):
        assert pipeline.main(["--root", str(tmp_path), "--jobs", bad]) == 2
        assert "--jobs must be a positive int" in capsys.readouterr().err


def test_side_by_side_progress_shares_the_estimate_and_names_every_running_notebook(tmp_path):
    import io

    from privtrans.book.pipeline import build_log

    nbs = _nbs(tmp_path, [("dpformer", 2), ("taft", 2)])
    out = io.StringIO()
    bar = build_log.Progress(nbs, [10.0, 20.0, 30.0, 40.0], stream=out, jobs=2)
    bar.start_line(nbs[0])
    bar.done(nbs[0], 10.0, "ok")
    lines = [ln for ln in out.getvalue().split("\n") if ln]
    assert "start" in lines[0] and "last build 10s" in lines[0]
    assert "~0:45 left" in lines[1]  # (20 + 30 + 40) / 2 jobs
    msg = bar.interrupted_message(["dpformer/02_x2", "taft/01_x1"])
    assert "dpformer/02_x2, taft/01_x1 were not kept" in msg and "1 finished and kept" in msg and "1 did not start" in msg
