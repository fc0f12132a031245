"""privtrans.book.dry: the dry run cuts marked loops to their first step and books their full length."""

import os

import pytest

from privtrans.book import dry, paired, profiles, runcache, session, workers


class Clock:
    """A fake perf_counter that a loop body advances, so the bookings are exact."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(dry.time, "perf_counter", c)
    return c


def test_outside_a_dry_run_every_item_comes_and_nothing_is_booked():
    assert not dry.active()
    assert list(dry.loop(range(7), "epochs")) == list(range(7))
    assert dry.report(3.0)["paper_estimate_s"] == 3.0 and dry.report(3.0)["loops"] == {}
    assert paired.seeds(4, 5) == [4, 5, 6, 7, 8]


def test_a_cut_loop_books_its_full_length(dry_run, clock):
    seen = []
    for i in dry.loop(range(10), "epochs"):
        seen.append(i)
        clock.now += 2.0  # one epoch: 2 s
    assert seen == [0]
    r = dry.report(wall_seconds=5.0)  # 3 s outside the loop
    assert r["loops_seconds"] == 2.0 and r["loops_full_seconds"] == 20.0
    assert r["paper_estimate_s"] == 3.0 + 20.0
    assert r["loops"] == {"epochs": {"runs": 1, "kept": 1, "full": 10}}


def test_nested_loops_count_the_inner_at_its_full_length_in_each_outer_step(dry_run, clock):
    for _ in dry.loop(range(10), "epochs"):
        clock.now += 1.0  # per epoch, outside the batches
        for _ in dry.loop(range(50), "batches", keep=2):
            clock.now += 0.5  # per batch
    # one epoch at full length: 1 + 50 * 0.5 = 26 s; ten of them
    r = dry.report(wall_seconds=2.0)
    assert r["loops_seconds"] == 2.0 and r["loops_full_seconds"] == pytest.approx(260.0)
    assert r["loops"]["batches"] == {"runs": 1, "kept": 2, "full": 50}


def test_an_abandoned_loop_books_what_ran(dry_run, clock):
    for _ in dry.loop(range(4), "steps", keep=3):
        clock.now += 1.0
        break
    assert dry.report(1.0)["loops_full_seconds"] == 4.0


def test_seeds_keep_two_and_scale_the_loops(dry_run, clock):
    assert paired.seeds(0, 10) == [0, 1] and paired.seeds(0, 2) == [0, 1]
    for _ in dry.loop(range(3), "steps"):
        clock.now += 1.0
    r = dry.report(1.0)
    assert r["seed_factor"] == 5.0 and r["paper_estimate_s"] == 15.0


def test_an_unsized_loop_needs_its_total(dry_run):
    with pytest.raises(TypeError, match="total="):
        list(dry.loop(iter(range(3)), "batches"))
    assert list(dry.loop(iter(range(3)), "batches", total=3)) == [0]


def test_dry_profile_reads_paper_settings_and_is_accepted_where_paper_is():
    assert profiles.check_profile("dry") == "dry"
    assert profiles.settings("dp_icl", "fig1_low_dim", "dry") == profiles.settings("dp_icl", "fig1_low_dim", "paper")
    with pytest.raises(profiles.ParameterError, match="smoke, ci, paper, dry"):
        profiles.check_profile("draft")


def test_dry_artefacts_are_keyed_apart_from_real_ones(tmp_path):
    cache = runcache.RunCache("t", root=tmp_path)
    real = cache.key({"a": 1})
    dry.activate()
    try:
        assert cache.key({"a": 1}) != real
    finally:
        dry.activate(False)
    assert cache.key({"a": 1}) == real


def test_workers_run_in_this_process_in_a_dry_run(dry_run):
    pids = []
    workers.in_parallel([lambda: pids.append(os.getpid()) for _ in range(3)], workers=2)
    assert pids == [os.getpid()] * 3


def test_a_notebook_at_dry_records_its_estimate(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVTRANS_ROOT", str(tmp_path))
    nb = session.start("dp_icl", "fig1_low_dim", "dry", 0)
    try:
        assert dry.active()
        for _ in dry.loop(range(4), "reps"):
            pass
        out = nb.finish()
    finally:
        dry.activate(False)
    assert out["profile"] == "dry" and out["dry"]["loops"] == {"reps": {"runs": 1, "kept": 1, "full": 4}}
    assert "dry" not in session.start("dp_icl", "fig1_low_dim", "smoke", 0).finish()
