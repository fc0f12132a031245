"""summary.json, each chapter's claims table and the landing page's status table."""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

from .. import budgets, claims, claims_page, controls, trials
from . import discrepancies, forest, library
from ..chapters import KEYS as CHAPTERS
from ..chapters import landing_table
from ..paths import generated_dir
from ..runcache import atomic_write, atomic_write_text
from ..session import load_inputs, load_results, versions
from ..verdicts import HELD, NOT_JUDGED


SUMMARY_FIELDS = ("chapter", "id", "kind", "paper_item", "quote", "quote_en", "where", "statement", "paper_value",
                  "value", "verdict", "held", "reason", "seeds", "margin", "need", "deviation", "reading",
                  "reading_value", "cells", "made_by", "band", "exact", "compares", "gate_reads", "trials",
                  "measured_in", "erratum", "paper_self_test", "paper_self_test_reason", "explanation",
                  "budgets", "recorded_in")


def stability_path(root: Path) -> Path:
    """Where ``make stability`` leaves the summary of the build at the disjoint seed set."""
    return root / "_build" / "stability" / "summary.json"


def load_stability(root: Path, profile: str, seed: int) -> dict | None:
    """The stability build's summary, when there is one at this profile and another seed."""
    path = stability_path(root)
    if not path.is_file():
        return None
    s = json.loads(path.read_text())
    if s.get("profile") != profile or s.get("seed") == seed:
        return None
    return s


def executed_docs(root: Path, chapter: str, ran: set[tuple[str, str]]) -> dict[str, str]:
    """{result name: the executed notebook page (a Sphinx doc path) that recorded it} for the chapter's
    notebooks ``NN_<name>`` that ran in this build (a notebook that did not run gets no link: it would
    point nowhere)."""
    out = {}
    for f in sorted((root / "book" / "_executed" / chapter).glob("[0-9][0-9]_*.ipynb")):
        name = f.stem.split("_", 1)[1]
        if (chapter, name) in ran:
            out.setdefault(name, f"/book/_executed/{chapter}/{f.stem}")
    return out


def judge_claims(root: Path, profile: str, ran: set[tuple[str, str]], seed: int | None = None) -> list[dict]:
    """Evaluate every chapter's claims and write book/_generated/<chapter>/claims.md.

    Only results of notebooks that ran in this build (``ran``: {(chapter, name)}) count: a stale
    results.json left by a notebook that failed or never ran here must not decide a claim. Where
    ``make stability`` built the book at another seed set, each row shows that build's verdict too."""
    other = load_stability(root, profile, seed) if seed is not None else None
    rows_all = []
    judged = []
    for ch in CHAPTERS:
        doc = claims.load(ch, root)
        results = {name: r for name, r in load_results(ch, root).items() if (ch, name) in ran}
        judged.append((ch, doc, results, claims.evaluate(ch, doc, results, profile, root)))
    prove_all(root, profile, judged)
    for ch, doc, results, rows in judged:
        stab = None
        if other is not None:
            theirs = {c["id"]: c for c in other["claims"] if c["chapter"] == ch and "verdict" in c}
            stab = {i: (c["verdict"], c["reason"], other["seed"]) for i, c in theirs.items()}
            for r in rows:
                if r["id"] in stab:
                    r["stability"] = {"seed": other["seed"], "verdict": stab[r["id"]][0],
                                      "cells": theirs[r["id"]].get("cells")}
        docs = executed_docs(root, ch, ran)
        for r in rows:
            r["recorded_in"] = docs.get(r.get("notebook"))
            # the readout functions that computed the values, as labels of their library sections
            r["computed_by"] = [(fn.rsplit(".", 1)[-1], library.label(fn)) for fn in r.get("made_by") or []]
        figure = forest.draw(rows, generated_dir(ch, root) / "forest.png")
        atomic_write_text(generated_dir(ch, root) / "claims.md",
                          (forest.directive(ch) if figure else "") + claims_page.markdown_table(rows, profile, stab)
                          + budgets.markdown(ch, doc["claims"], profile) + library.chapter_links(ch, root))
        rows_all += rows
    return rows_all


def prove_all(root: Path, profile: str, judged: list) -> None:
    """Every reproduction's own test, on trials and on controls through its whole path
    (``trials.run_cached``), and the verdict it can then stand by (``trials.standing``). The claims
    of one notebook are proven in one process (they share its readout's replays), the notebooks on
    every core (``workers.values_in_parallel``): a cold ``ci`` judge replays readouts tens of
    thousands of times; a cached one reads every result back."""
    from ..workers import values_in_parallel

    jobs, where = [], []
    for ch, doc, results, rows in judged:
        by_id = {c["id"]: c for c in doc["claims"]}
        mine = [r for r in rows if r["kind"] in claims.QUOTED]
        for nb in sorted({r["notebook"] for r in mine}):
            group = [r for r in mine if r["notebook"] == nb]
            jobs.append(partial(_prove, root, profile, ch, [by_id[r["id"]] for r in group], group, results))
            where.append(group)
    order = sorted(range(len(jobs)), key=lambda i: -len(where[i]))  # the longest first
    for i, got in zip(order, values_in_parallel([jobs[i] for i in order])):
        for r, t in zip(where[i], got):
            r["trials"] = t
            r["verdict"], r["reason"] = trials.standing(r["verdict"], r["reason"], t)
            r["held"] = None if r["verdict"] == NOT_JUDGED else r["verdict"] == HELD


def _prove(root: Path, profile: str, ch: str, cs: list, rows: list, results: dict) -> list:
    env = claims.environment(results)
    inputs = {name: load_inputs(ch, name, root) for name in results}
    return [trials.run_cached(ch, c, r, env, root, inputs=inputs, control_draws=controls.draws_for(profile))
            for c, r in zip(cs, rows)]


def machine() -> dict:
    """The machine and packages that built the book."""
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    return {"platform": platform.platform(terse=True), "cpu": platform.machine(), "cores": os.cpu_count(),
            "memory_gib": round(mem / 2**30, 1), "gpu": bool(shutil.which("nvidia-smi")), "versions": versions()}


def write_summary(root: Path, profile: str, seed: int, notebooks: list[dict], claim_rows: list[dict],
                  reference_s: float | None = None) -> Path:
    """``reference_s``: this machine's time for ``calibration.reference_seconds``'s fixed workload."""
    summary = {
        "built": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "profile": profile,
        "seed": seed,
        "machine": {**machine(), "reference_s": reference_s},
        "notebooks": notebooks,
        "claims": [{**{k: r.get(k) for k in SUMMARY_FIELDS},
                    **({"stability": r["stability"]} if r.get("stability") else {})}
                   for r in claim_rows],
    }
    path = atomic_write_text(root / "_build" / "summary.json", json.dumps(summary, indent=1, ensure_ascii=False))
    write_status_page(root, summary)
    return path


def chapter_rows(summary: dict) -> list[dict]:
    """Per chapter: notebooks run, the paper's claims by verdict, checks, minutes the notebooks took."""
    rows = []
    for ch in CHAPTERS:
        nbs = [n for n in summary["notebooks"] if n["chapter"] == ch]
        mine = [c for c in summary["claims"] if c["chapter"] == ch]
        t = claims.tally(mine)
        rows.append({"chapter": ch, "notebooks": len(nbs), "ok": sum(n["status"] == "ok" for n in nbs),
                     **{f"rep_{k}": v for k, v in t["reproduction"].items()},
                     **{f"ext_{k}": v for k, v in t["extension"].items()},
                     **{f"check_{k}": v for k, v in t["check"].items()},
                     "low_power": len(trials.low_power(mine)),
                     "trials_failed": sum(not (c.get("trials") or {}).get("passed", True) for c in mine),
                     "withdrawn": sum(str(c.get("reason", "")).startswith(trials.WITHDRAWN) for c in mine),
                     "minutes": sum(n["seconds"] or 0 for n in nbs) / 60})
    return rows


def study_cell(row: dict) -> str:
    """A chapter's mechanism-study claims (kind extension) for the dashboard: '2 held, 1 contradicted,
    0 inconclusive, 1 not judged of 4', or '–' where the chapter has none."""
    if not row.get("ext_total"):
        return "–"
    return f"{claims.counts_line({k[4:]: v for k, v in row.items() if k.startswith('ext_')})} of {row['ext_total']}"


def dashboard_figure(rows: list[dict], path: Path):
    """The paper's claims per chapter as one stacked bar each: held / contradicted / inconclusive / not judged."""
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from ..plotting import subplots

    built = [r for r in rows if r["notebooks"]]
    df = pd.DataFrame([{"chapter": r["chapter"], "held": r["rep_held"], "contradicted": r["rep_contradicted"],
                        "inconclusive": r["rep_inconclusive"], "not judged": r["rep_not_judged"]}
                       for r in built]).set_index("chapter")
    fig, ax = subplots(figsize=(6.4, 0.5 + 0.45 * max(1, len(df))))
    if len(df):
        df.plot.barh(stacked=True, ax=ax, color=["#2a9d8f", "#e76f51", "#e9c46a", "#b0b0b0"], width=0.7)
        ax.invert_yaxis()
        ax.legend(ncols=4, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    ax.set(xlabel="the paper's claims (reproductions)", ylabel="")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120, bbox_inches="tight"))
    import matplotlib.pyplot as plt

    plt.close(fig)


def stability_lines(summary: dict) -> list[str]:
    """The landing page's stability note: how many reproductions keep their verdict at the other seeds."""
    rows = [c for c in summary["claims"] if c.get("kind") == "reproduction" and c.get("stability")]
    if not rows:
        return ["", "No stability build yet (`make stability` builds the book again at a disjoint seed set "
                "and shows both verdicts here and on every chapter page)."]
    seed = rows[0]["stability"]["seed"]
    same = sum(c["verdict"] == c["stability"]["verdict"] for c in rows)
    flips = [c for c in rows if c["verdict"] != c["stability"]["verdict"]]
    out = ["", f"**Stability**: built again at seed {seed} (a disjoint seed set), {same} of {len(rows)} "
           f"reproductions keep their verdict."]
    agree = interval_agreement(rows)
    if agree["cells"]:
        worst = "; ".join(f"{n} ({z:+.1f} standard errors)" for n, z in agree["worst"][:3])
        out += ["", f"**Interval coverage**: of {agree['cells']} cells measured at both seed sets, "
                f"{agree['disagree']} ({agree['disagree'] / agree['cells']:.0%}) differ by more than their two "
                f"intervals allow at 95 %: about 5 % is expected if the intervals are as wide as they should be, "
                f"far more if they are too narrow; against Binomial({agree['cells']}, 5 %) that many or more has "
                f"p = {agree['p']:.2g}, "
                + ("consistent with intervals of the width they state" if agree["consistent"] else
                   "**so the intervals are narrower than they state** (a defect to explain)")
                + f". The largest: {worst}."]
    if flips:
        out += ["", "| Claim | Seed " + str(summary["seed"]) + f" | Seed {seed} |", "|---|---|---|"]
        for c in flips:
            defect = " (a defect to explain)" if {c["verdict"], c["stability"]["verdict"]} == {"held", "contradicted"} \
                else ""
            out.append(f"| {c['chapter']}/{c['id']} | {c['verdict']} | {c['stability']['verdict']}{defect} |")
    return out


def interval_agreement(claim_rows: list[dict]) -> dict:
    """Are the intervals as wide as they should be? Each cell measured at both seed sets gives two
    independent estimates of one mean: their difference over its standard error exceeds the 95 %
    t quantile about 5 % of the time if the intervals are right, far more often if they are too
    narrow. {cells, disagree, p, consistent, worst: [(claim [cell], z)]}: ``p`` is the one-sided
    binomial p of so many disagreements among the cells at 5 % each (``consistent``: p ≥ 0.05, the
    intervals are as wide as they claim; the cells of one claim share seeds, so p is a guide)."""
    from scipy import stats

    zs = []
    for c in claim_rows:
        mine, theirs = c.get("cells") or {}, (c.get("stability") or {}).get("cells") or {}
        for name in mine.keys() & theirs.keys():
            a, b = mine[name], theirs[name]
            if any(x.get("lo") is None or (x.get("n") or 0) < 2 for x in (a, b)):
                continue
            se = [(x["hi"] - x["lo"]) / (2 * stats.t.ppf(0.5 + (x.get("confidence") or 0.95) / 2, x["n"] - 1))
                  for x in (a, b)]
            spread = math.hypot(*se)
            if spread == 0:
                continue
            z = (a["mean"] - b["mean"]) / spread
            q = stats.t.ppf(0.975, a["n"] + b["n"] - 2)
            zs.append((f"{c['chapter']}/{c['id']}" + (f" [{name}]" if name else ""), z, abs(z) > q))
    zs.sort(key=lambda t: -abs(t[1]))
    k = sum(t[2] for t in zs)
    p = float(stats.binomtest(k, len(zs), 0.05, alternative="greater").pvalue) if zs else 1.0
    return {"cells": len(zs), "disagree": k, "p": p, "consistent": p >= 0.05, "worst": [(n, z) for n, z, _ in zs[:5]]}


def build_times(summary: dict) -> str:
    """The reproducing page's line on this build's time (``book/_generated/build_times.md``), read
    from the summary so that the page cannot go stale: the notebooks' seconds summed (each from the
    run that made its cached output), the longest one, and the reference workload."""
    nbs = [n for n in summary["notebooks"] if n["status"] != "not run"]
    if not nbs:
        return "No notebook of this copy of the book has run yet.\n"
    seconds = [n["seconds"] or 0 for n in nbs]  # a cached state may lack its seconds (as in chapter_rows)
    top = nbs[seconds.index(max(seconds))]
    jobs = max(n.get("jobs") or 1 for n in nbs)
    failed = sum(n["status"] != "ok" for n in nbs)
    ref = (summary.get("machine") or {}).get("reference_s")
    counted = f"{len(nbs)} notebook{'s' if len(nbs) > 1 else ''}" + (f" ({failed} failed)" if failed else "")
    text = (f"This copy of the book (built {summary['built'][:10]}, profile `{summary['profile']}`, seed "
            f"{summary['seed']}): {counted} in {sum(seconds) / 60:.1f} minutes of notebook time in all, each "
            f"notebook's seconds from the run that made its cached output; the longest took "
            f"{max(seconds):.0f} s ({top['chapter']}/{top['notebook']})")
    if jobs > 1:
        text += f". Up to {jobs} notebooks ran at once, so the minutes overlap and add up to more than the wall time"
    if ref:
        text += f". The reference workload took {ref:.4f} s"
    return text + ".\n"


def write_status_page(root: Path, summary: dict):
    """book/_generated/status.md, the landing page's dashboard, read from the summary alone."""
    rows = chapter_rows(summary)
    out = root / "book" / "_generated"
    dashboard_figure(rows, out / "status.png")
    m = summary.get("machine") or {}
    lines = [f"Built {summary['built']} at profile **{summary['profile']}**, seed {summary['seed']}, on "
             f"{m.get('platform', '?')} ({m.get('cores', '?')} cores, {m.get('memory_gib', '?')} GiB, "
             f"{'a GPU' if m.get('gpu') else 'no GPU'})"
             + (f"; it ran the reference workload in {m['reference_s']:.3f} s (`privtrans.book.pipeline.calibration`: "
                "divide two builds' minutes by it to compare them)" if m.get("reference_s") else "") + ".", "",
             "Only reproductions (statements of the paper tested on data this build produced) count as "
             "the paper's claims; checks guard the book's own construction.", "",
             "```{image} /book/_generated/status.png", ":alt: the paper's claims per chapter: held, contradicted, inconclusive, not judged",
             ":width: 80%", "```", "",
             "A reproduction is **held** (the data show what the paper states), **contradicted** (the data "
             "exclude it), **inconclusive** (the interval across paired seeds cannot tell) or **not judged** "
             "(the setting cannot show the effect); each chapter page gives the computed reason per claim.", "",
             "Before it judges the paper, each reproduction's own rule is run on trials (`privtrans.book.trials`: "
             "its least-favourable null, its boundary, the paper's effect with this build's spread, the reversed "
             "effect and a lost seed, on normal cells and on the recorded seeds resampled), and its whole path "
             "(readout, expression, gate and rule) on records generated again around a known truth "
             "(`privtrans.book.controls`). A verdict whose test fails a control of the error it would make is "
             "withdrawn: the claim is *not judged*, and its row says which control failed. *Power under 50 %* "
             "counts the reproductions whose test would hold the paper's own effect less than half the time at "
             f"this build's seeds: their verdicts say little either way.", "",
             "A mechanism study (an *extension*) tests the paper's own premise on data built for the test, "
             "not the paper's experiment: its claims are counted apart, in their own column, never among "
             "the paper's claims above.", "",
             "| Chapter | Notebooks run | Held | Contradicted | Inconclusive | Not judged | Power under 50 % "
             "| Mechanism study | Checks held | Minutes |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r["notebooks"]:
            lines.append(f"| {{doc}}`/book/{r['chapter']}` | not built yet | | | | | | | | |")
            continue
        failed = f" ({r['trials_failed']} failed a control, {r['withdrawn']} verdicts withdrawn)" if r["trials_failed"] else ""
        lines.append(f"| {{doc}}`/book/{r['chapter']}` | {r['ok']} / {r['notebooks']} | {r['rep_held']} | "
                     f"{r['rep_contradicted']} | {r['rep_inconclusive']} | {r['rep_not_judged']} | "
                     f"{r['low_power']}{failed} | {study_cell(r)} | {r['check_held']} / {r['check_total']} | "
                     f"{r['minutes']:.1f} |")
    if forest.draw(summary["claims"], out / "forest.png", with_chapter=True):
        lines += ["", "Every chapter's comparison claims on one scale:", "", forest.directive().rstrip()]
    lines += discrepancies.landing_lines(summary)
    lines += stability_lines(summary)
    versions = ", ".join(f"{k} {v}" for k, v in (m.get("versions") or {}).items())
    lines += ["", f"Packages: {versions}.", "", "| Notebook | Profile | Seconds | Status |", "|---|---|---|---|"]
    for n in summary["notebooks"]:
        lines.append(f"| {n['chapter']}/{n['notebook']} | {n['profile']} | {n['seconds']:.1f} | {n['status']} |")
    atomic_write_text(out / "status.md", "\n".join(lines) + "\n")
    atomic_write_text(out / "chapters.md", landing_table())
    atomic_write_text(out / "build_times.md", build_times(summary))
    atomic_write_text(out / "discrepancies.md", discrepancies.page(summary))
    from .dry_build import page_table  # the reproducing page's table of estimated `paper` costs

    atomic_write_text(out / "dry_run.md", page_table(root))
