"""The discrepancies appendix (``book/_generated/discrepancies.md``), read from the summary alone.

Every reproduction this build contradicted or left inconclusive, grouped by what its claim records
as the explanation, in this order (an entry lands in the first group that applies):

(a) **the paper's own numbers fail its sentence**: the claim states an ``erratum`` and the paper's
    numbers, run through the claim's own test, fail it (the computed arithmetic is shown);
(b) **our stand-in's scale**: ``explanation: {kind: scale, evidence: ...}``, shown with the recorded
    value it rests on, read in this build;
(c) **how we had to state the claim**: ``explanation: {kind: statement}``, shown with the claim's
    deviation;
(d) **no explanation found**: nothing of the above, or an explanation whose recorded value this
    build could not read (a reading is only ever built from recorded values).

Each entry links its row on the chapter page (``claims_page.markdown_table`` anchors it as
``claim-<id>``) and the executed notebook that recorded its values.
"""

from __future__ import annotations

from .. import claims_page, verdicts

GROUPS = (
    ("erratum", "The paper's own numbers fail its sentence",
     "The claim's own test, run on the paper's own tabulated numbers, fails: the paper's numbers do not "
     "support its sentence (an erratum of the paper, with the computed arithmetic)."),
    ("scale", "Our stand-in's scale",
     "The claim records that our stand-in is too small to show the effect, with the recorded value that "
     "shows it."),
    ("statement", "How we had to state the claim",
     "The claim records that the failure follows from how we had to state the paper's sentence as a test "
     "(its deviation)."),
    ("none", "No explanation found",
     "No erratum and no recorded explanation: a contradiction here is, as far as this book can tell, the "
     "paper's statement failing to reproduce; an inconclusive verdict's reason says how many seeds would "
     "resolve it."),
)
KEYS = tuple(g[0] for g in GROUPS)
JUDGED_AGAINST = (verdicts.CONTRADICTED, verdicts.INCONCLUSIVE)


def discrepant(summary: dict) -> list[dict]:
    """The reproductions this build contradicted or left inconclusive."""
    return [c for c in summary.get("claims", [])
            if c.get("kind") == "reproduction" and c.get("verdict") in JUDGED_AGAINST]


def group_of(c: dict) -> str:
    """Which group a contradicted or inconclusive reproduction belongs to (:data:`KEYS`)."""
    if c.get("erratum") and c.get("paper_self_test") not in (None, verdicts.HELD):
        return "erratum"
    ex = c.get("explanation") or {}
    if ex.get("kind") in ("scale", "statement") and claims_page.explained(ex):
        if ex["kind"] == "statement" and not c.get("deviation"):
            return "none"
        return ex["kind"]
    return "none"


def groups(summary: dict) -> dict[str, list[dict]]:
    """{group key: its claims}, every key present, in chapter order."""
    out: dict[str, list[dict]] = {k: [] for k in KEYS}
    for c in discrepant(summary):
        out[group_of(c)].append(c)
    return out


def counts(summary: dict) -> dict[str, int]:
    return {k: len(v) for k, v in groups(summary).items()}


def _text(x) -> str:
    return str(x).replace("\n", " ").strip()


def entry(c: dict, key: str) -> list[str]:
    """One claim's entry: its row on the chapter page, the verdict and reason, the explanation and
    its evidence."""
    link = f'<a href="{c["chapter"]}.html#claim-{c["id"]}">{c["chapter"]}/{c["id"]}</a>'
    reason = claims_page.without_verdict(_text(c.get("reason") or ""), c["verdict"])
    head = f"- {link} ({_text(c.get('paper_item'))}): **{c['verdict']}**: {reason}"
    lines = [head]
    ex = c.get("explanation") or {}
    if key == "erratum":
        lines.append(f"  - *Erratum of the paper:* {_text(c['erratum'])}")
        lines.append(f"  - *Computed on the paper's numbers:* {_text(c.get('paper_self_test_reason') or c['paper_self_test'])}")
    elif key == "scale":
        lines.append(f"  - *Scale:* {_text(ex.get('why'))}")
        lines.append(f"  - *Recorded:* `{ex['evidence']}` = {claims_page.fmt(ex['evidence_value'])}")
    elif key == "statement":
        lines.append(f"  - *How we stated it:* {_text(c.get('deviation'))}"
                     + (f" *{_text(ex['why'])}*" if ex.get("why") else ""))
    else:
        if ex.get("evidence_error"):
            lines.append(f"  - *A stated explanation ({ex.get('kind')}) was not shown: its recorded value "
                         f"`{ex.get('evidence')}` could not be read in this build ({_text(ex['evidence_error'])}).*")
        if c.get("reading"):
            lines.append(f"  - *Our reading (not classified):* {_text(c['reading'])} "
                         f"(recorded: {claims_page.fmt(c.get('reading_value'))})")
    if c.get("recorded_in"):
        lines.append(f"  - *Evidence:* recorded by {{doc}}`{c['recorded_in'].rsplit('/', 1)[-1]} <{c['recorded_in']}>`")
    return lines


def page(summary: dict) -> str:
    """The appendix's generated body: the four counts, then each group's entries."""
    g = groups(summary)
    total = sum(len(v) for v in g.values())
    lines = [f"Built at profile **{summary.get('profile', '?')}**, seed {summary.get('seed', '?')}: "
             f"{total} of the paper's claims reproduced here are contradicted or inconclusive.", "",
             "| Explanation | Claims |", "|---|---|"]
    lines += [f"| ({chr(97 + i)}) {title} | {len(g[key])} |" for i, (key, title, _) in enumerate(GROUPS)]
    for i, (key, title, what) in enumerate(GROUPS):
        lines += ["", f"## ({chr(97 + i)}) {title}", "", what, ""]
        chapter = None
        for c in g[key]:  # in chapter order, each chapter's entries under its name
            if c["chapter"] != chapter:
                chapter = c["chapter"]
                lines += ["", f"**{{doc}}`/book/{chapter}`**", ""]
            lines += entry(c, key)
        if not g[key]:
            lines.append("None in this build.")
    return "\n".join(lines) + "\n"


def landing_lines(summary: dict) -> list[str]:
    """The landing page's four counts, linking the appendix."""
    n = counts(summary)
    total = sum(n.values())
    if not total:
        return ["", "No reproduction of this build is contradicted or inconclusive "
                "({doc}`/book/discrepancies`)."]
    parts = ", ".join(f"{n[key]} {title[0].lower() + title[1:]}" for key, title, _ in GROUPS)
    return ["", f"**Discrepancies** ({{doc}}`/book/discrepancies`): of the {total} contradicted or inconclusive "
            f"reproductions, by their recorded explanation: {parts}."]
