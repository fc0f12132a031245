"""privtrans.merge.metrics: ROUGE-L, chrF++, NIST and METEOR on hand-computed cases and against their
reference libraries, and the embedding-F1 proxy."""

import math

import numpy as np
import pytest

from privtrans.merge import metrics


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
    assert metrics.rouge_l(["the cat sat on the mat"], [["the cat is on the mat"]]) == pytest.approx(5 / 6)
    # best reference counts
    assert metrics.rouge_l(["a b"], [["x y", "a b"]]) == pytest.approx(1.0)
    assert metrics.rouge_l(["a b"], [["x y"]]) == 0.0
    # punctuation tokens count (rouge-score's default tokenizer would drop them and score 1)
    assert metrics.rouge_l(["hello ."], [["hello !"]]) == pytest.approx(0.5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rouge_l_is_best_reference_lcs_f1(seed):
    hyps, refs = _random_corpus(seed)

    def f1(h, r):
        h, r = h.split(), r.split()
        lcs = _lcs(h, r)
        return 0.0 if lcs == 0 else 2 * lcs / (len(h) + len(r))

    want = np.mean([max(f1(h, r) for r in rs) for h, rs in zip(hyps, refs)])
    assert metrics.rouge_l(hyps, refs) == pytest.approx(want)


def test_chrf_pp_hand_case():
    # chars "ab" vs "ac": 1-grams P=R=0.5, 2-grams 0, longer orders absent; words: 1-grams 0.5,
    # 2-grams 0 -> mean precision = mean recall = 1.0 / 4 over the 4 effective orders -> 25
    assert metrics.chrf_pp(["a b"], [["a c"]]) == pytest.approx(25.0)
    assert metrics.chrf_pp(["the dog runs"], [["the dog runs"]]) == pytest.approx(100.0)
    assert metrics.chrf_pp(["xyz"], [["abc"]]) == 0.0


@pytest.mark.parametrize("seed", [0, 1])
def test_chrf_pp_matches_sacrebleu(seed):
    import sacrebleu

    hyps, refs = _random_corpus(seed)
    # one reference each: sacrebleu's corpus_chrf takes it as one stream
    one = [rs[:1] for rs in refs]
    assert metrics.chrf_pp(hyps, one) == pytest.approx(sacrebleu.corpus_chrf(hyps, [[r[0] for r in one]], word_order=2).score)
    # several references: the best one per sentence, statistics summed (same as sacrebleu's
    # equal-count streams when every sentence has all of them)
    three = [(rs * 3)[:3] for rs in refs]
    streams = [[r[i] for r in three] for i in range(3)]
    assert metrics.chrf_pp(hyps, three) == pytest.approx(sacrebleu.corpus_chrf(hyps, streams, word_order=2).score)
    # a variable number of references: repeating a sentence's own references changes nothing
    assert metrics.chrf_pp(hyps, refs) == pytest.approx(metrics.chrf_pp(hyps, three))


def test_nist_hand_case():
    # refs: a, b, (a b) once each, 2 words: info(a) = info(b) = log2(2/1) = 1, info(a b) = log2(1/1) = 0
    # 1-grams: (1 + 1) / 2 = 1; 2-grams: 0 / 1 -> NIST = 1
    assert metrics.nist(["a b"], [["a b"]]) == pytest.approx(1.0)
    # a shorter hypothesis is penalised
    assert metrics.nist(["a"], [["a b"]]) < 1.0
    # nothing generated: 0, not a division by zero
    assert metrics.nist(["", ""], [["a b"], ["c"]]) == 0.0


@pytest.mark.parametrize("seed", [0, 1])
def test_nist_matches_nltk(seed):
    from nltk.translate.nist_score import corpus_nist

    hyps, refs = _random_corpus(seed)
    hyps[0] = "the dog runs in the park ."  # some hypothesis reaches 5-grams
    want = corpus_nist([[r.split() for r in rs] for rs in refs], [h.split() for h in hyps], n=5)
    assert metrics.nist(hyps, refs) == pytest.approx(want)
    # short hypotheses only: the orders none of them reaches are left out instead of dividing by 0
    short = ["the dog", "a", "run ."]
    want = corpus_nist([[r.split() for r in rs] for rs in refs[:3]], [h.split() for h in short], n=2)
    assert metrics.nist(short, refs[:3]) == pytest.approx(want)


def test_meteor_exact_and_stem():
    # identical 3 words: P = R = 1, one chunk -> 1 - 0.5 * (1/3)^3
    assert metrics.meteor(["the dog runs"], [["the dog runs"]]) == pytest.approx(1 - 0.5 / 27)
    # no exact match, two stem matches in one chunk -> 1 - 0.5 * (1/2)^3
    assert metrics.meteor(["dogs run"], [["dog runs"]]) == pytest.approx(1 - 0.5 / 8)
    # two chunks of one word each: m = 2, chunks = 2 -> 1 - 0.5 * 1
    assert metrics.meteor(["a b"], [["b a"]]) == pytest.approx(0.5)
    assert metrics.meteor(["x"], [["y"]]) == 0.0
    # no synonyms: WordNet would match these two
    assert metrics.meteor(["car"], [["automobile"]]) == 0.0
    assert metrics.NoSynonyms.synsets("car") == []


@pytest.mark.parametrize("seed", [0, 1])
def test_meteor_matches_nltk_without_synonyms(seed):
    from nltk.translate.meteor_score import single_meteor_score

    hyps, refs = _random_corpus(seed)
    want = np.mean([max(single_meteor_score(r.split(), h.split(), wordnet=metrics.NoSynonyms()) for r in rs)
                    for h, rs in zip(hyps, refs)])
    assert metrics.meteor(hyps, refs) == pytest.approx(want)


def test_the_memo_stemmer_is_porters():
    from nltk.stem.porter import PorterStemmer

    words = "running runs ran dogs dog's generalisation happily caresses ponies the a".split() * 2
    memo = metrics.MemoStemmer()
    assert [memo.stem(w) for w in words] == [PorterStemmer().stem(w) for w in words]


def test_embedding_f1_proxy():
    vec = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]}
    assert metrics.embedding_f1(["a b"], [["a b"]], vec) == pytest.approx(1.0)
    assert metrics.embedding_f1(["a"], [["b"]], vec) == pytest.approx(0.0)
    # P = cos(a, c) = 1/sqrt2, R = 1/sqrt2 -> F1 = 1/sqrt2
    assert metrics.embedding_f1(["a"], [["c"]], vec) == pytest.approx(1 / math.sqrt(2))


def test_metric_input_errors():
    with pytest.raises(ValueError):
        metrics.rouge_l(["a", "b"], [["a"]])
    with pytest.raises(TypeError):
        metrics.chrf_pp("a b", [["a b"]])
    with pytest.raises(ValueError):
        metrics.nist(["a"], [[]])
    with pytest.raises(ValueError):
        metrics.meteor([], [])
