"""Text-generation metrics of MERGE's Table 3, from the libraries the paper's evaluation used.

The paper used HF ``evaluate``, which wraps nltk (NIST, METEOR), rouge-score (ROUGE-L) and
sacrebleu (chrF++), and two hub models (BERTScore, BARTScore). The four n-gram metrics here call
those libraries (pinned in requirements.lock; all run offline):

- ``rouge_l``: rouge-score's ``RougeScorer(["rougeL"]).score_multi`` (best reference by F1), F1
  averaged over sentences;
- ``chrf_pp``: sacrebleu's ``CHRF(word_order=2)`` (chrF++, β = 2), corpus level, best reference per
  sentence, 0-100;
- ``nist``: nltk's ``corpus_nist`` (5-grams, information weights from the references);
- ``meteor``: nltk's ``meteor_score`` with exact + stem (Porter) matching only, averaged over
  sentences: WordNet cannot be downloaded here, so synonyms are off (``NoSynonyms``):
  "METEOR (no synonyms)";
- ``embedding_f1``: the **BERTScore proxy** (hand-written, see there);
- the **BARTScore proxy** lives in ``train.py`` (it needs a model): the teacher's mean log p(hyp | source).

Tokenisation: every text is a string of space-separated tokens (``data.tokenize``: lower-case
words, punctuation marks as tokens), and every metric sees exactly those tokens: ``str.split`` for
nltk and rouge-score (whose default tokenizer would drop punctuation), and sacrebleu's own
whitespace split, which leaves one-character punctuation tokens alone.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from nltk.stem.porter import PorterStemmer
from nltk.translate.meteor_score import meteor_score as _nltk_meteor
from nltk.translate.nist_score import corpus_nist
from rouge_score.rouge_scorer import RougeScorer
from sacrebleu.metrics import CHRF

NIST_ORDER = 5


def _check(hyps, refs):
    if isinstance(hyps, str) or isinstance(refs, str):
        raise TypeError("hyps and refs must be lists (of strings / of lists of strings), not a string")
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} reference lists")
    if len(hyps) == 0:
        raise ValueError("no hypotheses to score")
    for r in refs:
        if isinstance(r, str) or len(r) == 0:
            raise ValueError("each entry of refs must be a non-empty list of reference strings")


# ---------------------------------------------------------------------------------------------
# ROUGE-L
# ---------------------------------------------------------------------------------------------


class _SpaceTokenizer:
    """Our texts are already tokenised: keep every token, punctuation included."""

    @staticmethod
    def tokenize(text: str) -> list[str]:
        return text.split()


_ROUGE = RougeScorer(["rougeL"], tokenizer=_SpaceTokenizer())


def rouge_l(hyps: list[str], refs: list[list[str]]) -> float:
    """Mean over sentences of the best-reference ROUGE-L F1 (rouge-score)."""
    _check(hyps, refs)
    return float(np.mean([_ROUGE.score_multi(rs, h)["rougeL"].fmeasure for h, rs in zip(hyps, refs)]))


# ---------------------------------------------------------------------------------------------
# chrF++
# ---------------------------------------------------------------------------------------------


def chrf_pp(hyps: list[str], refs: list[list[str]]) -> float:
    """Corpus chrF++ on 0-100 (sacrebleu ``CHRF(word_order=2)``): statistics of each sentence's
    best reference, summed over the corpus. Sentences may have different numbers of references
    (sacrebleu takes ``None`` for a missing one)."""
    _check(hyps, refs)
    k = max(len(rs) for rs in refs)
    streams = [[rs[i] if i < len(rs) else None for rs in refs] for i in range(k)]
    return float(CHRF(word_order=2).corpus_score(list(hyps), streams).score)


# ---------------------------------------------------------------------------------------------
# NIST
# ---------------------------------------------------------------------------------------------


def nist(hyps: list[str], refs: list[list[str]], n: int = NIST_ORDER) -> float:
    """Corpus NIST (nltk ``corpus_nist``) of order ``n``.

    nltk divides by the number of hypothesis k-grams of every order k, so orders that no
    hypothesis is long enough to have are left out (they could only add 0); a corpus of empty
    hypotheses scores 0."""
    _check(hyps, refs)
    hyp_tokens = [h.split() for h in hyps]
    order = min(n, max(len(h) for h in hyp_tokens))
    if order == 0:
        return 0.0
    return float(corpus_nist([[r.split() for r in rs] for rs in refs], hyp_tokens, n=order))


# ---------------------------------------------------------------------------------------------
# METEOR (exact + stem)
# ---------------------------------------------------------------------------------------------


class NoSynonyms:
    """Stands in for nltk's WordNet reader: no word has synonyms, so METEOR's third stage (WordNet
    synonyms) matches nothing and only the exact and stem (Porter) stages count. The WordNet
    corpus is a separate download that this offline build does not have."""

    @staticmethod
    def synsets(word: str) -> list:
        return []


class MemoStemmer:
    """nltk's Porter stemmer (METEOR's default) with a memo. METEOR stems every word of both texts
    again for each (hypothesis, reference) pair: measured at paper shapes, 561,000 stems took 13 of
    the 76 s of one task's Table 3 evaluation on a CPU. A word's stem does not change, so the scores
    are nltk's (tests/test_merge.py compares them with nltk's own stemmer)."""

    def __init__(self):
        self.stem = lru_cache(maxsize=None)(PorterStemmer().stem)


_STEMMER = MemoStemmer()


def meteor(hyps: list[str], refs: list[list[str]]) -> float:
    """Mean over sentences of nltk's best-reference METEOR (α = 0.9, β = 3, γ = 0.5; exact + stem
    matching, no synonyms: see ``NoSynonyms``)."""
    _check(hyps, refs)
    return float(np.mean([_nltk_meteor([r.split() for r in rs], h.split(), stemmer=_STEMMER, wordnet=NoSynonyms())
                          for h, rs in zip(hyps, refs)]))


# ---------------------------------------------------------------------------------------------
# BERTScore proxy: greedy-matching F1 over token vectors
# ---------------------------------------------------------------------------------------------


def embedding_f1(hyps: list[str], refs: list[list[str]], vectors: dict | callable) -> float:
    """**BERTScore proxy.** BERTScore's greedy matching (P = mean over hypothesis tokens of the
    best cosine to a reference token, R the other way, F1) with token vectors from ``vectors``
    (a word -> vector mapping or function), best reference per sentence, averaged. An empty
    hypothesis scores 0."""
    # Hand-written on purpose: the ``bert-score`` package only runs with a hub model (RoBERTa) and
    # its tokenizer, neither of which is available offline; the formula is a few lines.
    _check(hyps, refs)
    get = vectors if callable(vectors) else vectors.__getitem__

    def unit(tokens):
        m = np.stack([np.asarray(get(t), dtype=float) for t in tokens])
        return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)

    out = []
    for h, rs in zip(hyps, refs):
        if not h.split():
            out.append(0.0)
            continue
        hv = unit(h.split())
        best = 0.0
        for r in rs:
            if not r.split():
                continue
            sim = hv @ unit(r.split()).T
            p, rec = sim.max(axis=1).mean(), sim.max(axis=0).mean()
            best = max(best, 2 * p * rec / (p + rec) if p + rec > 0 else 0.0)
        out.append(best)
    return float(np.mean(out))


NGRAM_METRICS = {"NIST": nist, "ROUGE-L": rouge_l, "METEOR (no synonyms)": meteor, "chrF++": chrf_pp}


def score_all(hyps: list[str], refs: list[list[str]]) -> dict:
    """The four n-gram metrics of Table 3 in one dict (the model-based proxies need a model)."""
    return {name: fn(hyps, refs) for name, fn in NGRAM_METRICS.items()}
