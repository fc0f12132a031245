"""MERGE text-quality side: metrics on hand-computed cases, data determinism, the losses, training."""

import importlib.util
import math

import numpy as np
import pytest
import torch

from privtrans.merge import data as D
from privtrans.merge import metrics as M
from privtrans.merge import train as T

# --------------------------------------------------------------------------------------- metrics


def test_rouge_l_hand_case():
    # LCS("the cat sat on the mat", "the cat is on the mat") = "the cat on the mat" (5 of 6 each)
    assert M.lcs_length("a b c d".split(), "a c b d".split()) == 3
    assert M.rouge_l(["the cat sat on the mat"], [["the cat is on the mat"]]) == pytest.approx(5 / 6)
    # best reference counts
    assert M.rouge_l(["a b"], [["x y", "a b"]]) == pytest.approx(1.0)
    assert M.rouge_l(["a b"], [["x y"]]) == 0.0


def test_chrf_pp_hand_case():
    # chars "ab" vs "ac": 1-grams F=0.5, 2-grams F=0, longer orders absent; words: 1-grams F=0.5,
    # 2-grams F=0 -> mean over the 4 effective orders = 1.0 / 4
    assert M.chrf_pp(["a b"], [["a c"]]) == pytest.approx(25.0)
    assert M.chrf_pp(["the dog runs"], [["the dog runs"]]) == pytest.approx(100.0)
    assert M.chrf_pp(["xyz"], [["abc"]]) == 0.0


def test_nist_hand_case():
    # refs: a, b, (a b) once each, 2 words: info(a) = info(b) = log2(2/1) = 1, info(a b) = log2(1/1) = 0
    # 1-grams: (1 + 1) / 2 = 1; 2-grams: 0 / 1 -> NIST = 1
    assert M.nist(["a b"], [["a b"]]) == pytest.approx(1.0)
    assert M.nist_brevity_penalty(3, 2) == pytest.approx(0.5)
    assert M.nist_brevity_penalty(2, 3) == 1.0
    # a shorter hypothesis is penalised
    assert M.nist(["a"], [["a b"]]) < 1.0


def test_meteor_exact_and_stem():
    # identical 3 words: P = R = 1, one chunk -> 1 - 0.5 * (1/3)^3
    assert M.meteor(["the dog runs"], [["the dog runs"]]) == pytest.approx(1 - 0.5 / 27)
    # no exact match, two stem matches in one chunk -> 1 - 0.5 * (1/2)^3
    assert M.meteor(["dogs run"], [["dog runs"]]) == pytest.approx(1 - 0.5 / 8)
    # two chunks of one word each: m = 2, chunks = 2 -> 1 - 0.5 * 1
    assert M.meteor(["a b"], [["b a"]]) == pytest.approx(0.5)
    assert M.meteor(["x"], [["y"]]) == 0.0


def test_stemmer():
    for word, stem in [("running", "run"), ("carries", "carry"), ("catches", "catch"), ("painted", "paint"),
                       ("dogs", "dog"), ("dog", "dog"), ("is", "is")]:
        assert M.stem(word) == stem, word


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
    task = D.chat(n_test=20, seed=0)
    assert len(task.train) > 300 and len(task.test) == 20
    assert set(e.source for e in task.train).isdisjoint(e.source for e in task.test)
    assert all(e.refs for e in task.test)


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
    monkeypatch.setattr(T, "cache_dir", lambda: tmp_path)
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
