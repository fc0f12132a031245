"""What each arm of a comparison was tuned over: a claim's ``budgets``, read from the profiles.

A comparison is fair only when every arm it compares got the same search. A claim states its arms'
budgets in its claims file (``data/<chapter>/claims*.yaml``)::

    budgets:
      arms:
        MERGE:                                   # an arm, as the claim's statement names it
          grid: {lr: "profile:table3_seeds.student.lr"}   # the hyper-parameters: a list is searched,
                                                 # a single value is fixed (not tuned)
          training: {steps: "profile:table3_seeds.student.steps"}  # its training effort (or a sentence)
          tuned_on: "the training split"         # searched arms only: the data the grid was chosen on
          seeds: "validation seeds 100-104"      # searched arms only: never the seeds the claim judges
        MPCformer (sf2relu): {...}
      unequal: "why"                             # exactly when the arms' budgets differ at some profile

or, for a claim that compares no trained or tuned arms (a closed form, a count, a timing), a
sentence saying so: ``budgets: "closed-form byte counts: nothing is trained or tuned"``.

A value ``"profile:<experiment>.<key>[.<key>...]"`` is read from the chapter's profile table
(``lib/privtrans/<chapter>/profile*.yaml``) at the profile the book is built at, so the numbers
have one home and the page shows the ones that ran; a key the profile leaves out is the code's
default (shown as such). Two arms have the same budget when their grids are of the same size,
their validation seeds are the same and their training efforts are equal; the grids may search
different hyper-parameters (each method's own learning rate, say). Where they differ at any profile
the claim says why in ``unequal``, which the page shows with the claim's deviation; an ``unequal``
on arms whose budgets are equal everywhere is refused as stale (:func:`problems`).
"""

from __future__ import annotations

import math

from .chapters import PROFILES, ParameterError

ARM_FIELDS = ("grid", "training", "tuned_on", "seeds")
REF = "profile:"
DEFAULT = "the code's default"


def shape_problems(budgets) -> list[str]:
    """What is wrong with the form of one claim's ``budgets`` (empty when nothing is); the profile
    references are resolved later (:func:`problems`)."""
    if isinstance(budgets, str):
        return [] if budgets.strip() else ["has an empty budgets sentence"]
    if not isinstance(budgets, dict):
        return [f"has budgets {budgets!r}; budgets are a sentence (no arm is trained or tuned) or a mapping "
                "with arms (and unequal)"]
    out = []
    unknown = sorted(set(budgets) - {"arms", "unequal"})
    if unknown:
        out.append(f"has unknown budgets field(s) {unknown}; allowed fields are arms, unequal")
    arms = budgets.get("arms")
    if not (isinstance(arms, dict) and arms):
        return out + ["has budgets without arms (a mapping of each compared arm to its budget)"]
    if "unequal" in budgets and not (isinstance(budgets["unequal"], str) and budgets["unequal"].strip()):
        out.append("has an empty budgets.unequal")
    for name, arm in arms.items():
        if not isinstance(arm, dict):
            out.append(f"has budget {arm!r} for arm {name!r}; an arm's budget is a mapping of "
                       f"{', '.join(ARM_FIELDS)}")
            continue
        unknown = sorted(set(arm) - set(ARM_FIELDS))
        if unknown:
            out.append(f"has unknown field(s) {unknown} in arm {name!r}'s budget; allowed fields are "
                       f"{', '.join(ARM_FIELDS)}")
        for k in ("grid", "training"):
            if k not in arm:
                out.append(f"has no {k} in arm {name!r}'s budget")
        if "grid" in arm and not isinstance(arm["grid"], dict):
            out.append(f"has grid {arm['grid']!r} in arm {name!r}'s budget; a grid maps each hyper-parameter "
                       "to its values (a list is searched, one value is fixed)")
        if "training" in arm and not (isinstance(arm["training"], dict) and arm["training"]
                                      or isinstance(arm["training"], str) and arm["training"].strip()):
            out.append(f"has training {arm['training']!r} in arm {name!r}'s budget; it is a mapping (steps, "
                       "epochs, batch) or a sentence")
    return out


def _resolve(value, chapter: str, profile: str):
    """A budget value at a profile: ``profile:`` references read from the chapter's profile table
    (None where the profile leaves the key out), lists and mappings resolved inside."""
    if isinstance(value, str) and value.startswith(REF):
        from .profiles import settings

        experiment, *path = value[len(REF):].split(".")
        if not path:
            raise ParameterError(f"{value!r} names no key: write profile:<experiment>.<key>")
        node = settings(chapter, experiment, profile)
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node
    if isinstance(value, dict):
        return {k: _resolve(v, chapter, profile) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, chapter, profile) for v in value]
    return value


def resolve(chapter: str, budgets, profile: str) -> dict | str:
    """{arm: {grid, size, training, tuned_on, seeds}} at ``profile`` (a sentence stays a sentence)."""
    if isinstance(budgets, str):
        return budgets
    out = {}
    for name, arm in budgets["arms"].items():
        grid = _resolve(arm.get("grid") or {}, chapter, profile)
        size = math.prod(len(v) if isinstance(v, list) else 1 for v in grid.values())
        out[name] = {"grid": grid, "size": size, "training": _resolve(arm.get("training"), chapter, profile),
                     "tuned_on": _resolve(arm.get("tuned_on"), chapter, profile),
                     "seeds": _resolve(arm.get("seeds"), chapter, profile)}
    return out


def differences(arms: dict) -> list[str]:
    """How the arms' budgets differ: grid size, validation seeds, training effort (empty when equal)."""
    if len(arms) < 2:
        return []
    out = []
    for what, key in (("grid size", "size"), ("validation seeds", "seeds"), ("training", "training")):
        values = {name: a[key] for name, a in arms.items()}
        if len({repr(v) for v in values.values()}) > 1:
            out.append(f"{what}: " + "; ".join(f"{n} {show(v)}" for n, v in values.items()))
    return out


def problems(chapter: str, claim: dict, profiles=PROFILES) -> list[str]:
    """Why a claim's budgets cannot stand: a reference that does not resolve, a searched arm without
    its validation data or seeds, arms whose budgets differ without ``unequal``, or an ``unequal`` on
    arms whose budgets are equal at every profile."""
    b = claim.get("budgets")
    if b is None or isinstance(b, str):
        return []
    out, differ = [], []
    for p in profiles:
        try:
            arms = resolve(chapter, b, p)
        except (ParameterError, FileNotFoundError) as e:
            out.append(f"at profile {p}: {e}")
            continue
        for name, a in arms.items():
            if a["size"] > 1 and not (a["tuned_on"] and a["seeds"]):
                out.append(f"at profile {p}: arm {name!r} searches {a['size']} settings but does not say what "
                           "it was tuned on (tuned_on) and on which validation seeds (seeds)")
        d = differences(arms)
        if d:
            differ.append(f"at profile {p}: " + "; ".join(d))
    if differ and not b.get("unequal"):
        out.append("compares arms with different budgets and does not say why (budgets.unequal): "
                   + " | ".join(differ))
    if not differ and b.get("unequal") and len(b["arms"]) > 1:
        out.append("says its arms' budgets are unequal (budgets.unequal), but they are equal at every profile")
    return out


def show(v) -> str:
    """A budget value as the page shows it."""
    if v is None:
        return DEFAULT
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return "{" + ", ".join(show(x) for x in v) + "}"
    if isinstance(v, dict):
        return ", ".join(f"{k} {show(x)}" for k, x in v.items()) or "–"
    return str(v)


def describe(arm: dict) -> str:
    """One arm's budget in words: what it searched (or that it was fixed), on what, and its training."""
    searched = {k: v for k, v in arm["grid"].items() if isinstance(v, list)}
    fixed = {k: v for k, v in arm["grid"].items() if not isinstance(v, list)}
    if searched:
        text = (f"searched {' × '.join(f'{k} ∈ {show(v)}' for k, v in searched.items())} ({arm['size']} settings) "
                f"on {show(arm['tuned_on'])}, validation seeds {show(arm['seeds'])}")
    else:
        text = "not tuned"
    if fixed:
        text += f"; fixed {show(fixed)}"
    return text + f"; training: {show(arm['training'])}"


def _cell(x) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def markdown(chapter: str, claims: list[dict], profile: str) -> str:
    """The chapter page's section on tuning budgets: per paper item (table or figure), what each
    compared arm was tuned over at ``profile``, and where the arms' budgets differ, why."""
    lines = ["", "**What each compared arm was tuned over**", "",
             f"At profile **{profile}**, from each claim's recorded budgets (`budgets` in "
             f"`data/{chapter}/claims*.yaml`, the numbers read from `lib/privtrans/{chapter}/profile*.yaml`).", ""]
    by_item: dict[str, list[dict]] = {}
    untrained: dict[str, list[str]] = {}
    for c in claims:
        b = c.get("budgets")
        if isinstance(b, str):
            untrained.setdefault(b, []).append(c["id"])
        elif b:
            by_item.setdefault(str(c["paper_item"]), []).append(c)
    if not by_item and not untrained:
        return "\n".join(lines[:3] + ["No claim of this chapter records its arms' budgets yet.", ""])
    lines += ["| Paper item | Claims | Arm | Tuned over |", "|---|---|---|---|"]
    for item, cs in by_item.items():
        seen: dict[str, list[str]] = {}  # one row per distinct arm budget within the item
        notes = []
        for c in cs:
            try:
                arms = resolve(chapter, c["budgets"], profile)
            except (ParameterError, FileNotFoundError) as e:
                lines.append(f"| {_cell(item)} | `{c['id']}` | – | cannot be read: {_cell(e)} |")
                continue
            for name, a in arms.items():
                seen.setdefault(f"{name}\x00{describe(a)}", []).append(c["id"])
            if c["budgets"].get("unequal"):
                notes.append(f"`{c['id']}`: {c['budgets']['unequal']}")
        for key, ids in seen.items():
            name, text = key.split("\x00")
            lines.append(f"| {_cell(item)} | {', '.join(f'`{i}`' for i in ids)} | {_cell(name)} | {_cell(text)} |")
        for n in notes:
            lines.append(f"| {_cell(item)} | | *unequal* | {_cell(n)} |")
    if untrained:
        lines += ["", "Claims that compare no trained or tuned arms: " + "; ".join(
            f"{', '.join(f'`{i}`' for i in ids)} ({why})" for why, ids in untrained.items()) + "."]
    return "\n".join(lines) + "\n"
