"""A chapter's claims file, evaluated against what its notebooks recorded.

``data/<chapter>/claims.yaml`` (a chapter may add ``claims.<part>.yaml`` files; their claims are
appended in file-name order)::

    paper: "Full citation of the paper"
    claims:
      - id: fig1_falls_with_n                 # unique in the chapter
        paper_item: "Figure 1"                # the table/figure it stands for
        statement: "Excess risk falls with N at every epsilon"
        paper_value: "monotone decrease"      # the paper's own number or statement (cited by paper_item)
        notebook: fig1_low_dim                # whose results.json it reads
        value: "fig1_low_dim.frac_decreasing" # expression shown as 'this reproduction'
        predicate: "fig1_low_dim.frac_decreasing >= 0.9"
        profiles: [ci, paper]                 # optional: where the claim is judged (default: all)
        why_not: "..."                        # optional: shown when it does not hold

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
REQUIRED = ("id", "paper_item", "statement", "paper_value", "notebook", "value", "predicate")


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
        if c["id"] in seen:
            raise ClaimsFileError(f"{base}/{c['_file']}: duplicate claim id {c['id']!r}")
        seen.add(c["id"])
    return doc


def _namespace(values):
    if isinstance(values, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in values.items()})
    return values


def _plain(v):
    if isinstance(v, SimpleNamespace):
        return {k: _plain(x) for k, x in vars(v).items()}
    return v


def expression(text: str, env: dict):
    """The value of one claims expression over ``env`` (notebook name -> recorded values)."""
    return EvalWithCompoundTypes(functions=FUNCTIONS, names=dict(env, math=MATH)).eval(text)


def evaluate(chapter: str, doc: dict, results: dict[str, dict], profile: str) -> list[dict]:
    """One summary row per claim: {chapter, id, paper_item, paper_value, value, held, reason}."""
    env = {name: _namespace(r.get("values", {})) for name, r in results.items()}
    rows = []
    for c in doc.get("claims", []):
        row = {"chapter": chapter, "id": c["id"], "paper_item": c["paper_item"],
               "statement": c["statement"], "paper_value": c["paper_value"],
               "notebook": c["notebook"], "predicate": c["predicate"],
               "value": None, "held": None, "reason": ""}
        res = results.get(c["notebook"])
        if res is None:
            row["reason"] = f"notebook {c['notebook']} has not run in this build"
        elif res.get("profile") != profile:
            row["reason"] = f"results are from profile {res.get('profile')!r}, the book was built at {profile!r}"
        else:
            try:
                row["value"] = _plain(expression(c["value"], env))
                held = expression(c["predicate"], env)
                if held is None:  # e.g. `a and b` with a readout's None in front
                    raise TypeError("the predicate is None ('NoneType' value)")
                held = bool(held)
            except (AttributeError, KeyError, NameError, TypeError, ValueError, ZeroDivisionError,
                    IndexError, InvalidExpression) as e:
                row["reason"] = f"cannot evaluate: {type(e).__name__}: {e}"
                if "NoneType" in str(e):  # a readout returned None: the value could not be computed
                    row["reason"] = ("cannot evaluate: a value this claim reads was not computed in this "
                                     f"build (None; see the notebook); {type(e).__name__}: {e}")
            else:
                judged = c.get("profiles")
                if judged and profile not in judged:
                    row["reason"] = (f"not judged at profile {profile!r} (judged at {', '.join(judged)}); "
                                     f"predicate `{c['predicate']}` would be {held}")
                else:
                    row["held"] = held
                    row["reason"] = (c.get("why_held") or f"`{c['predicate']}` holds") if held else \
                        (c.get("why_not") or f"`{c['predicate']}` is false")
        rows.append(row)
    return rows


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
    """The 'paper vs. this reproduction' table that a chapter page includes."""
    mark = {True: "**held**", False: "**not held**", None: "*not judged*"}
    n_held = sum(r["held"] is True for r in rows)
    n_not = sum(r["held"] is False for r in rows)
    lines = [f"Built at profile **{profile}**: {n_held} of {len(rows)} claims held, {n_not} not held, "
             f"{len(rows) - n_held - n_not} not judged.", "",
             "| Paper item | Claim | Paper (cited) | This reproduction | Verdict and why |",
             "|---|---|---|---|---|"]
    for r in rows:
        cells = [r["paper_item"], r["statement"], fmt(r["paper_value"]), fmt(r["value"]),
                 f"{mark[r['held']]}: {r['reason']}"]
        lines.append("| " + " | ".join(str(x).replace("|", "\\|").replace("\n", " ") for x in cells) + " |")
    if not rows:
        lines.append("| – | no claims yet | | | |")
    return "\n".join(lines) + "\n"
