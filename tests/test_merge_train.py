"""privtrans.merge.train: the losses (Eq. 7 without noise), teacher and student training through the run
cache, the seeds the notebooks share, batched decoding and the dry run."""

import math

import pytest
import torch

from privtrans.book.runcache import RunCache
from privtrans.merge import data, train


def test_cosine_alignment_toy_case():
    e = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    keep = torch.tensor([[True, True, False]])
    assert train.cosine_alignment_loss(e, e, keep).item() == pytest.approx(0.0, abs=1e-6)
    h = torch.tensor([[[0.0, 3.0], [0.0, -2.0], [5.0, 5.0]]])  # orthogonal, opposite, (masked)
    assert train.cosine_alignment_loss(h, e, keep).item() == pytest.approx((1.0 + 2.0) / 2)
    assert train.norm_alignment_loss(2 * e, e, keep).item() == pytest.approx(math.log(2) ** 2)


def _tiny_spec(**kw):
    return train.Spec("acts", n_train=120, n_test=6, max_len=48, max_src=20, d_model=32, n_layers=1, n_heads=2,
                  teacher=train.Recipe(steps=40, batch=16, lr=3e-3, eval_every=40, warmup=2),
                  student=train.Recipe(steps=5, batch=8, eval_every=5, warmup=1), **kw)


def test_merge_loss_is_eq7_without_noise():
    spec = _tiny_spec()
    prep = train.prepared(spec)
    torch.manual_seed(0)
    model = train.TinyGPT(train.base_config(prep, 32, 1, 2))
    ids = prep.train_ids[:4]
    rec = train.Recipe(lam=0.75, mask_p=0.0, noise_rel=0.0, scale_w=0.0)
    total, ce, align = train.merge_loss(model, ids, rec)
    logits, hidden = model(input_ids=ids)
    want_ce = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                                ids[:, 1:].reshape(-1), ignore_index=data.Vocab.pad)
    keep = ids[:, 1:] != data.Vocab.pad
    cos = torch.nn.functional.cosine_similarity(hidden[:, :-1], model.embed(ids)[:, 1:], dim=-1)[keep]
    assert ce.item() == pytest.approx(want_ce.item(), rel=1e-5)
    assert align.item() == pytest.approx((1 - cos).mean().item(), rel=1e-5)
    assert total.item() == pytest.approx(0.75 * align.item() + 0.25 * ce.item(), rel=1e-6)


def test_training_reduces_loss_and_student_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(train, "run_cache", lambda: RunCache("merge", root=tmp_path))
    spec = _tiny_spec()
    teacher = train.get_model(spec, "teacher", seed=0, device=torch.device("cpu"))
    val = teacher.history["val"]["total"]
    assert val[-1] < 0.7 * val[0]
    # cached: the second call loads the same weights
    again = train.get_model(spec, "teacher", seed=0)
    assert again.cached
    for a, b in zip(teacher.model.state_dict().values(), again.model.state_dict().values()):
        assert torch.equal(a, b)
    # a merged (MM) student starts from the teacher and trains with finite losses
    merge = train.get_model(spec, "merge", seed=0, device=torch.device("cpu"))
    assert merge.model.cfg.merged and merge.decoding == "er"
    assert all(math.isfinite(x) for x in merge.history["train"]["total"])
    # the key leaves out the recipe that does not train the model: a new distillation recipe
    # leaves the teacher and the MERGE student cached; a new student recipe retrains MERGE only
    other = train.Spec(**{**spec.__dict__, "distill": train.Recipe(steps=7)})
    assert train.get_model(other, "teacher", seed=0).cached and train.get_model(other, "merge", seed=0).cached
    other = train.Spec(**{**spec.__dict__, "student": train.Recipe(steps=3, batch=8, eval_every=3, warmup=1)})
    assert train.get_model(other, "teacher", seed=0).cached and not train.get_model(other, "merge", seed=0).cached
    # a student seed of its own from the teacher of seed 0 (table3_seeds): a new run of that teacher's
    # student, not seed 1's own student, nor a teacher at seed 1; naming its own teacher changes nothing
    s1 = train.get_model(spec, "merge", seed=1, teacher_seed=0)
    assert not s1.cached and train.get_model(spec, "merge", seed=1, teacher_seed=0).cached
    assert train.get_model(spec, "merge", seed=0, teacher_seed=0).cached
    assert any(not torch.equal(a, b) for a, b in zip(s1.model.state_dict().values(), merge.model.state_dict().values()))
    own = train.get_model(spec, "merge", seed=1)  # seed 1's student of seed 1's teacher: trains that teacher
    assert not own.cached and train.get_model(spec, "teacher", seed=1).cached


@pytest.mark.parametrize("profile", ["smoke", "ci", "paper"])
def test_the_seeded_notebooks_share_their_student_models(profile):
    """Figures 5 and 6 and Table 3 across seeds re-train students at the same paired seeds from the same
    settings, so each model is trained once and read from the run cache by the others: one seed count
    and one training spec per task across the three experiments."""
    from privtrans.book import profiles

    cfgs = {e: profiles.settings("merge", e, profile) for e in ("fig6_retraining", "fig5_embedding_noise", "table3_seeds")}
    assert len({c["seeds"] for c in cfgs.values()}) == 1, {e: c["seeds"] for e, c in cfgs.items()}
    tasks = [cfgs["fig6_retraining"]["task"], *cfgs["fig5_embedding_noise"]["tasks"]]
    assert set(tasks) <= set(cfgs["table3_seeds"]["tasks"])
    for task in tasks:
        specs = [train.Spec.from_cfg(task, c).to_dict() for c in cfgs.values()]
        assert all(s == specs[0] for s in specs), task


def test_across_teacher_seeds_trains_one_teacher_per_seed_and_reuses_seed_0s(tmp_path, monkeypatch):
    """Table 3's ER rows across teacher seeds: every (task, seed) teacher is trained once, the seed
    of the notebook's own teacher is read from the run cache, and each teacher is scored as it is
    and with ER: two rows per (task, seed), the ER row as ``evaluate`` scores that teacher."""
    from privtrans.merge import quality_experiments

    monkeypatch.setattr(train, "run_cache", lambda: RunCache("merge", root=tmp_path))
    spec = _tiny_spec()
    first = train.get_model(spec, "teacher", seed=0)
    cfg = {**{k: v for k, v in spec.to_dict().items() if k not in ("task", "teacher", "student", "distill")},
           "tasks": ["acts"], "seeds": 2, "n_new": 6,
           **{k: getattr(spec, k).to_dict() for k in ("teacher", "student", "distill")}}
    assert train.Spec.from_cfg("acts", cfg).to_dict() == spec.to_dict()
    runs = quality_experiments.across_teacher_seeds(cfg, 0)
    assert sorted(zip(runs.model, runs.seed)) == [("er_no_train", 0), ("er_no_train", 1), ("teacher", 0), ("teacher", 1)]
    assert train.get_model(spec, "teacher", seed=0).cached and train.get_model(spec, "teacher", seed=1).cached
    second = train.get_model(spec, "teacher", seed=1)
    assert any(not torch.equal(a, b) for a, b in zip(first.model.state_dict().values(), second.model.state_dict().values()))
    want, _ = train.evaluate(second, second.model, train.prepared(spec), n_new=6, decoding="er", seed=1)
    got = runs[(runs.model == "er_no_train") & (runs.seed == 1)].iloc[0]
    assert got["chrF++"] == pytest.approx(want["chrF++"]) and got["BARTScore-proxy"] == pytest.approx(want["BARTScore-proxy"])


@pytest.mark.parametrize("profile", ["smoke", "ci", "paper"])
def test_table3s_teacher_seeds_start_from_its_teacher(profile):
    """The teacher-seed notebook's seed-0 teacher is the Table 3 notebook's (one run, cached): the
    same teacher spec on every task, so its first seed's ER row is Table 3's."""
    from privtrans.book import profiles

    quality, teachers = (profiles.settings("merge", e, profile) for e in ("table3_quality", "table3_teachers"))
    assert set(teachers["tasks"]) == set(quality["tasks"])
    for task in teachers["tasks"]:
        assert train.Spec.from_cfg(task, teachers).to_dict() == train.Spec.from_cfg(task, quality).to_dict(), task


def test_greedy_batch_matches_generate_and_grouping():
    spec = _tiny_spec()
    prep = train.prepared(spec)
    torch.manual_seed(1)
    model = train.TinyGPT(train.base_config(prep, 32, 1, 2)).eval()
    prompts = [data.prompt_ids(prep.vocab, e.source, 20) for e in prep.task.test]
    batch = train.greedy_batch(model, prompts, 5, "er")
    for p, out in zip(prompts, batch):
        assert out == model.generate(torch.tensor([p]), 5, "er")[0].tolist()
    # noise 0 through the noisy path equals the plain path; large noise changes something
    g = torch.Generator().manual_seed(0)
    noisy = train.greedy_batch(model, prompts, 5, "vanilla", noise_rel=50.0, generator=g)
    assert noisy != train.greedy_batch(model, prompts, 5, "vanilla")
    with pytest.raises(ValueError):
        train.greedy_batch(model, prompts, 5, "er", noise_rel=0.1)


def test_dry_run_trains_one_step_and_books_the_recipe():
    """A dry run (privtrans.book.dry) runs the first optimiser step and books all ``recipe.steps``;
    outside one, the same call trains every step and equals a second run bit for bit."""
    from privtrans.book import dry

    spec = _tiny_spec()
    prep = train.prepared(spec)
    base = train.base_config(prep, 32, 1, 2)
    recipe = train.Recipe(steps=3, batch=8, lr=3e-3, eval_every=2, warmup=1)
    cpu = torch.device("cpu")
    full = train.train_teacher(prep, base, recipe, seed=0, device=cpu)
    assert full.history["step"] == [1, 2, 3] and full.history["val_step"] == [0, 2, 3]
    try:
        dry.activate()
        cut = train.train_teacher(prep, base, recipe, seed=0, device=cpu)
        report = dry.report(1.0)
    finally:
        dry.activate(False)
    assert cut.history["step"] == [1] and cut.history["val_step"] == [0]
    assert cut.history["train"]["total"][0] == full.history["train"]["total"][0]  # the same first step
    assert report["loops"]["train steps"] == {"runs": 1, "kept": 1, "full": 3}
    again = train.train_teacher(prep, base, recipe, seed=0, device=cpu)
    assert again.history == full.history
    for a, b in zip(full.model.state_dict().values(), again.model.state_dict().values()):
        assert torch.equal(a, b)
