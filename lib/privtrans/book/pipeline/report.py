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
        "claims": [{k: r[k] for k in ("chapter", "id", "paper_item", "paper_value", "value", "held", "reason")}
                   for r in claim_rows],
    }
    path = atomic_write_text(root / "_build" / "summary.json", json.dumps(summary, indent=1, ensure_ascii=False))
    write_status_page(root, summary)
    return path


def write_status_page(root: Path, summary: dict):
    """book/_generated/status.md, included by the landing page."""
    lines = [f"Built {summary['built']} at profile **{summary['profile']}**, seed {summary['seed']}.", "",
             "| Chapter | Notebooks run | Claims held | Not held | Not judged |", "|---|---|---|---|---|"]
    for ch in CHAPTERS:
        nbs = [n for n in summary["notebooks"] if n["chapter"] == ch]
        cl = [c for c in summary["claims"] if c["chapter"] == ch]
        ok = sum(n["status"] == "ok" for n in nbs)
        held = sum(c["held"] is True for c in cl)
        nheld = sum(c["held"] is False for c in cl)
        none = sum(c["held"] is None for c in cl)
        lines.append(f"| {{doc}}`/book/{ch}` | {ok} / {len(nbs)} | {held} | {nheld} | {none} |")
    lines += ["", "| Notebook | Profile | Seconds | Status |", "|---|---|---|---|"]
    for n in summary["notebooks"]:
        lines.append(f"| {n['chapter']}/{n['notebook']} | {n['profile']} | {n['seconds']:.1f} | {n['status']} |")
    out = root / "book" / "_generated"
    atomic_write_text(out / "status.md", "\n".join(lines) + "\n")
    atomic_write_text(out / "chapters.md", landing_table())
