"""``train.distill_group``: several students of one teacher share each batch's teacher forward, and
each ends exactly where its lone ``distill`` run ends; ``experiments.converted`` stores every student
under its lone run's key."""

import pytest
import torch

from privtrans.book import profiles
from privtrans.book.runcache import RunCache
from privtrans.mpc_attention import experiments, train


S = experiments.Settings.from_cfg(profiles.settings("mpc_attention", "tables2_6_schemes", "smoke")["tasks"])


COMBOS = [("softmax", "quad"), ("2quad_freediv", "quad"), ("softmax_freediv", "gelu")]


KW = dict(epochs1=1, epochs2=2, lr1=S.lr1, lr2=S.lr2)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def teacher_and_task():
    task = experiments.load_task("mr2", S.teacher, 3)
    t, _ = train.train_teacher(task, experiments.model_config(task, S.teacher), 1, lr=S.teacher.teacher_lr, seed=3)
    return t, task


def _students(t):
    """One student per combination; a freeDiv one gets an f(n) = a·n^b constant (its value is not
    what is tested here)."""
    return [t.converted(a, f, (1.2, 0.4) if "freediv" in a else None) for a, f in COMBOS]


def test_group_equals_lone_runs_bit_for_bit(teacher_and_task):
    t, task = teacher_and_task
    alone = _students(t)
    r_alone = [train.distill(t, st, task, seed=3, **KW) for st in alone]
    grouped = _students(t)
    r_group = train.distill_group(t, grouped, task, seed=3, **KW)
    for a, g, ra, rg in zip(alone, grouped, r_alone, r_group):
        sa, sg = a.state_dict(), g.state_dict()
        assert sa.keys() == sg.keys()
        assert all(torch.equal(sa[n], sg[n]) for n in sa), "a grouped student left its lone run's path"
        assert (ra["after_stage1"], ra["after_stage2"], ra["examples_x_epochs"]) == (
            rg["after_stage1"], rg["after_stage2"], rg["examples_x_epochs"])
        assert rg["seconds"] > 0
    # the students did learn different things (the test is not comparing copies of one model)
    assert not torch.equal(grouped[0].head.weight, grouped[1].head.weight)
    # the distilled students moved away from the teacher they started from
    assert not torch.equal(grouped[0].head.weight, t.head.weight)


def test_converted_stores_grouped_students_under_lone_keys(tmp_path, monkeypatch):
    """converted() trains the students of a task and seed as one group; each lone ``student`` call
    afterwards is a cache hit and returns what a lone run makes in a fresh cache."""
    monkeypatch.setenv("PRIVTRANS_WORKERS", "1")
    monkeypatch.setattr(experiments, "RunCache", lambda ns: RunCache(ns, root=tmp_path / "group"))
    runs = experiments.converted(["mr2"], S, [0], COMBOS)["mr2"]
    assert len(list((tmp_path / "group").glob("student-*.pt"))) == len(COMBOS)
    # what comes back holds the students' metrics, not their weights (the cache keeps those)
    assert all("state" not in r and "after_stage2" in r for rs in runs["students"].values() for r in rs)

    def no_training(*a, **k):
        raise AssertionError("a lone call after converted must be a cache hit")

    with monkeypatch.context() as m:
        m.setattr(train, "distill_group", no_training)
        cached = [experiments.student("mr2", S, 0, a, f) for a, f in COMBOS]
    monkeypatch.setattr(experiments, "RunCache", lambda ns: RunCache(ns, root=tmp_path / "lone"))
    for (a, f), c, r in zip(COMBOS, cached, (runs["students"][f"{a}+{f}"][0] for a, f in COMBOS)):
        lone = experiments.student("mr2", S, 0, a, f)
        assert all(torch.equal(lone["state"][n], c["state"][n]) for n in lone["state"])
        assert (lone["before"], lone["after_stage2"]) == (c["before"], c["after_stage2"]) == (r["before"], r["after_stage2"])


def _teacher_as_before(task, cfg, epochs, lr, seed, batch=64, steps=None):
    """``train_teacher``'s loop as it was before the dry run's ``dry.loop``: the reference (after
    its first ``steps`` batches only, when given)."""
    torch.manual_seed(seed)
    model = train.TinyEncoder(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    done = 0
    for ep in range(epochs):
        model.train()
        for ids, mask, types, y in task.train.batches(batch, shuffle=True, seed=seed * 1000 + ep):
            if steps is not None and done == steps:
                return model.eval()
            done += 1
            loss = train._loss_task(model(ids, mask, types)["logits"], y, cfg.n_out)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    return model.eval()


def _same(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[n], sb[n]) for n in sa)


def test_outside_a_dry_run_training_and_metric_are_unchanged(teacher_and_task):
    from privtrans.book import dry

    assert not dry.active()
    _, task = teacher_and_task
    cfg = experiments.model_config(task, S.teacher)
    m, _ = train.train_teacher(task, cfg, 2, lr=S.teacher.teacher_lr, seed=4, device="cpu")  # the reference's device
    assert _same(m, _teacher_as_before(task, cfg, 2, S.teacher.teacher_lr, 4))
    with torch.no_grad():
        out = m(task.dev.ids, task.dev.mask, task.dev.types)["logits"]
    assert train.metric(m, task.dev) == float((out.argmax(1) == task.dev.y).float().mean())
    assert train.predict(m, task.dev, batch=32).shape[0] == len(task.dev)  # every batch
    assert dry.report(1.0)["loops"] == {}


def test_a_dry_run_takes_one_step_and_books_the_full_length(teacher_and_task, dry_run):
    t, task = teacher_and_task
    cfg = experiments.model_config(task, S.teacher)
    m, _ = train.train_teacher(task, cfg, 3, lr=S.teacher.teacher_lr, seed=4, device="cpu")  # the reference's device
    assert not _same(m, _teacher_as_before(task, cfg, 1, S.teacher.teacher_lr, 4))  # not even one full epoch
    ref = _teacher_as_before(task, cfg, 1, S.teacher.teacher_lr, 4, steps=1)  # its first step only
    assert _same(m, ref)
    n_batches = -(-len(task.train) // 64)
    loops = dry_run.report(1.0)["loops"]
    assert loops["teacher epochs"] == {"runs": 1, "kept": 1, "full": 3}
    assert loops["teacher batches"] == {"runs": 1, "kept": 1, "full": n_batches}
    # evaluation: the first batch only (the metric's batch of 256 holds all 128 smoke dev examples)
    assert train.predict(m, task.dev, batch=32).shape[0] == 32
    with torch.no_grad():
        out = m(task.dev.ids, task.dev.mask, task.dev.types)["logits"]
    assert train.metric(m, task.dev) == float((out.argmax(1) == task.dev.y).float().mean())
    # distillation: both stages run, each one epoch of one batch, booked at full length
    dry_run.reset()
    r = train.distill(t, _students(t)[0], task, seed=3, **KW)
    assert set(r) >= {"after_stage1", "after_stage2"}
    loops = dry_run.report(1.0)["loops"]
    assert loops["distillation stage 1 epochs"] == {"runs": 1, "kept": 1, "full": KW["epochs1"]}
    assert loops["distillation stage 2 epochs"] == {"runs": 1, "kept": 1, "full": KW["epochs2"]}
    assert loops["distillation stage 2 batches"] == {"runs": 1, "kept": 1, "full": n_batches}
