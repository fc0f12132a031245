"""summary.json, each chapter's claims table and the landing page's status table."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from .. import claims
from ..chapters import KEYS as CHAPTERS
from ..chapters import landing_table
from ..paths import generated_dir
from ..runcache import atomic_write_text
from ..session import load_results


def judge_claims(root: Path, profile: str, ran: set[tuple[str, str]]) -> list[dict]:
    """Evaluate every chapter's claims and write book/_generated/<chapter>/claims.md.

    Only results of notebooks that ran in this build (``ran``: {(chapter, name)}) count: a stale
    results.json left by a notebook that failed or never ran here must not decide a claim."""
    rows_all = []
    for ch in CHAPTERS:
        doc = claims.load(ch, root)
        results = {name: r for name, r in load_results(ch, root).items() if (ch, name) in ran}
        rows = claims.evaluate(ch, doc, results, profile)
        atomic_write_text(generated_dir(ch, root) / "claims.md", claims.markdown_table(rows, profile))
        rows_all += rows
    return rows_all


def write_summary(root: Path, profile: str, seed: int, notebooks: list[dict], claim_rows: list[dict]) -> Path:
    summary = {
        "built": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "profile": profile,
        "seed": seed,
        "notebooks": notebooks,
        "claims": [{k: r[k] for k in ("chapter", "id", "kind", "paper_item", "paper_value", "value", "held",
                                      "reason", "seeds")}
                   for r in claim_rows],
    }
    path = atomic_write_text(root / "_build" / "summary.json", json.dumps(summary, indent=1, ensure_ascii=False))
    write_status_page(root, summary)
    return path


def write_status_page(root: Path, summary: dict):
    """book/_generated/status.md, included by the landing page."""
    lines = [f"Built {summary['built']} at profile **{summary['profile']}**, seed {summary['seed']}.", "",
             "Only reproductions (statements of the paper tested on data this build produced) count as "
             "the paper's claims; checks guard the book's own construction.", "",
             "| Chapter | Notebooks run | Paper's claims held | Not held | Not judged | Checks passed |",
             "|---|---|---|---|---|---|"]
    for ch in CHAPTERS:
        nbs = [n for n in summary["notebooks"] if n["chapter"] == ch]
        t = claims.tally([c for c in summary["claims"] if c["chapter"] == ch])
        rep, chk = t["reproduction"], t["check"]
        ok = sum(n["status"] == "ok" for n in nbs)
        lines.append(f"| {{doc}}`/book/{ch}` | {ok} / {len(nbs)} | {rep['held']} | {rep['not_held']} | "
                     f"{rep['not_judged']} | {chk['held']} / {chk['total']} |")
    lines += ["", "| Notebook | Profile | Seconds | Status |", "|---|---|---|---|"]
    for n in summary["notebooks"]:
        lines.append(f"| {n['chapter']}/{n['notebook']} | {n['profile']} | {n['seconds']:.1f} | {n['status']} |")
    out = root / "book" / "_generated"
    atomic_write_text(out / "status.md", "\n".join(lines) + "\n")
    atomic_write_text(out / "chapters.md", landing_table())
