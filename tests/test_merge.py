"""MERGE text-quality side: metrics on hand-computed cases, data determinism, the losses, training."""

import importlib.util
import math

import numpy as np
import pytest
import torch

from privtrans.book.runcache import RunCache
from privtrans.merge import data as D
from privtrans.merge import metrics as M
from privtrans.merge import train as T
from privtrans.shared.datasets import chatterbot

# --------------------------------------------------------------------------------------- metrics


def _lcs(a: list, b: list) -> int:
    """Longest common subsequence by dynamic programming: an independent reference for ROUGE-L."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def _random_corpus(seed: int, n: int = 25, vocab=("the", "dog", "dogs", "runs", "run", "a", "ball", "in",
                                                  "park", ".", ",", "is", "running", "catches")):
    rng = np.random.default_rng(seed)
    words = lambda k: " ".join(rng.choice(vocab, size=k))  # noqa: E731
    hyps = [words(int(rng.integers(0, 9))) for _ in range(n)]
    refs = [[words(int(rng.integers(1, 10))) for _ in range(int(rng.integers(1, 4)))] for _ in range(n)]
    return hyps, refs


def test_rouge_l_hand_case():
    # LCS("the cat sat on the mat", "the cat is on the mat") = "the cat on the mat" (5 of 6 each)
    assert M.rouge_l(["the cat sat on the mat"], [["the cat is on the mat"]]) == pytest.approx(5 / 6)
    # best reference counts
    assert M.rouge_l(["a b"], [["x y", "a b"]]) == pytest.approx(1.0)
    assert M.rouge_l(["a b"], [["x y"]]) == 0.0
    # punctuation tokens count (rouge-score's default tokenizer would drop them and score 1)
    assert M.rouge_l(["hello ."], [["hello !"]]) == pytest.approx(0.5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rouge_l_is_best_reference_lcs_f1(seed):
    hyps, refs = _random_corpus(seed)

    def f1(h, r):
        h, r = h.split(), r.split()
        lcs = _lcs(h, r)
        return 0.0 if lcs == 0 else 2 * lcs / (len(h) + len(r))

    want = np.mean([max(f1(h, r) for r in rs) for h, rs in zip(hyps, refs)])
    assert M.rouge_l(hyps, refs) == pytest.approx(want)


def test_chrf_pp_hand_case():
    # chars "ab" vs "ac": 1-grams P=R=0.5, 2-grams 0, longer orders absent; words: 1-grams 0.5,
    # 2-grams 0 -> mean precision = mean recall = 1.0 / 4 over the 4 effective orders -> 25
    assert M.chrf_pp(["a b"], [["a c"]]) == pytest.approx(25.0)
    assert M.chrf_pp(["the dog runs"], [["the dog runs"]]) == pytest.approx(100.0)
    assert M.chrf_pp(["xyz"], [["abc"]]) == 0.0


@pytest.mark.parametrize("seed", [0, 1])
def test_chrf_pp_matches_sacrebleu(seed):
    import sacrebleu

    hyps, refs = _random_corpus(seed)
    # one reference each: sacrebleu's corpus_chrf takes it as one stream
    one = [rs[:1] for rs in refs]
    assert M.chrf_pp(hyps, one) == pytest.approx(sacrebleu.corpus_chrf(hyps, [[r[0] for r in one]], word_order=2).score)
    # several references: the best one per sentence, statistics summed (same as sacrebleu's
    # equal-count streams when every sentence has all of them)
    three = [(rs * 3)[:3] for rs in refs]
    streams = [[r[i] for r in three] for i in range(3)]
    assert M.chrf_pp(hyps, three) == pytest.approx(sacrebleu.corpus_chrf(hyps, streams, word_order=2).score)
    # a variable number of references: repeating a sentence's own references changes nothing
    assert M.chrf_pp(hyps, refs) == pytest.approx(M.chrf_pp(hyps, three))


def test_nist_hand_case():
    # refs: a, b, (a b) once each, 2 words: info(a) = info(b) = log2(2/1) = 1, info(a b) = log2(1/1) = 0
    # 1-grams: (1 + 1) / 2 = 1; 2-grams: 0 / 1 -> NIST = 1
    assert M.nist(["a b"], [["a b"]]) == pytest.approx(1.0)
    # a shorter hypothesis is penalised
    assert M.nist(["a"], [["a b"]]) < 1.0
    # nothing generated: 0, not a division by zero
    assert M.nist(["", ""], [["a b"], ["c"]]) == 0.0


@pytest.mark.parametrize("seed", [0, 1])
def test_nist_matches_nltk(seed):
    from nltk.translate.nist_score import corpus_nist

    hyps, refs = _random_corpus(seed)
    hyps[0] = "the dog runs in the park ."  # some hypothesis reaches 5-grams
    want = corpus_nist([[r.split() for r in rs] for rs in refs], [h.split() for h in hyps], n=5)
    assert M.nist(hyps, refs) == pytest.approx(want)
    # short hypotheses only: the orders none of them reaches are left out instead of dividing by 0
    short = ["the dog", "a", "run ."]
    want = corpus_nist([[r.split() for r in rs] for rs in refs[:3]], [h.split() for h in short], n=2)
    assert M.nist(short, refs[:3]) == pytest.approx(want)


def test_meteor_exact_and_stem():
    # identical 3 words: P = R = 1, one chunk -> 1 - 0.5 * (1/3)^3
    assert M.meteor(["the dog runs"], [["the dog runs"]]) == pytest.approx(1 - 0.5 / 27)
    # no exact match, two stem matches in one chunk -> 1 - 0.5 * (1/2)^3
    assert M.meteor(["dogs run"], [["dog runs"]]) == pytest.approx(1 - 0.5 / 8)
    # two chunks of one word each: m = 2, chunks = 2 -> 1 - 0.5 * 1
    assert M.meteor(["a b"], [["b a"]]) == pytest.approx(0.5)
    assert M.meteor(["x"], [["y"]]) == 0.0
    # no synonyms: WordNet would match these two
    assert M.meteor(["car"], [["automobile"]]) == 0.0
    assert M.NoSynonyms.synsets("car") == []


@pytest.mark.parametrize("seed", [0, 1])
def test_meteor_matches_nltk_without_synonyms(seed):
    from nltk.translate.meteor_score import single_meteor_score

    hyps, refs = _random_corpus(seed)
    want = np.mean([max(single_meteor_score(r.split(), h.split(), wordnet=M.NoSynonyms()) for r in rs)
                    for h, rs in zip(hyps, refs)])
    assert M.meteor(hyps, refs) == pytest.approx(want)


def test_the_memo_stemmer_is_porters():
    from nltk.stem.porter import PorterStemmer

    words = "running runs ran dogs dog's generalisation happily caresses ponies the a".split() * 2
    memo = M.MemoStemmer()
    assert [memo.stem(w) for w in words] == [PorterStemmer().stem(w) for w in words]


def test_embedding_f1_proxy():
    vec = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]}
    assert M.embedding_f1(["a b"], [["a b"]], vec) == pytest.approx(1.0)
    assert M.embedding_f1(["a"], [["b"]], vec) == pytest.approx(0.0)
    # P = cos(a, c) = 1/sqrt2, R = 1/sqrt2 -> F1 = 1/sqrt2
    assert M.embedding_f1(["a"], [["c"]], vec) == pytest.approx(1 / math.sqrt(2))


def test_metric_input_errors():
    with pytest.raises(ValueError):
        M.rouge_l(["a", "b"], [["a"]])
    with pytest.raises(TypeError):
        M.chrf_pp("a b", [["a b"]])
    with pytest.raises(ValueError):
        M.nist(["a"], [[]])
    with pytest.raises(ValueError):
        M.meteor([], [])


# ------------------------------------------------------------------------------------------ data


def test_generators_deterministic_by_seed():
    for name in ("acts", "concepts"):
        a, b = D.synthetic(name, 50, 10, seed=3), D.synthetic(name, 50, 10, seed=3)
        c = D.synthetic(name, 50, 10, seed=4)
        key = lambda t: [(e.source, e.refs) for e in t.train + t.test]  # noqa: E731
        assert key(a) == key(b)
        assert key(a) != key(c)
    with pytest.raises(ValueError):
        D.synthetic("nope", 5, 5, 0)


def test_concept_references_cover_all_concepts():
    task = D.synthetic("concepts", 10, 30, seed=0)
    assert D.concept_coverage([e.refs[0] for e in task.test], task.test) == 1.0
    assert D.concept_coverage(["nothing here"] * 30, task.test) == 0.0


def test_vocab_and_sequences():
    task = D.synthetic("acts", 40, 5, seed=0)
    vocab = D.Vocab.build(task)
    ex = task.train[0]
    assert vocab.decode(vocab.encode(ex.refs[0]) + [vocab.eos, 7]) == ex.refs[0]
    ids, is_tgt = D.encode_pairs(vocab, task.train[:3], 48, 20)
    p = D.prompt_ids(vocab, ex.source, 20)
    n_tgt = len(ex.refs[0].split()) + 1  # response + <eos>
    assert ids[0, len(p) - 1].item() == vocab.sep
    assert is_tgt[0].sum().item() == n_tgt and is_tgt[0, len(p) - 1]


@pytest.mark.skipif(importlib.util.find_spec("chatterbot_corpus") is None, reason="chatterbot-corpus not installed")
def test_chatterbot_reader():
    convs = chatterbot.conversations()
    assert len(convs) > 100 and all(isinstance(t, str) and t for c in convs for t in c)
    task = D.chat(n_test=20, seed=0)
    assert len(task.train) > 300 and len(task.test) == 20
    assert set(e.source for e in task.train).isdisjoint(e.source for e in task.test)
    assert all(e.refs for e in task.test)


def test_chatterbot_missing_wheel_names_the_pin(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(FileNotFoundError, match="chatterbot-corpus==1.2.2"):
        chatterbot.english_dir()


# ---------------------------------------------------------------------------------------- losses


def test_cosine_alignment_toy_case():
    e = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    keep = torch.tensor([[True, True, False]])
    assert T.cosine_alignment_loss(e, e, keep).item() == pytest.approx(0.0, abs=1e-6)
    h = torch.tensor([[[0.0, 3.0], [0.0, -2.0], [5.0, 5.0]]])  # orthogonal, opposite, (masked)
    assert T.cosine_alignment_loss(h, e, keep).item() == pytest.approx((1.0 + 2.0) / 2)
    assert T.norm_alignment_loss(2 * e, e, keep).item() == pytest.approx(math.log(2) ** 2)


def _tiny_spec(**kw):
    return T.Spec("acts", n_train=120, n_test=6, max_len=48, max_src=20, d_model=32, n_layers=1, n_heads=2,
                  teacher=T.Recipe(steps=40, batch=16, lr=3e-3, eval_every=40, warmup=2),
                  student=T.Recipe(steps=5, batch=8, eval_every=5, warmup=1), **kw)


def test_merge_loss_is_eq7_without_noise():
    spec = _tiny_spec()
    prep = T.prepared(spec)
    torch.manual_seed(0)
    model = T.TinyGPT(T.base_config(prep, 32, 1, 2))
    ids = prep.train_ids[:4]
    rec = T.Recipe(lam=0.75, mask_p=0.0, noise_rel=0.0, scale_w=0.0)
    total, ce, align = T.merge_loss(model, ids, rec)
    logits, hidden = model(input_ids=ids)
    want_ce = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                                ids[:, 1:].reshape(-1), ignore_index=D.Vocab.pad)
    keep = ids[:, 1:] != D.Vocab.pad
    cos = torch.nn.functional.cosine_similarity(hidden[:, :-1], model.embed(ids)[:, 1:], dim=-1)[keep]
    assert ce.item() == pytest.approx(want_ce.item(), rel=1e-5)
    assert align.item() == pytest.approx((1 - cos).mean().item(), rel=1e-5)
    assert total.item() == pytest.approx(0.75 * align.item() + 0.25 * ce.item(), rel=1e-6)


# -------------------------------------------------------------------------------------- training


def test_training_reduces_loss_and_student_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(T, "run_cache", lambda: RunCache("merge", root=tmp_path))
    spec = _tiny_spec()
    teacher = T.get_model(spec, "teacher", seed=0, device=torch.device("cpu"))
    val = teacher.history["val"]["total"]
    assert val[-1] < 0.7 * val[0]
    # cached: the second call loads the same weights
    again = T.get_model(spec, "teacher", seed=0)
    assert again.cached
    for a, b in zip(teacher.model.state_dict().values(), again.model.state_dict().values()):
        assert torch.equal(a, b)
    # a merged (MM) student starts from the teacher and trains with finite losses
    merge = T.get_model(spec, "merge", seed=0, device=torch.device("cpu"))
    assert merge.model.cfg.merged and merge.decoding == "er"
    assert all(math.isfinite(x) for x in merge.history["train"]["total"])
    # the key leaves out the recipe that does not train the model: a new distillation recipe
    # leaves the teacher and the MERGE student cached; a new student recipe retrains MERGE only
    other = T.Spec(**{**spec.__dict__, "distill": T.Recipe(steps=7)})
    assert T.get_model(other, "teacher", seed=0).cached and T.get_model(other, "merge", seed=0).cached
    other = T.Spec(**{**spec.__dict__, "student": T.Recipe(steps=3, batch=8, eval_every=3, warmup=1)})
    assert T.get_model(other, "teacher", seed=0).cached and not T.get_model(other, "merge", seed=0).cached
    # a student seed of its own from the teacher of seed 0 (table3_seeds): a new run of that teacher's
    # student, not seed 1's own student, nor a teacher at seed 1; naming its own teacher changes nothing
    s1 = T.get_model(spec, "merge", seed=1, teacher_seed=0)
    assert not s1.cached and T.get_model(spec, "merge", seed=1, teacher_seed=0).cached
    assert T.get_model(spec, "merge", seed=0, teacher_seed=0).cached
    assert any(not torch.equal(a, b) for a, b in zip(s1.model.state_dict().values(), merge.model.state_dict().values()))
    own = T.get_model(spec, "merge", seed=1)  # seed 1's student of seed 1's teacher: trains that teacher
    assert not own.cached and T.get_model(spec, "teacher", seed=1).cached


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
        specs = [T.Spec.from_cfg(task, c).to_dict() for c in cfgs.values()]
        assert all(s == specs[0] for s in specs), task


def test_across_teacher_seeds_trains_one_teacher_per_seed_and_reuses_seed_0s(tmp_path, monkeypatch):
    """Table 3's ER rows across teacher seeds: every (task, seed) teacher is trained once, the seed
    of the notebook's own teacher is read from the run cache, and each teacher is scored as it is
    and with ER: two rows per (task, seed), the ER row as ``evaluate`` scores that teacher."""
    from privtrans.merge import quality_experiments as X

    monkeypatch.setattr(T, "run_cache", lambda: RunCache("merge", root=tmp_path))
    spec = _tiny_spec()
    first = T.get_model(spec, "teacher", seed=0)
    cfg = {**{k: v for k, v in spec.to_dict().items() if k not in ("task", "teacher", "student", "distill")},
           "tasks": ["acts"], "seeds": 2, "n_new": 6,
           **{k: getattr(spec, k).to_dict() for k in ("teacher", "student", "distill")}}
    assert T.Spec.from_cfg("acts", cfg).to_dict() == spec.to_dict()
    runs = X.across_teacher_seeds(cfg, 0)
    assert sorted(zip(runs.model, runs.seed)) == [("er_no_train", 0), ("er_no_train", 1), ("teacher", 0), ("teacher", 1)]
    assert T.get_model(spec, "teacher", seed=0).cached and T.get_model(spec, "teacher", seed=1).cached
    second = T.get_model(spec, "teacher", seed=1)
    assert any(not torch.equal(a, b) for a, b in zip(first.model.state_dict().values(), second.model.state_dict().values()))
    want, _ = T.evaluate(second, second.model, T.prepared(spec), n_new=6, decoding="er", seed=1)
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
        assert T.Spec.from_cfg(task, teachers).to_dict() == T.Spec.from_cfg(task, quality).to_dict(), task


def test_greedy_batch_matches_generate_and_grouping():
    spec = _tiny_spec()
    prep = T.prepared(spec)
    torch.manual_seed(1)
    model = T.TinyGPT(T.base_config(prep, 32, 1, 2)).eval()
    prompts = [D.prompt_ids(prep.vocab, e.source, 20) for e in prep.task.test]
    batch = T.greedy_batch(model, prompts, 5, "er")
    for p, out in zip(prompts, batch):
        assert out == model.generate(torch.tensor([p]), 5, "er")[0].tolist()
    # noise 0 through the noisy path equals the plain path; large noise changes something
    g = torch.Generator().manual_seed(0)
    noisy = T.greedy_batch(model, prompts, 5, "vanilla", noise_rel=50.0, generator=g)
    assert noisy != T.greedy_batch(model, prompts, 5, "vanilla")
    with pytest.raises(ValueError):
        T.greedy_batch(model, prompts, 5, "er", noise_rel=0.1)


def test_dry_run_trains_one_step_and_books_the_recipe():
    """A dry run (privtrans.book.dry) runs the first optimiser step and books all ``recipe.steps``;
    outside one, the same call trains every step and equals a second run bit for bit."""
    from privtrans.book import dry

    spec = _tiny_spec()
    prep = T.prepared(spec)
    base = T.base_config(prep, 32, 1, 2)
    recipe = T.Recipe(steps=3, batch=8, lr=3e-3, eval_every=2, warmup=1)
    cpu = torch.device("cpu")
    full = T.train_teacher(prep, base, recipe, seed=0, device=cpu)
    assert full.history["step"] == [1, 2, 3] and full.history["val_step"] == [0, 2, 3]
    try:
        dry.activate()
        cut = T.train_teacher(prep, base, recipe, seed=0, device=cpu)
        report = dry.report(1.0)
    finally:
        dry.activate(False)
    assert cut.history["step"] == [1] and cut.history["val_step"] == [0]
    assert cut.history["train"]["total"][0] == full.history["train"]["total"][0]  # the same first step
    assert report["loops"]["train steps"] == {"runs": 1, "kept": 1, "full": 3}
    again = T.train_teacher(prep, base, recipe, seed=0, device=cpu)
    assert again.history == full.history
    for a, b in zip(full.model.state_dict().values(), again.model.state_dict().values()):
        assert torch.equal(a, b)
