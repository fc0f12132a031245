"""python -m privtrans.book.pipeline.compare OLD_SUMMARY NEW_SUMMARY: which claim verdicts differ.

Two ``_build/summary.json`` files (say, before and after a change, or at two seeds) side by side:
one line per claim whose verdict (held / contradicted / inconclusive / not judged) is not the same, with both reasons;
claims that exist in only one of them are listed too. Exit status 0 when no verdict differs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..verdicts import NOT_JUDGED, VERDICTS

WORD = {True: "held", False: "not held", None: NOT_JUDGED}  # summaries written before the four verdicts


def verdict(claim: dict) -> str:
    """A claim's verdict; a summary from before the four verdicts gives held / not held / not judged."""
    return claim["verdict"] if "verdict" in claim else WORD[claim.get("held")]


def verdicts(summary: dict) -> dict[tuple[str, str], dict]:
    return {(c["chapter"], c["id"]): c for c in summary["claims"]}


def differences(old: dict, new: dict) -> list[str]:
    a, b = verdicts(old), verdicts(new)
    lines = []
    for key in sorted(a.keys() | b.keys()):
        ca, cb = a.get(key), b.get(key)
        name = "/".join(key)
        if ca is None or cb is None:
            lines.append(f"{name}: only in the {'new' if ca is None else 'old'} summary")
        elif verdict(ca) != verdict(cb):
            lines.append(f"{name}: {verdict(ca)} -> {verdict(cb)}\n"
                         f"    old: {ca['reason']}\n    new: {cb['reason']}")
    return lines


def count(summary: dict) -> str:
    vs = [verdict(c) for c in summary["claims"]]
    words = [v for v in (*VERDICTS, "not held") if v in vs or v in VERDICTS]
    return (", ".join(f"{vs.count(v)} {v}" for v in words)
            + f" (profile {summary.get('profile')}, seed {summary.get('seed')})")


def print_differences(old: tuple[str, dict], new: tuple[str, dict], none: str) -> int:
    """Print two labelled builds' counts and the verdicts that differ (or ``none``); the exit status
    a command returns: 1 when a verdict differs."""
    (old_label, old_summary), (new_label, new_summary) = old, new
    print(f"{old_label}: {count(old_summary)}\n{new_label}: {count(new_summary)}")
    lines = differences(old_summary, new_summary)
    print("\n".join(lines) if lines else none)
    return 1 if lines else 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    old, new = (json.loads(Path(p).read_text()) for p in argv)
    return print_differences(("old", old), ("new", new), "no verdict differs")


if __name__ == "__main__":
    sys.exit(main())
