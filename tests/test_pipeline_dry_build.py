"""privtrans.book.pipeline.dry_build: the dry build's rows, its record and the reproducing page's table."""

import json

import pytest

from privtrans.book.pipeline import dry_build


def fake_dry_build(tmp_path):
    """A checkout where taft/01 ran at dry, taft/02 failed at dry, and merge/01 ran at ci."""
    copy = tmp_path / "copy"
    states = {("taft", "01_pretraining"): {"profile": "dry", "seconds": 30.0, "status": "ok"},
              ("taft", "02_table1_finetuning"): {"profile": "dry", "seconds": 5.0, "status": "failed",
                                                 "error": "cell 3: KeyError 'lr'"},
              ("merge", "01_x"): {"profile": "ci", "seconds": 1.0, "status": "ok"}}
    for (ch, stem), st in states.items():
        (copy / "notebooks" / ch).mkdir(parents=True, exist_ok=True)
        (copy / "notebooks" / ch / f"{stem}.md").write_text("")
        (copy / "_build" / "state" / ch).mkdir(parents=True, exist_ok=True)
        (copy / "_build" / "state" / ch / f"{stem}.json").write_text(json.dumps({"chapter": ch, "notebook": stem, **st}))
    res = copy / "book" / "_generated" / "taft" / "pretraining"
    res.mkdir(parents=True)
    tally = {"paper_estimate_s": 7200.0, "seed_factor": 1.0,
             "loops": {"epochs": {"runs": 1, "kept": 1, "full": 15}, "batches": {"runs": 1, "kept": 1, "full": 400}}}
    (res / "results.json").write_text(json.dumps({"dry": tally}))
    return copy


def test_rows_take_the_dry_notebooks_with_their_tally(tmp_path):
    rows = dry_build.rows_of(fake_dry_build(tmp_path))
    assert [r["notebook"] for r in rows] == ["01_pretraining", "02_table1_finetuning"]  # not the ci row
    assert rows[0]["paper_estimate_s"] == 7200.0 and rows[0]["cut_loops"] == "epochs 1/15, batches 1/400"
    assert rows[1]["status"] == "failed" and rows[1]["paper_estimate_s"] is None and "KeyError" in rows[1]["error"]
    assert "2.0 h" in dry_build.table(rows)


def test_the_record_keeps_each_notebooks_latest_row_and_the_page_lists_every_notebook(tmp_path):
    copy = fake_dry_build(tmp_path)
    rows = dry_build.rows_of(copy)
    assert "No dry run has been recorded" in dry_build.page_table(copy)
    cpu = {"date": "2026-11-26T15:00:00+00:00", "commit": "abc1234", "machine": {"gpu": None, "cores": 2}}
    (copy / dry_build.RECORD).parent.mkdir(parents=True, exist_ok=True)
    (copy / dry_build.RECORD).write_text(dry_build.merged_record([], rows, cpu))
    gpu = {"date": "2026-11-27T09:00:00+00:00", "commit": "def5678", "machine": {"gpu": "NVIDIA H200", "cores": 16}}
    again = [{**rows[0], "dry_seconds": 6.0, "paper_estimate_s": 60.0}]  # taft/01 measured again on a GPU
    (copy / dry_build.RECORD).write_text(dry_build.merged_record(dry_build.read_record(copy), again, gpu))
    assert [(r["notebook"], r["machine"]) for r in dry_build.read_record(copy)] == \
        [("01_pretraining", "NVIDIA H200"), ("02_table1_finetuning", "CPU, 2 cores")]
    page = dry_build.page_table(copy)
    assert "| taft/01_pretraining | 0.1 min | 1.0 min | NVIDIA H200, `def5678`, 2026-11-27 | epochs 1/15, batches 1/400 |" in page
    assert "| taft/02_table1_finetuning (failed) | 0.1 min | – | CPU, 2 cores, `abc1234`, 2026-11-26 |" in page
    assert "| merge/01_x | not recorded |" in page and "1 notebook(s) have no recorded dry run." in page


def test_rows_can_be_limited_to_the_notebooks_asked_for(tmp_path):
    copy = fake_dry_build(tmp_path)
    wanted = [nb for nb in dry_build.discover(copy) if nb.stem == "02_table1_finetuning"]
    assert [r["notebook"] for r in dry_build.rows_of(copy, wanted)] == ["02_table1_finetuning"]


def test_a_recorded_row_names_the_commit_the_run_started_from(tmp_path, monkeypatch, capsys):
    """A commit made while a dry run runs is not what it measured: ``report`` stamps ``ran_at``."""
    monkeypatch.setattr(dry_build, "commit", lambda root: "made-later")
    row = {"chapter": "taft", "notebook": "01_pretraining", "status": "ok", "error": None, "dry_seconds": 1.0,
           "paper_estimate_s": 2.0, "seed_factor": 1.0, "cut_loops": "none"}
    (tmp_path / "data").mkdir()
    assert dry_build.report(tmp_path, [row], 1, record=True, ran_at="started-here") == 0
    assert json.loads((tmp_path / "_build" / "dry_run.json").read_text())["commit"] == "started-here"
    assert "started-here" in (tmp_path / dry_build.RECORD).read_text()
    dry_build.report(tmp_path, [row], 1, record=False)
    assert json.loads((tmp_path / "_build" / "dry_run.json").read_text())["commit"] == "made-later"


def test_the_commit_is_dirty_for_a_changed_file_but_not_for_the_record_itself(tmp_path):
    """``--record`` writes data/dry_run.csv; the next dry run of the same code must not read as -dirty."""
    import subprocess

    def git(*a):
        subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "data").mkdir()
    (tmp_path / dry_build.RECORD).write_text("a\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    head = dry_build.commit(tmp_path)
    assert head and not head.endswith("-dirty")
    (tmp_path / dry_build.RECORD).write_text("a\nb\n")
    assert dry_build.commit(tmp_path) == head
    (tmp_path / "code.py").write_text("x = 2\n")
    assert dry_build.commit(tmp_path) == f"{head}-dirty"


def test_an_unknown_notebook_is_refused_before_anything_runs_or_is_written(tmp_path):
    """A name the book does not have (here the file's number, not its chapter/name) stops the dry run
    with the allowed names; the last dry run's _build/dry_run.json and the record are left alone."""
    copy = fake_dry_build(tmp_path)
    (copy / "data").mkdir()
    kept = (copy / "_build" / "dry_run.json", copy / dry_build.RECORD)
    for p in kept:
        p.write_text("last good run")
    with pytest.raises(SystemExit, match=r"unknown notebook\(s\) \['taft/01'\]: give chapter/name, one of .*taft/"):
        dry_build.main(["--root", str(copy), "--notebook", "taft/01", "--record"])
    assert all(p.read_text() == "last good run" for p in kept)


def test_the_dry_run_takes_the_pipelines_names_chapter_name_or_chapter_stem(tmp_path):
    """``--notebook taft/pretraining`` (the form the pipeline and its error message give) and
    ``taft/01_pretraining`` pick the same notebook (--collect: report the dry run already there)."""
    copy = fake_dry_build(tmp_path)
    for name in ("taft/pretraining", "taft/01_pretraining"):
        assert dry_build.main(["--root", str(copy), "--collect", "--notebook", name]) == 0
        rows = json.loads((copy / "_build" / "dry_run.json").read_text())["notebooks"]
        assert [r["notebook"] for r in rows] == ["01_pretraining"], name
