"""A chapter's claims file, evaluated against what its notebooks recorded.

``data/<chapter>/claims.yaml`` (a chapter may add ``claims.<part>.yaml`` files; their claims are
appended in file-name order)::

    paper: "Full citation of the paper"
    claims:
      - id: fig1_falls_with_n                 # unique in the chapter
        paper_item: "Figure 1"                # the table/figure it stands for
        kind: reproduction                    # or extension, or check (see below)
        quote: "the paper's own words"        # reproduction: verbatim (a string or a list of strings)
        quote_en: "..."                       # where the paper is not in English: a translation
        where: "§4.2; Figure 1 caption"       # reproduction: where the quote stands
        kind_why: "..."                       # check: why it is ours, not the paper's
        statement: "Excess risk falls with N at every epsilon"   # our operational statement
        paper_value: "monotone decrease"      # the paper's own number or statement (cited by `where`)
        notebook: fig1_low_dim                # whose results.json it reads
        value: "fig1_low_dim.frac_decreasing" # expression shown as 'this reproduction'
        # how the verdict is decided, exactly one of:
        predicate: "fig1_low_dim.frac_decreasing >= 0.9"   # deterministic: held / contradicted
        interval: "fig1_low_dim.dp_minus_ridge"  # stochastic: a paired interval or a dict/list of them
        margin: 0.0                           # with interval: what each cell's difference must clear, or
        band: [0.1, 0.3]                      # ... a claim of a size ("around 20 %"): held inside, contradicted outside
        need: all                             # with interval: all (default), any, 'all but K', or a count
        effect: 0.02                          # optional: the paper's difference in our units (seeds needed, trials)
        lost_seeds: count                     # with interval: a seed that gave no value counts as a failed run
                                              # (count, the default: no cell that lost one is held) or is
                                              # left out and said (drop: a Monte-Carlo repetition, not training)
        paper_test: "P('paper_tables', ...) - P(...)"  # interval: the paper's own difference(s), per cell
        paper_level: "P('paper_tables', ...)"  # interval, optional: the paper's level of the arm compared with,
                                              # per cell: its effect is planted at our level in the same
                                              # proportion (the trials' power in this build's own scale)
        exact: "..."                          # predicate reproduction: why its values carry no noise
        paper_inputs:                         # predicate: the paper's own numbers as the values it reads,
          fig1_low_dim.frac_decreasing: "P('paper_values', ...)"   # run through the claim's own predicate
        erratum: "..."                        # required exactly when the paper's own numbers fail the claim's
                                              # own test: why the paper's numbers do not support its sentence
        deviation: "..."                      # where our test must differ from the paper's sentence: how, why
        explanation:                          # optional: why a contradicted or inconclusive verdict came out
          kind: scale                         # so (the discrepancies appendix groups by it): scale (our
                                              # stand-in's size) or statement (how we had to state the claim:
                                              # its deviation); the paper's own numbers are an erratum instead
          why: "..."                          # in words (required with scale)
          evidence: "fig1_low_dim.n_params"   # scale: the recorded value that shows it (required)
        budgets: {arms: {...}, unequal: "..."}  # what each compared arm was tuned over (privtrans.book.budgets),
                                              # or a sentence: why the claim compares no tuned or trained arms
        reading: "..."                        # optional explanation ("our reading") ...
        reading_value: "fig1_low_dim.lr"      # ... with the recorded value it rests on (required with it)
        profiles: [ci, paper]                 # optional: where the claim is judged (default: all)
        precondition: "fig1_low_dim.n_eps > 1"  # optional: the setting can show the effect at all
        precondition_why: "..."               # optional: what the precondition means
        compares: [NoisyHead, ridge]          # with a precondition: the arms the claim compares ...
        gate_reads: [the N grid]              # ... and what the precondition reads: never one of them

Three kinds of claim. A **reproduction** tests a statement of the paper on data this build produced;
only reproductions count as the paper's claims. An **extension** tests the paper's own words (its
premise or mechanism, quoted and placed like a reproduction's) on data built for the test, not on
the paper's experiment: a mechanism study, counted apart from the reproductions on the page and the
dashboard, and run through the same trials. A **check** is true by our construction or is a
target we set; it guards the book, not the paper. Every claim ends in one of four verdicts
(:mod:`privtrans.book.verdicts`): held, contradicted, inconclusive, not judged, and the reason is
built from the recorded numbers (the interval, n, margin, the compared values), never written in
advance. A failed precondition, one seed, another profile or a value that could not be computed
gives "not judged" with the measured reason.

The paper's own numbers go through the claim's own test, never a second copy of it. An interval
claim's ``paper_test`` gives the paper's difference(s) in the claim's cells, read with
``P(file, col, **filters)`` from ``data/<chapter>/<file>.csv`` (:mod:`privtrans.book.paper_values`), and
judged with the same margin (band) and need as exact numbers. A predicate claim's ``paper_inputs``
gives the paper's numbers as the recorded values its predicate reads, and the predicate itself runs
on them. The test suite requires the paper to pass our test of its own claim, or, where it does not,
an ``erratum``: the paper's own numbers do not support its sentence, which the page shows with the
computed arithmetic as an erratum of the paper, not as our contradiction (an erratum on a claim the
paper passes is refused as stale); the trials
(:mod:`privtrans.book.trials`) then run every reproduction's test on a null, the paper's effect, a
reversal and a lost seed.

A precondition (a gate) may read only what the claim does not compare: its keys are never the keys
the claim's test reads, and the arms it reads (``gate_reads``) are never the arms the claim compares
(``compares``). A gate that read the compared arms could turn a contradiction into "not judged".

Expressions see one object per notebook (attribute access to its recorded values), a few harmless
functions and ``math``'s functions. They are evaluated by simpleeval, which refuses imports, names
starting with ``_`` and attributes starting with ``_`` (so no ``().__class__`` escape), not by
``eval``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace

from simpleeval import EvalWithCompoundTypes, InvalidExpression

from . import budgets as budgets_mod
from . import verdicts
from .paper_values import PaperValueError, lookup
from .paths import data_dir, read_yaml

FUNCTIONS = {"abs": abs, "min": min, "max": max, "all": all, "any": any, "len": len,
             "sum": sum, "round": round, "sorted": sorted}
# simpleeval refuses module objects; the predicates need math's functions and constants only
MATH = SimpleNamespace(**{k: getattr(math, k) for k in dir(math) if not k.startswith("_")})
REQUIRED = ("id", "paper_item", "kind", "statement", "paper_value", "notebook", "value")
KINDS = ("reproduction", "extension", "check")
QUOTED = ("reproduction", "extension")  # the kinds that test the paper's words: quoted, placed, put on trial
TESTS = ("predicate", "interval")  # exactly one decides the verdict
ALLOWED = set(REQUIRED) | set(TESTS) | {
    "quote", "quote_en", "where", "kind_why", "margin", "band", "need", "effect", "lost_seeds", "paper_test",
    "exact", "paper_inputs", "erratum", "deviation", "reading", "reading_value", "profiles", "precondition",
    "paper_level",
    "precondition_why", "compares", "gate_reads", "explanation", "budgets", "_file"}
#: what explains a contradicted or inconclusive reproduction (the discrepancies appendix); the
#: paper's own numbers failing its sentence are the claim's ``erratum``, not an explanation kind
EXPLANATION_KINDS = ("scale", "statement")
EXPLANATION_FIELDS = ("kind", "why", "evidence")
INTERVAL_ONLY = ("margin", "band", "need", "effect", "lost_seeds", "paper_test", "paper_level")


class ClaimsFileError(ValueError):
    pass


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _problems(c: dict) -> list[str]:
    """What is wrong with one claim's fields (empty when nothing is)."""
    out = []
    miss = [k for k in REQUIRED if k not in c]
    if miss:
        out.append(f"lacks {miss}")
    unknown = sorted(set(c) - ALLOWED)
    if unknown:
        out.append(f"has unknown field(s) {unknown}; allowed fields are {', '.join(sorted(ALLOWED - {'_file'}))}")
    if c.get("kind") not in KINDS:
        out.append(f"has kind {c.get('kind')!r}; allowed values are {', '.join(KINDS)}")
    tests = [t for t in TESTS if t in c]
    if len(tests) != 1:
        out.append(f"must have exactly one of {', '.join(TESTS)} (has {tests or 'none'})")
    if "interval" in c:
        band = c.get("band")
        if "band" in c:
            if "margin" in c:
                out.append("has both a margin and a band (a size claim is judged against its band alone)")
            if not (isinstance(band, list) and len(band) == 2 and all(_number(x) for x in band) and band[0] < band[1]):
                out.append(f"has band {band!r}; a band is [low, high], two numbers with low < high")
        elif not _number(c.get("margin")):
            out.append("has an interval but no numeric margin (state it, even 0) or band")
        need = c.get("need", "all")
        if not verdicts.need_allowed(need):
            out.append(f"has need {need!r}; allowed values are all, any, 'all but K' or a positive count of cells")
        if "effect" in c and not _number(c["effect"]):
            out.append(f"has a non-numeric effect {c['effect']!r}")
        if c.get("lost_seeds", "count") not in verdicts.LOST_SEED_RULES:
            out.append(f"has lost_seeds {c['lost_seeds']!r}; allowed values are {', '.join(verdicts.LOST_SEED_RULES)}")
        if "paper_inputs" in c or "exact" in c:
            out.append("has paper_inputs or exact, which apply to predicate claims only")
    else:
        for k in INTERVAL_ONLY:
            if k in c:
                out.append(f"has {k} but no interval (it applies to interval claims only"
                           + ("; a predicate claim gives the paper's numbers as paper_inputs)" if k == "paper_test" else ")"))
        inputs = c.get("paper_inputs")
        if inputs is not None and not (isinstance(inputs, dict) and inputs
                                       and all(isinstance(k, str) and "." in k and isinstance(v, str) for k, v in inputs.items())):
            out.append("has paper_inputs that are not a mapping of recorded values (notebook.key) to expressions")
        if c.get("kind") in QUOTED and not c.get("exact"):
            out.append("is a predicate reproduction without `exact` (why its values carry no noise: a count, a "
                       "closed form, a ratio of exact counts); a noisy value is judged with an interval")
    if c.get("precondition"):
        for k in ("compares", "gate_reads"):
            if not (isinstance(c.get(k), list) and c[k] and all(isinstance(x, str) and x for x in c[k])):
                out.append(f"has a precondition without {k} (a list of the arms the claim compares / the gate reads)")
        if isinstance(c.get("compares"), list) and isinstance(c.get("gate_reads"), list):
            both = sorted(set(c["compares"]) & set(c["gate_reads"]))
            if both:
                out.append(f"has a precondition that reads the arms it gates: {both}")
    elif "compares" in c or "gate_reads" in c:
        out.append("has compares or gate_reads without a precondition")
    if c.get("kind") in QUOTED:
        q = c.get("quote")
        if not q or not (isinstance(q, str) or (isinstance(q, list) and all(isinstance(x, str) and x for x in q))):
            out.append(f"is a{'n' * (c['kind'] == 'extension')} {c['kind']} without the paper's words (quote: a "
                       "string or a list of strings)")
        if not c.get("where"):
            out.append(f"is a{'n' * (c['kind'] == 'extension')} {c['kind']} without where its quote stands (where)")
    if "paper_level" in c and not c.get("paper_test"):
        out.append("has paper_level but no paper_test (the level is what the paper's difference is taken relative to)")
    if "erratum" in c and not (has_paper_numbers(c) and isinstance(c["erratum"], str) and c["erratum"].strip()):
        out.append("has an erratum but no paper numbers (paper_test or paper_inputs) for it to be about, or an "
                   "empty one")
    if "reading" in c and not c.get("reading_value"):
        out.append("has a reading but no reading_value (the recorded value the reading rests on)")
    if "explanation" in c:
        out += explanation_problems(c)
    if "budgets" in c:
        out += budgets_mod.shape_problems(c["budgets"])
    return out


def explanation_problems(c: dict) -> list[str]:
    """What is wrong with a claim's ``explanation``: an allowed kind, the fields it needs, and a
    recorded value for every explanation by scale (a reading is built from recorded values only)."""
    ex = c["explanation"]
    if not isinstance(ex, dict):
        return [f"has explanation {ex!r}; an explanation is a mapping with kind ({', '.join(EXPLANATION_KINDS)}), "
                "why and evidence"]
    out = []
    unknown = sorted(set(ex) - set(EXPLANATION_FIELDS))
    if unknown:
        out.append(f"has unknown explanation field(s) {unknown}; allowed fields are {', '.join(EXPLANATION_FIELDS)}")
    kind = ex.get("kind")
    if kind == "erratum":
        out.append("has explanation kind 'erratum': the paper's own numbers failing its sentence are stated in the "
                   f"claim's erratum field (with paper_test or paper_inputs); allowed kinds are "
                   f"{', '.join(EXPLANATION_KINDS)}")
    elif kind not in EXPLANATION_KINDS:
        out.append(f"has explanation kind {kind!r}; allowed values are {', '.join(EXPLANATION_KINDS)}")
    for k in ("why", "evidence"):
        if k in ex and not (isinstance(ex[k], str) and ex[k].strip()):
            out.append(f"has an empty or non-text explanation {k}")
    if kind == "scale":
        if not ex.get("evidence"):
            out.append("has an explanation by scale without evidence (the recorded value that shows it, an "
                       "expression such as notebook.key)")
        if not ex.get("why"):
            out.append("has an explanation by scale without why (what the recorded value shows)")
    if kind == "statement" and not c.get("deviation"):
        out.append("has an explanation by how the claim is stated but no deviation saying how")
    return out


def load(chapter: str, root: Path | None = None) -> dict:
    base = data_dir(chapter, root)
    paths = sorted(base.glob("claims.yaml")) + sorted(base.glob("claims.*.yaml"))
    doc: dict = {"paper": "", "claims": []}
    for path in paths:
        part = read_yaml(path) or {}
        doc["paper"] = doc["paper"] or part.get("paper", "")
        doc["claims"] += [dict(c, _file=path.name) for c in part.get("claims", []) or []]
    seen = set()
    notebooks = {c.get("notebook") for c in doc["claims"]}
    for c in doc["claims"]:
        bad = _problems(c)
        shared = gate_overlap(c, notebooks)
        if shared:
            bad.append(f"has a precondition that reads what the claim compares: {shared}")
        if bad:
            raise ClaimsFileError(f"{base}/{c.get('_file')}: claim {c.get('id', '?')!r} " + "; ".join(bad))
        if c["id"] in seen:
            raise ClaimsFileError(f"{base}/{c['_file']}: duplicate claim id {c['id']!r}")
        seen.add(c["id"])
    return doc


def read_keys(text: str, notebooks) -> set[str]:
    """The recorded values (``notebook.key``) an expression reads."""
    return {f"{a}.{b}" for a, b in re.findall(r"\b([A-Za-z_]\w*)\.([A-Za-z_]\w*)", text or "") if a in notebooks}


def gate_overlap(c: dict, notebooks) -> list[str]:
    """The recorded values a claim's precondition reads that its test also reads: a gate must read
    only what the claim does not compare."""
    if not c.get("precondition"):
        return []
    test = c.get("interval") or c.get("predicate") or ""
    return sorted(read_keys(c["precondition"], notebooks) & read_keys(test, notebooks))


def _namespace(values):
    if isinstance(values, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in values.items()})
    return values


def environment(results: dict[str, dict]) -> dict:
    """What claims expressions see: one namespace of recorded values per notebook."""
    return {name: _namespace(r.get("values", {})) for name, r in results.items()}


def _plain(v):
    """A claim's value as JSON can hold it: namespaces (recorded dicts) back to dicts, at any depth,
    since a value expression may put one inside a dict or list of its own."""
    if isinstance(v, SimpleNamespace):
        return {k: _plain(x) for k, x in vars(v).items()}
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def expression(text: str, env: dict):
    """The value of one claims expression over ``env`` (notebook name -> recorded values)."""
    return EvalWithCompoundTypes(functions=FUNCTIONS, names=dict(env, math=MATH)).eval(text)


EVAL_ERRORS = (AttributeError, KeyError, NameError, TypeError, ValueError, ZeroDivisionError, IndexError,
               InvalidExpression, verdicts.ClaimShapeError)


def truth(text: str, env: dict) -> bool:
    """A predicate's truth; a None result (a readout could not compute a value) is an error."""
    held = expression(text, env)
    if held is None:  # e.g. `a and b` with a readout's None in front
        raise TypeError("the predicate is None ('NoneType' value)")
    return bool(held)


def _cannot(e: Exception) -> str:
    if "NoneType" in str(e):  # a readout returned None: the value could not be computed
        return ("not judged: a value this claim reads was not computed in this build "
                f"(None; see the notebook); {type(e).__name__}: {e}")
    return f"not judged: cannot evaluate: {type(e).__name__}: {e}"


def _seeds(res: dict) -> list:
    """The seeds the claim's numbers came from: what the notebook recorded, else the build's seed."""
    seeds = res.get("values", {}).get("seeds")
    return list(seeds) if isinstance(seeds, (list, tuple)) else [res.get("seed")]


def rule(c: dict) -> dict:
    """The verdict rule of an interval claim, as :func:`privtrans.book.verdicts.judge_intervals` and
    :func:`~privtrans.book.verdicts.family_verdict` take it: the one place a claim's fields become
    the test that both the build and the trials run."""
    band = c.get("band")
    return {"margin": None if band is not None else float(c["margin"]), "need": c.get("need"),
            "band": None if band is None else (float(band[0]), float(band[1])),
            "lost_seeds": c.get("lost_seeds", "count")}


def judge(c: dict, cells) -> tuple[str, str]:
    """(verdict, reason) of an interval claim on its cells."""
    return verdicts.judge_intervals(cells, effect=c.get("effect"), **rule(c))


def decide(c: dict, env: dict) -> tuple[str, str, dict | None]:
    """(verdict, computed reason, the cells: None for a predicate claim) of one claim over the recorded
    values in ``env``. An interval claim's cells are read even when its precondition fails, so the
    summary and the forest plot still show them."""
    cells = verdicts.cells(_plain(expression(c["interval"], env))) if "interval" in c else None
    if c.get("precondition"):
        ready = truth(c["precondition"], env)
        if not ready:
            terms = verdicts.explain(c["precondition"], lambda t: expression(t, env))
            shown = "; ".join(s for t, s in terms if t is not True) or c["precondition"]
            what = f" ({c['precondition_why']})" if c.get("precondition_why") else ""
            return verdicts.NOT_JUDGED, f"not judged: the setting cannot show the effect{what}: {shown}", cells
    if cells is not None:
        return (*judge(c, cells), cells)
    held = truth(c["predicate"], env)
    return (verdicts.HELD if held else verdicts.CONTRADICTED), verdicts.predicate_reason(c["predicate"], held,
                                                                     lambda t: expression(t, env)), None


def quotes(c: dict) -> list[str]:
    q = c.get("quote") or []
    return [q] if isinstance(q, str) else list(q)


def evaluate(chapter: str, doc: dict, results: dict[str, dict], profile: str,
             root: Path | None = None) -> list[dict]:
    """One summary row per claim: {chapter, id, kind, paper_item, quote, where, paper_value, value,
    verdict, held, reason, seeds, ...}; ``held`` is True only for verdict held (None: not judged)."""
    env = environment(results)
    rows = []
    for c in doc.get("claims", []):
        row = {"chapter": chapter, "id": c["id"], "kind": c["kind"], "paper_item": c["paper_item"],
               "quote": quotes(c), "quote_en": c.get("quote_en", ""), "where": c.get("where", ""),
               "statement": c["statement"], "paper_value": c["paper_value"],
               "notebook": c["notebook"], "test": c.get("predicate") or c.get("interval"),
               "margin": c.get("margin"), "band": c.get("band"),
               "need": c.get("need", "all") if "interval" in c else None, "exact": c.get("exact", ""),
               "compares": c.get("compares"), "gate_reads": c.get("gate_reads"),
               "deviation": c.get("deviation", ""), "kind_why": c.get("kind_why", ""),
               "reading": c.get("reading", ""), "reading_value": None,
               "value": None, "verdict": verdicts.NOT_JUDGED, "held": None, "reason": "", "seeds": [],
               "paper_self_test": None, "paper_self_test_reason": "", "erratum": c.get("erratum", ""),
               "budgets": c.get("budgets"),
               "explanation": dict(c["explanation"]) if c.get("explanation") else None}
        rows.append(row)
        if has_paper_numbers(c):
            try:
                row["paper_self_test"], row["paper_self_test_reason"] = paper_self_test(chapter, c, root)
            except (PaperValueError, *EVAL_ERRORS) as e:
                row["paper_self_test"] = f"cannot be evaluated: {e}"
        res = results.get(c["notebook"])
        if res is None:
            row["reason"] = f"not judged: notebook {c['notebook']} has not run in this build"
            continue
        if res.get("profile") != profile:
            row["reason"] = (f"not judged: results are from profile {res.get('profile')!r}, "
                             f"the book was built at {profile!r}")
            continue
        row["seeds"] = _seeds(res)
        row["made_by"] = made_by(c, res)
        # which run measured the values: a warm rebuild replays a cached notebook's numbers (its timings
        # too), so the page says when they were measured
        row["measured_in"] = res.get("finished")
        try:
            row["value"] = _plain(expression(c["value"], env))
            verdict, reason, cells = decide(c, env)
            if cells is not None:  # the intervals themselves, for the forest plot and independent checks
                row["cells"] = {k: {f: v.get(f) for f in CELL_FIELDS if v.get(f) is not None or f in ("lo", "hi")}
                                for k, v in cells.items()}
        except EVAL_ERRORS as e:
            row["reason"] = _cannot(e)
            continue
        if c.get("reading_value"):  # an explanation that cannot be read is not shown; the verdict stands
            try:
                row["reading_value"] = _plain(expression(c["reading_value"], env))
            except EVAL_ERRORS as e:
                row["reading"] = ""
                row["reading_value"] = f"cannot evaluate: {type(e).__name__}: {e}"
        ex = row["explanation"]
        if ex and ex.get("evidence"):  # shown only with the value it rests on, read from this build
            try:
                ex["evidence_value"] = _plain(expression(ex["evidence"], env))
            except EVAL_ERRORS as e:
                ex["evidence_error"] = f"{type(e).__name__}: {e}"
        judged = c.get("profiles")
        if judged and profile not in judged and verdict != verdicts.NOT_JUDGED:
            row["reason"] = (f"not judged at profile {profile!r} (judged at {', '.join(judged)}); "
                             f"it would read: {reason}")
            continue
        row["verdict"], row["reason"] = verdict, reason
        row["held"] = None if verdict == verdicts.NOT_JUDGED else verdict == verdicts.HELD
    return rows


#: what a summary row keeps of each cell: the interval, and what re-derives it (trials, family levels)
CELL_FIELDS = ("mean", "lo", "hi", "n", "planned", "confidence", "resolution", "diffs")


def made_by(c: dict, res: dict) -> list[str]:
    """The readout functions ("privtrans.<chapter>.readouts.<name>") that computed the recorded values
    the claim's expressions read (``results.json``'s ``made_by``, from ``privtrans.book.producers``)."""
    text = " ".join(str(c.get(k) or "") for k in ("value", "interval", "predicate"))
    keys = re.findall(rf"\b{re.escape(c['notebook'])}\.(\w+)", text)
    fns = res.get("made_by") or {}
    return sorted({fns[k] for k in keys if k in fns})


def paper_env(chapter: str, c: dict, root: Path | None = None) -> dict:
    """A predicate claim's ``paper_inputs`` as the recorded values its predicate reads: {notebook:
    namespace}, each value read from the paper's data files with ``P``."""
    P = lookup(chapter, root)
    ev = EvalWithCompoundTypes(functions=dict(FUNCTIONS, P=P), names={"P": P, "math": MATH})
    tree: dict = {}
    for path, text in c["paper_inputs"].items():
        *parents, leaf = path.split(".")
        node = tree
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = ev.eval(text)
    return {k: _namespace(v) for k, v in tree.items()}


def paper_self_test(chapter: str, c: dict, root: Path | None = None) -> tuple[str, str]:
    """(verdict, reason) of the claim's own test on the paper's own point values: an interval claim's
    ``paper_test`` differences judged as exact points with its margin (band) and need; a predicate
    claim's own predicate run on its ``paper_inputs``."""
    if "interval" in c:
        P = lookup(chapter, root)
        ev = EvalWithCompoundTypes(functions=dict(FUNCTIONS, P=P), names={"P": P, "math": MATH})
        r = rule(c)
        return verdicts.judge_points(ev.eval(c["paper_test"]), r["margin"], r["need"], r["band"])
    env = paper_env(chapter, c, root)
    held = truth(c["predicate"], env)
    return ((verdicts.HELD if held else verdicts.CONTRADICTED),
            "on the paper's numbers: " + verdicts.predicate_reason(c["predicate"], held, lambda t: expression(t, env)))


def has_paper_numbers(c: dict) -> bool:
    return bool(c.get("paper_test") or c.get("paper_inputs"))


def tally(rows: list[dict]) -> dict:
    """Counts per kind: {'reproduction': {'held', 'contradicted', 'inconclusive', 'not_judged', 'total'},
    'extension': {...}, 'check': {...}}."""
    out = {}
    for kind in KINDS:
        counts = verdicts.tally([r.get("verdict", verdicts.NOT_JUDGED) for r in rows if r.get("kind") == kind])
        out[kind] = {k.replace(" ", "_"): n for k, n in counts.items()}
        out[kind]["total"] = sum(counts.values())
    return out


def counts_line(t: dict) -> str:
    """'12 held, 3 contradicted, 5 inconclusive, 2 not judged' for one kind's tally."""
    return ", ".join(f"{t[k.replace(' ', '_')]} {k}" for k in verdicts.VERDICTS)


def lint(chapter: str, root: Path | None = None) -> list[str]:
    """Problems of a chapter's claims file: its schema, and the paper's self-test where it has one."""
    try:
        doc = load(chapter, root)
    except ClaimsFileError as e:
        return [str(e)]
    out = []
    for c in doc["claims"]:
        if not has_paper_numbers(c):
            continue
        try:
            verdict, reason = paper_self_test(chapter, c, root)
        except (PaperValueError, *EVAL_ERRORS) as e:
            out.append(f"{chapter}/{c['id']}: paper_test cannot be evaluated: {type(e).__name__}: {e}")
            continue
        if verdict != verdicts.HELD and not c.get("erratum"):
            out.append(f"{chapter}/{c['id']}: the paper fails its own claim and the claim states no erratum: {reason}")
        if verdict == verdicts.HELD and c.get("erratum"):
            out.append(f"{chapter}/{c['id']}: states an erratum, but the paper passes its own claim: {reason}")
    return out


def main(argv=None) -> int:
    """python -m privtrans.book.claims [CHAPTER ...]: check claims files and run the paper's self-test."""
    import sys

    from .chapters import KEYS

    chapters = (sys.argv[1:] if argv is None else argv) or list(KEYS)
    bad = []
    for ch in chapters:
        problems = lint(ch)
        bad += problems
        if not problems:
            doc = load(ch)
            rep = [c for c in doc["claims"] if c["kind"] == "reproduction"]
            untested = [c["id"] for c in rep if not has_paper_numbers(c)]
            errata = [c["id"] for c in rep if c.get("erratum")]
            print(f"{ch}: {len(doc['claims'])} claims ({len(rep)} reproductions), "
                  f"{len(rep) - len(untested)} with a paper self-test, which the paper passes but for "
                  f"{len(errata)} stated errata ({', '.join(errata) or 'none'}); "
                  f"no tabulated paper values for: {', '.join(untested) or 'none'}")
    for b in bad:
        print("PROBLEM", b)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
