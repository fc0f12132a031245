"""privtrans.mpc_attention.experiments: notebook 01 trains every teacher the later notebooks distil from,
rows left undistilled decide no claim, teachers are read back from the run cache, students go to even
jobs in order."""

import pytest

from privtrans.book import profiles
from privtrans.book.runcache import RunCache
from privtrans.mpc_attention import experiments, train


S = experiments.Settings.from_cfg(profiles.settings("mpc_attention", "tables2_6_schemes", "smoke")["tasks"])

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_first_notebook_trains_every_teacher_the_later_ones_distil_from():
    """Notebook 01 trains the teachers of every task and seed (``teacher_tasks``, ``seeds``) so that
    Tables 2-5 start from them: the same settings bag (same cache keys), tasks and seeds, per profile."""
    for p in profiles.PROFILES:
        first = profiles.settings("mpc_attention", "fig5_7_denominators", p)
        for later, tasks in (("tables2_6_schemes", lambda c: [c["task"]]), ("table4_5_tasks", lambda c: c["table4_tasks"])):
            cfg = profiles.settings("mpc_attention", later, p)
            assert cfg["tasks"] == first["tasks"], f"{p}: {later} distils from teachers of other settings"
            assert cfg["seeds"] == first["seeds"], f"{p}: {later} has {cfg['seeds']} seeds, notebook 01 trains {first['seeds']}"
            assert set(tasks(cfg)) <= set(first["teacher_tasks"]), f"{p}: {later} needs a teacher notebook 01 does not train"


def test_rows_left_undistilled_decide_no_claim_and_are_not_reused():
    """``not_distilled`` may only hold Table 2 rows that no claim reads and Table 4 does not reuse."""
    claim_rows = {("2quad_freediv", "quad"), ("scaling", "quad")}  # t3_accuracy_kept, t2_scaling_collapses
    for p in profiles.PROFILES:
        cfg = profiles.settings("mpc_attention", "tables2_6_schemes", p)
        skipped = {tuple(c) for c in cfg["not_distilled"]}
        table4 = {tuple(c) for c in profiles.settings("mpc_attention", "table4_5_tasks", p)["combos"]}
        assert skipped <= {tuple(c) for c in cfg["combos"]} - {("softmax", "gelu")}, p
        assert not skipped & (claim_rows | table4), f"{p}: {skipped & (claim_rows | table4)} decide a claim or are reused"


def test_the_per_head_extension_is_off_only_where_no_claim_reads_it():
    """``per_head_extension`` may be off at a profile (ci: a book over budget) only while no claim
    reads a value of ``readouts.per_head_extension``; smoke keeps its code path run, paper the result."""
    from privtrans.book import claims
    from privtrans.mpc_attention import readouts
    run = {"before": 0.5, "after_stage2": 0.6}
    keys = readouts.per_head_extension([run, run], [run, run])
    read = [(c["id"], k) for c in claims.load("mpc_attention")["claims"] for k in keys if k in str(c)]
    assert not read, f"claims read the per-head extension: {read}"
    on = {p: profiles.settings("mpc_attention", "tables2_6_schemes", p)["per_head_extension"] for p in profiles.PROFILES}
    assert on["smoke"] is True and on["paper"] is True, on


def test_teachers_reads_back_each_task_and_seed_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVTRANS_WORKERS", "1")
    monkeypatch.setattr(experiments, "RunCache", lambda ns: RunCache(ns, root=tmp_path))
    got = experiments.teachers(["mr2"], S, [0, 1])
    assert len(list(tmp_path.glob("teacher-*.pt"))) == 2
    monkeypatch.setattr(train, "train_teacher", lambda *a, **k: (_ for _ in ()).throw(AssertionError("retrained")))
    again = experiments.converted(["mr2"], S, [0, 1], [])["mr2"]["teachers"]
    assert [t["metric"] for t in got["mr2"]] == [t["metric"] for t in again]


def test_students_go_to_the_fewest_jobs_of_even_size_in_order():
    """Six students (tables 2-6 at ci) make two jobs of three, not 5 + 1 (a lone 1-student job left
    a core idle at the end); every student once, in order, no job over ``STUDENTS_PER_JOB``."""
    assert [len(c) for c in experiments.student_chunks(list(range(6)), 5)] == [3, 3]
    for n in range(0, 23):
        chunks = experiments.student_chunks(list(range(n)), 5)
        assert [i for c in chunks for i in c] == list(range(n))
        assert len(chunks) == -(-n // 5) and all(1 <= len(c) <= 5 for c in chunks)
        assert max(map(len, chunks), default=0) - min(map(len, chunks), default=0) <= 1
