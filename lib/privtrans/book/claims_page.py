"""A chapter's claims as the table of its page: the paper's claims, the mechanism study, our checks.

Apart from :mod:`privtrans.book.claims` (which loads and judges the claims) so that the page, which
shows each claim's trials, can import :mod:`privtrans.book.trials`, which imports the claims: one
direction, no import circle.
"""

from __future__ import annotations

from . import claims, verdicts
from .trials import LOW_POWER, low_power, sentence


EXPLAINED_AS = {"scale": "our stand-in's scale", "statement": "how we had to state the claim"}


def explained(ex: dict) -> bool:
    """An explanation the build could read: one that names a recorded value has it."""
    return not ex.get("evidence") or "evidence_value" in ex


def fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, dict) and {"mean", "lo", "hi", "n"} <= set(v):
        return verdicts.describe_cell("", v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt(x) for x in v) + "]"
    if isinstance(v, dict):
        return ", ".join(f"{k}: {fmt(x)}" for k, x in v.items())
    return str(v)


MARK = {verdicts.HELD: "**held**", verdicts.CONTRADICTED: "**contradicted**", verdicts.INCONCLUSIVE: "*inconclusive*",
        verdicts.NOT_JUDGED: "*not judged*"}


def without_verdict(reason: str, verdict: str) -> str:
    """The reason without the verdict word it starts with (the table shows the verdict beside it)."""
    if not reason.startswith(verdict):
        return reason
    rest = reason[len(verdict):].lstrip(":").strip()
    depth = 0
    for i, ch in enumerate(rest):  # strip one pair of parentheses around the whole text
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return rest[1:-1] if i == len(rest) - 1 and rest.startswith("(") else rest
    return rest


def _cell(x) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: list[dict], profile: str, stability: dict | None = None) -> str:
    """The 'paper vs. this reproduction' tables of a chapter page: the paper's claims, then our checks.

    ``stability``: {claim id: (verdict, reason, seed)} of the same claims built at a disjoint seed set
    (``make stability``), shown beside each verdict when that build exists."""
    t = claims.tally(rows)
    rep, ext, chk = t["reproduction"], t["extension"], t["check"]
    study = (f"; of {ext['total']} claims of a mechanism study (the paper's premise tested on data built for it, "
             f"counted apart from the reproductions), {claims.counts_line(ext)}" if ext["total"] else "")
    lines = [f"Built at profile **{profile}**: of the paper's {rep['total']} claims reproduced here, "
             f"{claims.counts_line(rep)}{study}; of {chk['total']} checks of our own construction, {claims.counts_line(chk)}."]
    powered = [r for r in rows if r.get("kind") == "reproduction" and (r.get("trials") or {}).get("paper_held") is not None]
    if powered:
        weak = low_power(rows)
        lines[0] += (f" Each claim's own test was first run on trials (a null, the paper's effect with this build's "
                     f"spread, the reversal, a lost seed): of the {len(powered)} whose power at the paper's effect "
                     f"could be computed, {len(weak)} hold it less than {LOW_POWER:.0%} of the time at these seeds, "
                     f"so their verdicts say little either way.")
    for kind, title in (("reproduction", "The paper's claims"),
                        ("extension", "Mechanism study: the paper's premise on data built for it (not reproductions)"),
                        ("check", "Checks of this book's construction")):
        sub = [r for r in rows if r.get("kind") == kind]
        if kind == "extension" and not sub:
            continue
        head = "| Paper item | The paper says | Our test | Paper (cited) | This reproduction | Verdict and why |"
        if stability is not None:
            head += " At the stability seeds |"
        lines += ["", f"**{title}**", "", head, "|" + "---|" * (6 + (stability is not None))]
        for r in sub:
            said = " / ".join(f"“{q}”" for q in r.get("quote") or []) or "–"
            if r.get("quote_en"):
                said += f" (“{r['quote_en']}”)"
            if r.get("where"):
                said += f" ({r['where']})"
            if r.get("kind_why"):
                said = f"*a check: {r['kind_why']}*"
            ours = r["statement"]
            if r.get("band") is not None:
                ours += f" *Judged against the paper's size band [{fmt(r['band'][0])}, {fmt(r['band'][1])}].*"
            if r.get("exact"):
                ours += f" *Exact: {r['exact']}*"
            if r.get("deviation"):
                ours += f" *Deviation: {r['deviation']}*"
            if isinstance(r.get("budgets"), dict) and r["budgets"].get("unequal"):
                ours += f" *Unequal tuning budgets: {r['budgets']['unequal']}*"
            why = f"{MARK[r['verdict']]}: {without_verdict(r['reason'], r['verdict'])}"
            if r.get("reading"):
                why += f" *Our reading: {r['reading']} (recorded: {fmt(r.get('reading_value'))})*"
            ex = r.get("explanation")
            if ex and r["verdict"] in (verdicts.CONTRADICTED, verdicts.INCONCLUSIVE) and explained(ex):
                why += f" *Explained by {EXPLAINED_AS[ex['kind']]}: {ex.get('why') or r.get('deviation')}"
                why += (f" (recorded: {fmt(ex['evidence_value'])})*" if "evidence_value" in ex else "*")
            if r.get("trials"):
                why += f" *Trials: {sentence(r['trials'])}.*"
            if r.get("gate_reads"):
                why += (f" *Its precondition reads {', '.join(r['gate_reads'])}; the claim compares "
                        f"{', '.join(r.get('compares') or [])}.*")
            paper = fmt(r["paper_value"])
            if r.get("paper_self_test"):
                paper += (" *(the paper's own numbers pass this test)*" if r["paper_self_test"] == verdicts.HELD else
                          f" *(the paper's own numbers: {r['paper_self_test']})*")
            if r.get("erratum") and r.get("paper_self_test") != verdicts.HELD:
                paper += (f" **Erratum of the paper: the paper's numbers do not support its sentence.** "
                          f"{r['erratum']} *Computed: {r.get('paper_self_test_reason') or r.get('paper_self_test')}.*")
            ours_value = fmt(r["value"])
            if r.get("measured_in"):
                ours_value += f" (measured {str(r['measured_in'])[:16].replace('T', ' ')} UTC)"
            if r.get("recorded_in"):  # the executed notebook that recorded the values (report.py sets it)
                ours_value += f" (recorded by {{doc}}`{r['recorded_in'].rsplit('/', 1)[-1]} <{r['recorded_in']}>`"
                if r.get("computed_by"):  # the readout functions' source in the library appendix (report.py)
                    ours_value += ", computed by " + ", ".join(f"{{ref}}`{n} <{lab}>`" for n, lab in r["computed_by"])
                ours_value += ")"
            anchor = f'<a id="claim-{r["id"]}"></a>' if r.get("id") else ""
            cells = [anchor + str(r["paper_item"]), said, ours, paper, ours_value, why]
            if stability is not None:
                other = stability.get(r["id"])
                cells.append(f"{MARK[other[0]]} (seed {other[2]})" if other else "–")
            lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
        if not sub:
            lines.append("| – | none | | | | |" + (" |" if stability is not None else ""))
        if kind == "reproduction" and sub:
            untested = [r["id"] for r in sub if not r.get("paper_self_test")]
            lines += ["", "The paper's self-test (the claim's condition on the paper's own tabulated numbers, "
                      f"taken as exact) runs on {len(sub) - len(untested)} of these {len(sub)} claims; "
                      + (f"it has nothing to run on for {', '.join(f'`{i}`' for i in untested)} (the paper "
                         "tabulates no numbers for the comparison, or the claim compares our numbers with the "
                         "paper's own, which the paper passes trivially)."
                         if untested else "every claim has tabulated values.")]
    return "\n".join(lines) + "\n"
