"""A chapter's forest plot: every interval claim's cells on the one scale the verdict is decided on.

The claims compare different quantities (accuracy, log ratios, relative gains), so the x axis is
each cell's distance from its claim's margin in standard errors, (mean − margin) / se, with its 95 %
t interval: a one-cell claim is held when its whole bar lies right of 0, contradicted when it lies at or
left of 0, inconclusive when it crosses 0; a claim of many cells is judged at family levels (wider than
the bars drawn: ``verdicts.family_levels``), which its reason states. Colour is the claim's verdict;
the raw intervals are in the table. A size claim (a band, not a margin) is in the table only.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from scipy import stats

from ..runcache import atomic_write
from ..verdicts import required

COLOURS = {"held": "#2a9d8f", "contradicted": "#e76f51", "inconclusive": "#e9c46a", "not judged": "#b0b0b0"}
CLIP = 12.0  # standard errors: beyond this a cell is far from its margin either way; drawn at the edge


def standardised(cell: dict, margin: float) -> tuple[float, float, float] | None:
    """(centre, lo, hi) of one cell in standard errors from the margin; None without an interval."""
    n, lo, hi, mean = cell.get("n") or 0, cell.get("lo"), cell.get("hi"), cell.get("mean")
    if n < 2 or lo is None or hi is None or mean is None:
        return None
    t = stats.t.ppf(0.975, n - 1)
    se = (hi - lo) / (2 * t)
    if se == 0:
        side = math.copysign(CLIP, mean - margin) if mean != margin else 0.0
        return side, side, side
    z = (mean - margin) / se
    return z, z - t, z + t


def points(rows: list[dict], with_chapter: bool = False) -> list[dict]:
    """One point per cell of every reproduction with an interval, labelled ``id [cell]``; or, with
    ``with_chapter`` (the landing page, every chapter in one plot), one point per claim labelled
    ``chapter/id``: the cell its verdict rests on (:func:`deciding`)."""
    out = []
    for r in rows:
        if r.get("kind") != "reproduction" or not r.get("cells") or r.get("margin") is None:
            continue
        cells = []
        for name, cell in r["cells"].items():
            s = standardised(cell, float(r["margin"]))
            if s is not None:
                cells.append({"label": r["id"] + (f" [{name}]" if name else ""), "verdict": r["verdict"],
                              "z": s[0], "lo": s[1], "hi": s[2]})
        if with_chapter and cells:
            d = deciding(cells, r.get("need"))
            more = f" (1 of {len(cells)} cells)" if len(cells) > 1 else ""
            cells = [{**d, "label": f"{r['chapter']}/{d['label']}{more}"}]
        out += cells
    return out


def deciding(cells: list[dict], need) -> dict:
    """The cell a claim's verdict rests on: with k cells required to clear the margin
    (``verdicts.required``), the k-th highest lower end. The claim is held exactly when that cell
    clears, so one bar per claim still shows how far it is from its verdict."""
    k = required(need, len(cells))
    return sorted(cells, key=lambda c: -c["lo"])[k - 1]


def draw(rows: list[dict], path: Path, with_chapter: bool = False) -> Path | None:
    """Write the forest plot of ``rows`` (one chapter's, or every chapter's with ``with_chapter``);
    None when no reproduction has an interval."""
    pts = points(rows, with_chapter)
    if not pts:
        return None
    key = _key(pts, with_chapter)
    if _drawn(path, key):  # the same bars by the same code: a build that changed none keeps the file
        return path
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..plotting import subplots

    row_h, font = (0.18, 6.5) if with_chapter else (0.22, 7)
    fig, ax = subplots(figsize=(7.5, 0.9 + row_h * len(pts)))
    for i, p in enumerate(pts):
        lo, hi, z = (max(-CLIP, min(CLIP, v)) for v in (p["lo"], p["hi"], p["z"]))
        ax.plot([lo, hi], [i, i], color=COLOURS[p["verdict"]], lw=2.2, solid_capstyle="butt")
        ax.plot([z], [i], "o", color=COLOURS[p["verdict"]], ms=4)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(pts)), [p["label"] for p in pts], fontsize=font)
    ax.set_ylim(len(pts) - 0.5, -0.5)
    ax.set_xlim(-CLIP - 0.5, CLIP + 0.5)
    ax.set_xlabel("(difference − the claim's margin) in standard errors, 95 % t interval "
                  f"(clipped at ±{CLIP:g})", fontsize=8)
    for v, c in COLOURS.items():
        ax.plot([], [], color=c, lw=3, label=v)
    ax.legend(ncols=4, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False, fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=110, bbox_inches="tight",
                                             metadata={KEY_FIELD: key}))
    plt.close(fig)
    return path


KEY_FIELD = "Description"  # a PNG text chunk: what the plot was drawn from, read back by _drawn


def _key(pts: list[dict], with_chapter: bool) -> str:
    """What a plot is drawn from: its bars and the code that draws them (this module, the book's
    plotting style), so that an edit of either redraws it."""
    here = Path(__file__)
    code = here.read_bytes() + here.parents[1].joinpath("plotting.py").read_bytes()
    blob = json.dumps([pts, with_chapter], sort_keys=True, default=str).encode() + code
    return hashlib.sha256(blob).hexdigest()


def _drawn(path: Path, key: str) -> bool:
    """Whether ``path`` is a plot this module drew from ``key``. The plots are redrawn by every build,
    most of them changing nothing (a re-run of one notebook, every test of the pipeline), and drawing
    the six took about 5 s of each."""
    if not path.is_file():
        return False
    try:
        from PIL import Image  # matplotlib's own dependency

        with Image.open(path) as im:
            return im.text.get(KEY_FIELD) == key
    except (OSError, ValueError):
        return False


def directive(chapter: str | None = None) -> str:
    """The image block of a chapter's plot, or (``chapter`` None) the landing page's of every chapter."""
    src = f"/book/_generated/{chapter}/forest.png" if chapter else "/book/_generated/forest.png"
    who = chapter or "every chapter"
    return (f"```{{image}} {src}\n"
            f":alt: {who}: each comparison claim's intervals, in standard errors from the margin it must "
            f"clear, coloured by verdict\n:width: 90%\n```\n\n"
            "Each bar is one cell of a comparison claim, in standard errors from the margin the paper's "
            "sentence implies: right of the line clears it, left of it is excluded, across it the seeds "
            "cannot tell.\n\n")
