"""Offline stand-ins for MERGE's three generation tasks, and the word-level vocabulary.

None of the paper's datasets (MultiWOZ 2.1 NLG, CommonGen, DailyDialog) ships on PyPI, so:

- ``acts``: synthetic dialog-act -> system response (MultiWOZ-like): 4 domains, 10 slots, several
  paraphrase templates per act, every template realisation is a reference;
- ``concepts``: synthetic concept set -> sentence (CommonGen-like): a shuffled set of 3-4 lemmas
  (subject, verb, object, place) -> an inflected sentence that must use all of them;
- ``chat``: real human-written conversations from the ``chatterbot-corpus`` wheel (read by
  ``privtrans.shared.datasets.chatterbot``), previous turn -> next turn (a small DailyDialog
  stand-in).

The synthetic generators are deterministic functions of their seed. Texts are lower-case words and
punctuation separated by single spaces, so ``text.split()`` is the tokenisation everywhere.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from privtrans.shared.datasets import chatterbot

PAD, SEP, EOS, UNK = "<pad>", "<sep>", "<eos>", "<unk>"
SPECIALS = (PAD, SEP, EOS, UNK)
TASKS = ("acts", "concepts", "chat")

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]")


def tokenize(text: str) -> list[str]:
    """Lower-case words (keeping contractions such as ``don't``) and single punctuation marks."""
    return _TOKEN.findall(text.lower())


@dataclass
class Example:
    """One conditional generation case: the source text and every acceptable reference."""

    source: str
    refs: list[str]
    meta: dict = field(default_factory=dict)


@dataclass
class TaskData:
    name: str
    train: list[Example]  # training uses refs[0] (one sampled realisation per example)
    test: list[Example]

    def __repr__(self):
        return f"TaskData({self.name!r}, train={len(self.train)}, test={len(self.test)})"


# ---------------------------------------------------------------------------------------------
# MultiWOZ-like: dialog acts -> response
# ---------------------------------------------------------------------------------------------

_SLOTS = {
    "food": ["italian", "chinese", "indian", "british", "french", "thai"],
    "area": ["north", "south", "east", "west", "centre"],
    "price": ["cheap", "moderate", "expensive"],
    "stars": ["two", "three", "four", "five"],
    "day": ["monday", "tuesday", "friday", "saturday", "sunday"],
    "time": ["9:00", "11:30", "14:15", "17:45", "19:00"],
    "people": ["two", "three", "four", "six"],
    "dest": ["cambridge", "london", "ely", "norwich", "stansted"],
    "type": ["museum", "park", "theatre", "college", "gallery"],
    "name": ["the golden curry", "pizza hut", "the lensfield", "acorn house", "kings college"],
}
_DOMAINS = {
    "restaurant": ["food", "area", "price", "name"],
    "hotel": ["area", "price", "stars", "name"],
    "train": ["dest", "day", "time", "people"],
    "attraction": ["type", "area", "name"],
}
# {slot} placeholders are filled with the act's values; each list holds paraphrases.
_INFORM = {
    "food": ["it serves {food} food", "they serve {food} food", "the food is {food}"],
    "area": ["it is in the {area}", "it is located in the {area} area", "it is in the {area} of town"],
    "price": ["it is in the {price} price range", "it is {price}", "the prices are {price}"],
    "stars": ["it has {stars} stars", "it is rated {stars} stars", "it is a {stars} star place"],
    "day": ["it leaves on {day}", "it runs on {day}", "the train is on {day}"],
    "time": ["it departs at {time}", "it leaves at {time}", "the departure is at {time}"],
    "people": ["for {people} people", "for a party of {people}", "for {people} guests"],
    "dest": ["it goes to {dest}", "it arrives in {dest}", "the destination is {dest}"],
    "type": ["it is a {type}", "it is a lovely {type}", "this {type} is popular"],
    "name": ["{name} is a good choice", "i recommend {name}", "try {name}"],
}
_REQUEST = {
    "food": ["what type of food would you like ?", "which cuisine do you prefer ?"],
    "area": ["which area would you like ?", "what part of town do you prefer ?"],
    "price": ["what price range are you looking for ?", "do you have a price range in mind ?"],
    "stars": ["how many stars would you like ?", "what star rating do you need ?"],
    "day": ["what day will you travel ?", "which day do you need the train ?"],
    "time": ["what time would you like to leave ?", "when do you want to depart ?"],
    "people": ["how many people will there be ?", "for how many people ?"],
    "dest": ["where are you going ?", "what is your destination ?"],
    "type": ["what kind of attraction are you looking for ?", "what type of place do you want ?"],
    "name": ["do you have a name in mind ?", "which one are you looking for ?"],
}
_BOOK = ["i have booked it for you .", "your booking is complete .", "the booking was successful ."]
_NOOFFER = [
    "sorry , there is no {domain} like that .",
    "i am sorry , i can not find a {domain} matching that .",
    "unfortunately no {domain} matches your request .",
]


def _acts_example(rng: np.random.Generator, n_refs: int) -> Example:
    domain = list(_DOMAINS)[rng.integers(len(_DOMAINS))]
    slots = _DOMAINS[domain]
    kind = rng.choice(["inform", "inform", "request", "book", "nooffer"])
    if kind == "inform":
        k = int(rng.integers(1, 4))
        chosen = [slots[i] for i in sorted(rng.choice(len(slots), size=k, replace=False))]
        values = {s: _SLOTS[s][rng.integers(len(_SLOTS[s]))] for s in chosen}
        source = f"{domain} inform ( " + " ; ".join(f"{s} = {values[s]}" for s in chosen) + " )"
        # one reference per template index j: every slot phrase uses its j-th paraphrase
        refs = []
        for j in range(n_refs):
            parts = [_INFORM[s][(j + i) % len(_INFORM[s])].format(**values) for i, s in enumerate(chosen)]
            refs.append(" , and ".join(parts) + " .")
    elif kind == "request":
        s = slots[rng.integers(len(slots))]
        source = f"{domain} request ( {s} )"
        refs = [_REQUEST[s][j % len(_REQUEST[s])] for j in range(n_refs)]
    elif kind == "book":
        people = _SLOTS["people"][rng.integers(4)]
        source = f"{domain} book ( people = {people} )"
        refs = [_BOOK[j % len(_BOOK)].replace(" .", f" for {people} people .") for j in range(n_refs)]
    else:
        source = f"{domain} nooffer ( )"
        refs = [_NOOFFER[j % len(_NOOFFER)].format(domain=domain) for j in range(n_refs)]
    return Example(source, refs, {"kind": str(kind), "domain": domain})


# ---------------------------------------------------------------------------------------------
# CommonGen-like: concept set -> sentence
# ---------------------------------------------------------------------------------------------

_SUBJECTS = ["dog", "man", "woman", "boy", "girl", "cat", "child", "player", "farmer", "student"]
# verb lemma -> (3rd person singular, -ing form, objects it takes)
_VERBS = {
    "throw": ("throws", "throwing", ["ball", "frisbee", "stone", "stick"]),
    "catch": ("catches", "catching", ["ball", "frisbee", "fish", "stick"]),
    "ride": ("rides", "riding", ["bike", "horse", "wave", "bus"]),
    "eat": ("eats", "eating", ["apple", "sandwich", "cake", "fish"]),
    "read": ("reads", "reading", ["book", "letter", "map", "newspaper"]),
    "paint": ("paints", "painting", ["fence", "wall", "picture", "boat"]),
    "wash": ("washes", "washing", ["car", "dish", "dog", "window"]),
    "carry": ("carries", "carrying", ["bag", "box", "child", "basket"]),
    "kick": ("kicks", "kicking", ["ball", "door", "stone", "can"]),
    "pull": ("pulls", "pulling", ["rope", "cart", "boat", "wagon"]),
}
_PLACES = ["park", "beach", "garden", "street", "field", "kitchen", "river", "yard"]
_CONCEPT_TEMPLATES = [
    "the {s} {v3} the {o} in the {p} .",
    "a {s} is {ving} a {o} at the {p} .",
    "in the {p} , a {s} {v3} a {o} .",
]
_CONCEPT_TEMPLATES_NOPLACE = [
    "the {s} {v3} the {o} .",
    "a {s} is {ving} a {o} .",
    "the {s} is {ving} the {o} .",
]


def _concepts_example(rng: np.random.Generator, n_refs: int) -> Example:
    s = _SUBJECTS[rng.integers(len(_SUBJECTS))]
    verb = list(_VERBS)[rng.integers(len(_VERBS))]
    v3, ving, objects = _VERBS[verb]
    o = objects[rng.integers(len(objects))]
    with_place = bool(rng.random() < 0.7)
    p = _PLACES[rng.integers(len(_PLACES))]
    concepts = [s, verb, o] + ([p] if with_place else [])
    order = rng.permutation(len(concepts))
    source = " ".join(concepts[i] for i in order)
    templates = _CONCEPT_TEMPLATES if with_place else _CONCEPT_TEMPLATES_NOPLACE
    refs = [templates[j % len(templates)].format(s=s, v3=v3, ving=ving, o=o, p=p) for j in range(n_refs)]
    forms = {verb: {verb, v3, ving}}
    return Example(source, refs, {"concepts": concepts, "forms": {c: sorted(forms.get(c, {c})) for c in concepts}})


def concept_coverage(outputs: list[str], examples: list[Example]) -> float:
    """Fraction of input concepts (in any inflected form) that appear in the generated sentences."""
    hit = tot = 0
    for out, ex in zip(outputs, examples):
        words = set(out.split())
        for c in ex.meta["concepts"]:
            tot += 1
            hit += bool(words & set(ex.meta["forms"][c]))
    return hit / max(tot, 1)


def synthetic(name: str, n_train: int, n_test: int, seed: int, n_refs: int = 3) -> TaskData:
    """A synthetic task; the same (name, sizes, seed) always gives the same examples.

    Training examples keep one reference, drawn at random among the paraphrases (as a corpus
    with one response per input would); test examples keep all ``n_refs``."""
    make = {"acts": _acts_example, "concepts": _concepts_example}.get(name)
    if make is None:
        raise ValueError(f"unknown synthetic task {name!r}: expected 'acts' or 'concepts'")
    if n_train < 1 or n_test < 1 or n_refs < 1:
        raise ValueError(f"n_train, n_test and n_refs must be positive, got {n_train}, {n_test}, {n_refs}")
    rng = np.random.default_rng([seed, TASKS.index(name)])
    train = []
    for _ in range(n_train):
        ex = make(rng, n_refs)
        pick = ex.refs[rng.integers(len(ex.refs))]
        train.append(Example(ex.source, [pick], ex.meta))
    test = [make(rng, n_refs) for _ in range(n_test)]
    return TaskData(name, train, test)


# ---------------------------------------------------------------------------------------------
# chatterbot-corpus: real conversations (DailyDialog stand-in)
# ---------------------------------------------------------------------------------------------

def chatterbot_pairs(max_words: int = 24) -> list[tuple[str, str]]:
    """(previous turn, next turn) pairs of every English conversation, in file order.

    Turns are tokenised and cut to ``max_words`` words (the context from the left, as MERGE cuts
    prefixes, and the response from the right)."""
    pairs = []
    for conv in chatterbot.conversations():
        turns = [" ".join(tokenize(t)) for t in conv]
        for a, b in zip(turns, turns[1:]):
            if a and b:
                pairs.append((" ".join(a.split()[-max_words:]), " ".join(b.split()[:max_words])))
    return pairs


def chat(n_test: int, seed: int, max_words: int = 24, n_train: int | None = None) -> TaskData:
    """The chatterbot-corpus task: a seeded split by distinct context; a test context keeps every
    response it has in the corpus as its references."""
    by_ctx: dict[str, list[str]] = {}
    for a, b in chatterbot_pairs(max_words):
        by_ctx.setdefault(a, []).append(b)
    contexts = sorted(by_ctx)
    if n_test >= len(contexts):
        raise ValueError(f"n_test={n_test} but the corpus has only {len(contexts)} distinct contexts")
    order = np.random.default_rng([seed, TASKS.index("chat")]).permutation(len(contexts))
    test_ctx = [contexts[i] for i in order[:n_test]]
    train_ctx = [contexts[i] for i in order[n_test:]]
    train = [Example(c, [r]) for c in train_ctx for r in by_ctx[c]]
    if n_train is not None:
        train = train[:n_train]
    test = [Example(c, list(dict.fromkeys(by_ctx[c]))) for c in test_ctx]
    return TaskData("chat", train, test)


def load_task(name: str, n_train: int, n_test: int, seed: int, n_refs: int = 3) -> TaskData:
    """One of ``TASKS`` at the given size (``chat`` has a fixed size: n_train caps it)."""
    if name == "chat":
        return chat(n_test, seed, n_train=n_train)
    return synthetic(name, n_train, n_test, seed, n_refs)


# ---------------------------------------------------------------------------------------------
# vocabulary and the ``source <sep> target <eos>`` sequences
# ---------------------------------------------------------------------------------------------


class Vocab:
    """Word <-> id. Ids 0..3 are ``<pad> <sep> <eos> <unk>``."""

    def __init__(self, words):
        self.itos = list(SPECIALS) + [w for w in words if w not in SPECIALS]
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    @classmethod
    def build(cls, task: TaskData, min_count: int = 1) -> "Vocab":
        """From the training sources and targets only (test words may be ``<unk>``)."""
        counts = Counter(w for ex in task.train for text in (ex.source, ex.refs[0]) for w in text.split())
        return cls(sorted(w for w, c in counts.items() if c >= min_count))

    def __len__(self):
        return len(self.itos)

    pad, sep, eos, unk = 0, 1, 2, 3

    def encode(self, text: str) -> list[int]:
        return [self.stoi.get(w, self.unk) for w in text.split()]

    def decode(self, ids) -> str:
        """Words up to the first ``<eos>``; special tokens are dropped."""
        out = []
        for i in ids:
            i = int(i)
            if i == self.eos:
                break
            if i >= len(SPECIALS):
                out.append(self.itos[i])
        return " ".join(out)


def prompt_ids(vocab: Vocab, source: str, max_src: int) -> list[int]:
    """``source <sep>``, the source cut from the left to ``max_src`` tokens."""
    return vocab.encode(source)[-max_src:] + [vocab.sep]


def encode_pairs(vocab: Vocab, examples: list[Example], max_len: int, max_src: int):
    """Training sequences ``source <sep> target <eos>`` right-padded to ``max_len``.

    Returns (ids [N, max_len] int64, target-mask [N, max_len] bool: True where position t+1 is a
    target token, i.e. where the next-token loss of the response is taken)."""
    import torch

    ids = torch.full((len(examples), max_len), vocab.pad, dtype=torch.long)
    is_tgt = torch.zeros((len(examples), max_len), dtype=torch.bool)
    for n, ex in enumerate(examples):
        p = prompt_ids(vocab, ex.source, max_src)
        seq = (p + vocab.encode(ex.refs[0]) + [vocab.eos])[:max_len]
        ids[n, : len(seq)] = torch.tensor(seq)
        is_tgt[n, len(p) - 1 : len(seq) - 1] = True
    return ids, is_tgt
