"""Text-generation metrics of MERGE's Table 3 that run offline, written out here.

The paper used HF ``evaluate`` (nltk NIST and METEOR, rouge-score ROUGE-L, sacrebleu chrF++) and two
hub models (BERTScore, BARTScore). Here:

- ``rouge_l``: LCS F1 per sentence, best reference, averaged (as ``rouge-score``'s ROUGE-L);
- ``chrf_pp``: chrF++ (Popović 2017): character 1-6-grams (spaces removed) and word 1-2-grams,
  β = 2, statistics summed over the corpus, best reference per sentence (as sacrebleu's CHRF with
  ``word_order=2``), on a 0-100 scale;
- ``nist``: NIST (Doddington 2002), 5-grams, information weights from the references, best
  reference per sentence, Doddington's brevity penalty (as nltk's ``corpus_nist``);
- ``meteor``: METEOR (Banerjee & Lavie 2005) with exact + stem matching only (no WordNet synonyms:
  "METEOR (no synonyms)"), α = 0.9, β = 3, γ = 0.5, best reference, averaged. The stemmer is a
  small suffix stripper (``stem``), not Porter's;
- ``embedding_f1``: the **BERTScore proxy**: greedy-matching F1 of token vectors (BERTScore's
  formula) with the vectors of our own tiny teacher instead of RoBERTa-large;
- the **BARTScore proxy** lives in ``train.py`` (it needs a model): the teacher's mean log p(hyp | source).

Every text is a string of space-separated tokens (see ``data.tokenize``).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np


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


def _ngrams(tokens, n):
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


# ---------------------------------------------------------------------------------------------
# ROUGE-L
# ---------------------------------------------------------------------------------------------


def lcs_length(a: list, b: list) -> int:
    """Length of the longest common subsequence (dynamic programming, O(len(a)·len(b)))."""
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def rouge_l_sentence(hyp: str, ref: str) -> float:
    h, r = hyp.split(), ref.split()
    lcs = lcs_length(h, r)
    if lcs == 0:
        return 0.0
    p, rec = lcs / len(h), lcs / len(r)
    return 2 * p * rec / (p + rec)


def rouge_l(hyps: list[str], refs: list[list[str]]) -> float:
    """Mean over sentences of the best-reference ROUGE-L F1."""
    _check(hyps, refs)
    return float(np.mean([max(rouge_l_sentence(h, r) for r in rs) for h, rs in zip(hyps, refs)]))


# ---------------------------------------------------------------------------------------------
# chrF++
# ---------------------------------------------------------------------------------------------

CHAR_ORDER, WORD_ORDER, CHRF_BETA = 6, 2, 2.0


def _chrf_stats(hyp: str, ref: str) -> np.ndarray:
    """[hyp count, ref count, matches] for char orders 1..6 then word orders 1..2."""
    stats = []
    hc, rc = hyp.replace(" ", ""), ref.replace(" ", "")
    for n in range(1, CHAR_ORDER + 1):
        a, b = _ngrams(hc, n), _ngrams(rc, n)
        stats += [sum(a.values()), sum(b.values()), sum((a & b).values())]
    hw, rw = hyp.split(), ref.split()
    for n in range(1, WORD_ORDER + 1):
        a, b = _ngrams(hw, n), _ngrams(rw, n)
        stats += [sum(a.values()), sum(b.values()), sum((a & b).values())]
    return np.array(stats, dtype=float)


def _chrf_from_stats(stats: np.ndarray, beta: float = CHRF_BETA) -> float:
    """Mean over n-gram orders of F_beta; orders with no hypothesis or reference n-grams are
    left out of the mean (sacrebleu's "effective order")."""
    scores, eff = 0.0, 0
    for i in range(0, len(stats), 3):
        n_hyp, n_ref, n_match = stats[i : i + 3]
        if n_hyp > 0 and n_ref > 0:
            eff += 1
            p, r = n_match / n_hyp, n_match / n_ref
            if p + r > 0:
                scores += (1 + beta**2) * p * r / (beta**2 * p + r)
    return 100.0 * scores / eff if eff else 0.0


def chrf_pp(hyps: list[str], refs: list[list[str]]) -> float:
    """Corpus chrF++ on 0-100: statistics of the best reference of each sentence, summed."""
    _check(hyps, refs)
    total = np.zeros(3 * (CHAR_ORDER + WORD_ORDER))
    for h, rs in zip(hyps, refs):
        cand = [_chrf_stats(h, r) for r in rs]
        total += max(cand, key=_chrf_from_stats)
    return _chrf_from_stats(total)


# ---------------------------------------------------------------------------------------------
# NIST
# ---------------------------------------------------------------------------------------------


def nist_brevity_penalty(ref_len: float, hyp_len: float) -> float:
    """exp(β·log²(min(L_hyp/L_ref, 1))) with β set so that the penalty is 0.5 at ratio 2/3."""
    ratio = hyp_len / ref_len if ref_len > 0 else 0.0
    if ratio >= 1:
        return 1.0
    if ratio <= 0:
        return 0.0
    beta = math.log(0.5) / math.log(1.5) ** 2
    return math.exp(beta * math.log(ratio) ** 2)


def nist(hyps: list[str], refs: list[list[str]], n: int = 5) -> float:
    """Corpus NIST: Σ_k (Σ info of matched k-grams / # hyp k-grams) × brevity penalty.

    info(w1..wk) = log2(count(w1..wk-1) / count(w1..wk)) over all references of the corpus
    (the count of the empty prefix is the number of reference words)."""
    _check(hyps, refs)
    freq: Counter = Counter()
    n_ref_words = 0
    for rs in refs:
        for r in rs:
            toks = r.split()
            n_ref_words += len(toks)
            for k in range(1, n + 1):
                freq.update(_ngrams(toks, k))
    info = {g: math.log2((freq[g[:-1]] if len(g) > 1 else n_ref_words) / c) for g, c in freq.items()}

    score = 0.0
    l_ref = l_sys = 0
    for k in range(1, n + 1):
        num = den = 0.0
        for h, rs in zip(hyps, refs):
            ht = h.split()
            hg = _ngrams(ht, k)
            best = None
            for r in rs:
                rt = r.split()
                overlap = hg & _ngrams(rt, k)
                nu = sum(info[g] * c for g, c in overlap.items())
                de = sum(hg.values())
                cand = (nu / de if de else 0.0, nu, de, len(rt))
                best = cand if best is None or cand > best else best
            num += best[1]
            den += best[2]
            l_ref += best[3]  # summed over orders, each with its own best reference (as nltk)
            l_sys += len(ht)
        score += num / den if den else 0.0
    return score * nist_brevity_penalty(l_ref, l_sys)


# ---------------------------------------------------------------------------------------------
# METEOR (exact + stem)
# ---------------------------------------------------------------------------------------------

_SUFFIXES = ("ational", "fulness", "iveness", "ization", "ations", "ement", "ments", "ation",
             "ness", "ment", "ings", "able", "ible", "ies", "ied", "ing", "ers", "est", "ful",
             "ed", "er", "es", "ly", "s")


def stem(word: str) -> str:
    """A small suffix stripper: the longest listed suffix is cut when a stem of at least three
    letters remains, then a doubled final consonant is undoubled (``running`` → ``run``).

    It stands in for the Porter stemmer of METEOR's stem module; it conflates the inflections
    that matter for our tasks (plural, 3rd person, -ing, -ed) and little else."""
    w = word.lower()
    for suf in _SUFFIXES:
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            w = w[: -len(suf)]
            if suf in ("ies", "ied"):
                w += "y"
            elif suf in ("ing", "ed", "er", "est") and len(w) >= 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
                w = w[:-1]
            break
    return w


def _align(h: list[str], r: list[str]) -> list[tuple[int, int]]:
    """Exact matches first, then stem matches among the words left; each stage greedy, left to
    right, each hypothesis word taking the first free reference word it matches."""
    pairs, used_h, used_r = [], set(), set()
    for key in (lambda w: w, stem):
        rk = [key(w) for w in r]
        for i, w in enumerate(h):
            if i in used_h:
                continue
            kw = key(w)
            for j, x in enumerate(rk):
                if j not in used_r and x == kw:
                    pairs.append((i, j))
                    used_h.add(i)
                    used_r.add(j)
                    break
    return sorted(pairs)


def meteor_sentence(hyp: str, ref: str, alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5) -> float:
    h, r = hyp.split(), ref.split()
    pairs = _align(h, r)
    m = len(pairs)
    if m == 0:
        return 0.0
    p, rec = m / len(h), m / len(r)
    fmean = p * rec / (alpha * p + (1 - alpha) * rec)
    chunks = 1 + sum(
        1 for (i0, j0), (i1, j1) in zip(pairs, pairs[1:]) if not (i1 == i0 + 1 and j1 == j0 + 1)
    )
    penalty = gamma * (chunks / m) ** beta
    return fmean * (1 - penalty)


def meteor(hyps: list[str], refs: list[list[str]]) -> float:
    """Mean over sentences of the best-reference METEOR (exact + stem; no synonyms)."""
    _check(hyps, refs)
    return float(np.mean([max(meteor_sentence(h, r) for r in rs) for h, rs in zip(hyps, refs)]))


# ---------------------------------------------------------------------------------------------
# BERTScore proxy: greedy-matching F1 over token vectors
# ---------------------------------------------------------------------------------------------


def embedding_f1(hyps: list[str], refs: list[list[str]], vectors: dict | callable) -> float:
    """**BERTScore proxy.** BERTScore's greedy matching (P = mean over hypothesis tokens of the
    best cosine to a reference token, R the other way, F1) with token vectors from ``vectors``
    (a word -> vector mapping or function), best reference per sentence, averaged. An empty
    hypothesis scores 0."""
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
