"""python -m privtrans.book.pipeline.compare OLD_SUMMARY NEW_SUMMARY: which claim verdicts differ.

Two ``_build/summary.json`` files (say, before and after a change, or at two seeds) side by side:
one line per claim whose verdict (held / not held / not judged) is not the same, with both reasons;
claims that exist in only one of them are listed too. Exit status 0 when no verdict differs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

WORD = {True: "held", False: "not held", None: "not judged"}


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
        elif ca["held"] is not cb["held"]:
            lines.append(f"{name}: {WORD[ca['held']]} -> {WORD[cb['held']]}\n"
                         f"    old: {ca['reason']}\n    new: {cb['reason']}")
    return lines


def count(summary: dict) -> str:
    held = [c["held"] for c in summary["claims"]]
    return (f"{held.count(True)} held, {held.count(False)} not held, {held.count(None)} not judged "
            f"(profile {summary.get('profile')}, seed {summary.get('seed')})")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    old, new = (json.loads(Path(p).read_text()) for p in argv)
    print(f"old: {count(old)}\nnew: {count(new)}")
    lines = differences(old, new)
    print("\n".join(lines) if lines else "no verdict differs")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
