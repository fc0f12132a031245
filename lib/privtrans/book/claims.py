"""A chapter's claims file, evaluated against what its notebooks recorded.

``data/<chapter>/claims.yaml`` (a chapter may add ``claims.<part>.yaml`` files; their claims are
appended in file-name order)::

    paper: "Full citation of the paper"
    claims:
      - id: fig1_falls_with_n                 # unique in the chapter
        paper_item: "Figure 1"                # the table/figure it stands for
        kind: reproduction                    # or check (see below)
        kind_why: "..."                       # for a check: why it is ours, not the paper's
        statement: "Excess risk falls with N at every epsilon"
        paper_value: "monotone decrease"      # the paper's own number or statement (cited by paper_item)
        notebook: fig1_low_dim                # whose results.json it reads
        value: "fig1_low_dim.frac_decreasing" # expression shown as 'this reproduction'
        predicate: "fig1_low_dim.frac_decreasing >= 0.9"
        profiles: [ci, paper]                 # optional: where the claim is judged (default: all)
        precondition: "fig1_low_dim.n_eps > 1"  # optional: the setting can show the effect at all
        precondition_why: "..."               # optional: shown when the precondition fails
        why_not: "..."                        # optional: shown when it does not hold

Two kinds of claim. A **reproduction** tests a statement of the paper on data this build produced;
only reproductions count as the paper's claims held. A **check** is true by our construction or is
a target we set (a closed form equal to a measurement, secure equal to plaintext, a property of our
data generator); it guards the book, not the paper. A claim whose precondition fails is not judged
("precondition failed") with the measured reason, never "not held".

Expressions see one object per notebook (attribute access to its recorded values), a few
harmless functions and ``math``'s functions. They are evaluated by simpleeval, which refuses
imports, names starting with ``_`` and attributes starting with ``_`` (so no ``().__class__``
escape), not by ``eval``. A claim whose notebook has not run, or whose key is missing, is
``held: null`` (not judged) with the reason.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import yaml

from simpleeval import EvalWithCompoundTypes, InvalidExpression

from .paths import data_dir

FUNCTIONS = {"abs": abs, "min": min, "max": max, "all": all, "any": any, "len": len,
             "sum": sum, "round": round, "sorted": sorted}
# simpleeval refuses module objects; the predicates need math's functions and constants only
MATH = SimpleNamespace(**{k: getattr(math, k) for k in dir(math) if not k.startswith("_")})
REQUIRED = ("id", "paper_item", "kind", "statement", "paper_value", "notebook", "value", "predicate")
KINDS = ("reproduction", "check")


class ClaimsFileError(ValueError):
    pass


def load(chapter: str, root: Path | None = None) -> dict:
    base = data_dir(chapter, root)
    paths = sorted(base.glob("claims.yaml")) + sorted(base.glob("claims.*.yaml"))
    doc: dict = {"paper": "", "claims": []}
    for path in paths:
        part = yaml.safe_load(path.read_text()) or {}
        doc["paper"] = doc["paper"] or part.get("paper", "")
        doc["claims"] += [dict(c, _file=path.name) for c in part.get("claims", []) or []]
    seen = set()
    for c in doc["claims"]:
        miss = [k for k in REQUIRED if k not in c]
        if miss:
            raise ClaimsFileError(f"{base}/{c.get('_file')}: claim {c.get('id', '?')!r} lacks {miss}")
        if c["kind"] not in KINDS:
            raise ClaimsFileError(f"{base}/{c['_file']}: claim {c['id']!r} has kind {c['kind']!r}; "
                                  f"allowed values are {', '.join(KINDS)}")
        if c["id"] in seen:
            raise ClaimsFileError(f"{base}/{c['_file']}: duplicate claim id {c['id']!r}")
        seen.add(c["id"])
    return doc


def _namespace(values):
    if isinstance(values, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in values.items()})
    return values


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
               InvalidExpression)


def truth(text: str, env: dict) -> bool:
    """A predicate's truth; a None result (a readout could not compute a value) is an error."""
    held = expression(text, env)
    if held is None:  # e.g. `a and b` with a readout's None in front
        raise TypeError("the predicate is None ('NoneType' value)")
    return bool(held)


def _cannot(e: Exception) -> str:
    if "NoneType" in str(e):  # a readout returned None: the value could not be computed
        return ("cannot evaluate: a value this claim reads was not computed in this build "
                f"(None; see the notebook); {type(e).__name__}: {e}")
    return f"cannot evaluate: {type(e).__name__}: {e}"


def _seeds(res: dict) -> list:
    """The seeds the claim's numbers came from: what the notebook recorded, else the build's seed."""
    seeds = res.get("values", {}).get("seeds")
    return list(seeds) if isinstance(seeds, (list, tuple)) else [res.get("seed")]


def evaluate(chapter: str, doc: dict, results: dict[str, dict], profile: str) -> list[dict]:
    """One summary row per claim: {chapter, id, kind, paper_item, paper_value, value, held, reason, seeds}."""
    env = {name: _namespace(r.get("values", {})) for name, r in results.items()}
    rows = []
    for c in doc.get("claims", []):
        row = {"chapter": chapter, "id": c["id"], "kind": c["kind"], "paper_item": c["paper_item"],
               "statement": c["statement"], "paper_value": c["paper_value"],
               "notebook": c["notebook"], "predicate": c["predicate"],
               "kind_why": c.get("kind_why", ""), "value": None, "held": None, "reason": "", "seeds": []}
        rows.append(row)
        res = results.get(c["notebook"])
        if res is None:
            row["reason"] = f"notebook {c['notebook']} has not run in this build"
            continue
        if res.get("profile") != profile:
            row["reason"] = f"results are from profile {res.get('profile')!r}, the book was built at {profile!r}"
            continue
        row["seeds"] = _seeds(res)
        try:
            row["value"] = _plain(expression(c["value"], env))
            ready = truth(c["precondition"], env) if c.get("precondition") else True
            held = truth(c["predicate"], env) if ready else None
        except EVAL_ERRORS as e:
            row["reason"] = _cannot(e)
            continue
        judged = c.get("profiles")
        if not ready:
            row["reason"] = ("not judged: precondition failed: "
                             + (c.get("precondition_why") or f"`{c['precondition']}` is false"))
        elif judged and profile not in judged:
            row["reason"] = (f"not judged at profile {profile!r} (judged at {', '.join(judged)}); "
                             f"predicate `{c['predicate']}` would be {held}")
        else:
            row["held"] = held
            row["reason"] = (c.get("why_held") or f"`{c['predicate']}` holds") if held else \
                (c.get("why_not") or f"`{c['predicate']}` is false")
    return rows


def tally(rows: list[dict]) -> dict:
    """Counts per kind: {'reproduction': {'held', 'not_held', 'not_judged', 'total'}, 'check': {...}}."""
    out = {}
    for kind in KINDS:
        sub = [r["held"] for r in rows if r.get("kind") == kind]
        out[kind] = {"held": sub.count(True), "not_held": sub.count(False), "not_judged": sub.count(None),
                     "total": len(sub)}
    return out


def fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt(x) for x in v) + "]"
    if isinstance(v, dict):
        return ", ".join(f"{k}: {fmt(x)}" for k, x in v.items())
    return str(v)


def markdown_table(rows: list[dict], profile: str) -> str:
    """The 'paper vs. this reproduction' tables of a chapter page: the paper's claims, then our checks."""
    mark = {True: "**held**", False: "**not held**", None: "*not judged*"}
    t = tally(rows)
    rep, chk = t["reproduction"], t["check"]
    lines = [f"Built at profile **{profile}**: of the paper's {rep['total']} claims reproduced here, "
             f"{rep['held']} held, {rep['not_held']} not held, {rep['not_judged']} not judged; "
             f"{chk['held']} of {chk['total']} checks of our own construction passed "
             f"({chk['not_held']} failed, {chk['not_judged']} not judged)."]
    for kind, title in (("reproduction", "The paper's claims"), ("check", "Checks of this book's construction")):
        sub = [r for r in rows if r.get("kind") == kind]
        lines += ["", f"**{title}**", "",
                  "| Paper item | Claim | Paper (cited) | This reproduction | Verdict and why |",
                  "|---|---|---|---|---|"]
        for r in sub:
            claim = r["statement"] + (f" *(a check: {r['kind_why']})*" if r.get("kind_why") else "")
            cells = [r["paper_item"], claim, fmt(r["paper_value"]), fmt(r["value"]),
                     f"{mark[r['held']]}: {r['reason']}"]
            lines.append("| " + " | ".join(str(x).replace("|", "\\|").replace("\n", " ") for x in cells) + " |")
        if not sub:
            lines.append("| – | none | | | |")
    return "\n".join(lines) + "\n"
