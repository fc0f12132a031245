"""python -m privtrans.book.pipeline.dry_build [--chapter CH ...] [--notebook CH/NAME ...] [--jobs N] [--record]

``make dry``: every notebook at profile ``dry`` (the `paper` settings, data and models, each long loop
cut to its first step: ``privtrans.book.dry``), in a temporary copy of this checkout with cold caches,
so that a reader about to spend GPU hours at `paper` knows first that every notebook starts and gets
through every method, task and grid point at the paper's shapes. Prints, per notebook, its status,
its dry-run seconds and its estimated `paper` cost, and writes them to ``_build/dry_run.json``; the
build here is left alone. With ``--record`` the run's rows replace those notebooks' rows in
``data/dry_run.csv``, each with the machine, commit and date that measured it, which
``book/reproducing.md`` tabulates (every notebook, recorded or not). Exit status 0 when every
notebook ran.
Not part of ``make book`` or ``make test``: at `paper` shapes it takes tens of minutes on a CPU.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from .. import stopping
from ..chapters import DRY, KEYS, ParameterError, get
from ..paths import repo_root
from ..runcache import atomic_write_text
from . import cache
from .discover import discover, pick
from .seedflip import pipeline_in_copy

RECORD = Path("data") / "dry_run.csv"
FIELDS = ("chapter", "notebook", "status", "dry_seconds", "paper_estimate_s", "seed_factor", "cut_loops",
          "machine", "commit", "date")


def machine() -> dict:
    """Where the dry run's step times were measured (the estimates hold for that machine only)."""
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"host": platform.node(), "processor": platform.machine(), "cores": len(os.sched_getaffinity(0)),
            "gpu": gpu, "torch": torch.__version__}


def commit(root: Path) -> str | None:
    """The checkout's commit, ``-dirty`` when a tracked file other than the record differs from it.
    The record (``data/dry_run.csv``) is what ``--record`` itself writes: a second dry run after an
    uncommitted first one measures the same code and is not marked dirty by it."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", f":(exclude){RECORD.as_posix()}")
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{head}-dirty" if changed else head or None


def rows_of(copy: Path, wanted=None) -> list[dict]:
    """One row per notebook the dry build in ``copy`` ran (its per-notebook state, written as each
    finishes, so a build stopped half-way still reports what ran): its status and its ``dry`` tally.
    ``wanted``: the notebooks (discover's) to report, default all."""
    out = []
    for nb in wanted if wanted is not None else discover(copy):
        st = cache.load_state(copy, nb)
        if not st or st.get("profile") != DRY:  # a notebook this dry run did not reach
            continue
        res = copy / "book" / "_generated" / nb.chapter / nb.name / "results.json"
        tally = (json.loads(res.read_text()).get("dry") or {}) if st["status"] == "ok" and res.is_file() else {}
        cut = tally.get("loops", {})
        out.append({"chapter": nb.chapter, "notebook": nb.stem, "status": st["status"],
                    "error": st.get("error"), "dry_seconds": st.get("seconds"),
                    "paper_estimate_s": tally.get("paper_estimate_s"), "seed_factor": tally.get("seed_factor"),
                    "cut_loops": ", ".join(f"{k} {v['kept']}/{v['full']}" for k, v in cut.items()) or "none"})
    return out


def hours(seconds) -> str:
    if seconds is None:
        return "–"
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def table(rows: list[dict]) -> str:
    lines = [f"{'notebook':<44} {'status':<7} {'dry run':>9} {'paper (est.)':>13}"]
    for r in rows:
        lines.append(f"{r['chapter'] + '/' + r['notebook']:<44} {r['status']:<7} "
                     f"{hours(r['dry_seconds']):>9} {hours(r['paper_estimate_s']):>13}")
    total = sum(r["paper_estimate_s"] or 0 for r in rows)
    lines.append(f"{'all':<44} {'':<7} {hours(sum(r['dry_seconds'] or 0 for r in rows)):>9} {hours(total):>13}")
    return "\n".join(lines)


def where(m: dict) -> str:
    """A machine in a few words: its GPU, or its cores."""
    return f"{m['gpu']}" if m.get("gpu") else f"CPU, {m.get('cores')} cores"


def read_record(root: Path) -> list[dict]:
    """The rows of ``data/dry_run.csv`` (none when no dry run was recorded)."""
    path = root / RECORD
    if not path.is_file():
        return []
    return list(csv.DictReader([ln for ln in path.read_text().splitlines() if not ln.startswith("#")]))


def merged_record(old: list[dict], rows: list[dict], meta: dict) -> str:
    """``data/dry_run.csv`` with ``rows`` (one dry run, measured as ``meta`` says) in place of the
    rows of the same notebooks; each row names the machine, commit and date that measured it."""
    stamp = {"machine": where(meta["machine"]), "commit": meta["commit"], "date": meta["date"]}
    new = {(r["chapter"], r["notebook"]): {**r, **stamp} for r in rows}
    keep = [r for r in old if (r["chapter"], r["notebook"]) not in new]
    buf = io.StringIO()
    buf.write("# written by `make dry DRY_ARGS=--record` (privtrans.book.pipeline.dry_build); one row per notebook,\n"
              "# the latest dry run of each; seconds on the machine named in the row\n")
    w = csv.DictWriter(buf, fieldnames=FIELDS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(sorted(keep + list(new.values()), key=lambda r: (r["chapter"], r["notebook"])))
    return buf.getvalue()


def page_table(root: Path) -> str:
    """The reproducing page's table of estimated `paper` costs (``book/_generated/dry_run.md``):
    every notebook of the book, with its recorded dry run or none."""
    rec = {(r["chapter"], r["notebook"]): r for r in read_record(root)}
    if not rec:
        return "No dry run has been recorded yet: `make dry DRY_ARGS=--record` measures one.\n"
    out = ["| notebook | dry run | estimated at `paper` | measured on | loops cut (kept/full, summed over runs) |",
           "|---|---|---|---|---|"]
    total, missing = 0.0, 0
    for nb in discover(root):
        r = rec.get((nb.chapter, nb.stem))
        if r is None:
            missing += 1
            out.append(f"| {nb.label} | not recorded | | | |")
            continue
        est = float(r["paper_estimate_s"]) if r["paper_estimate_s"] else None
        total += est or 0.0
        dry_s = float(r["dry_seconds"]) if r["dry_seconds"] else None
        status = "" if r["status"] == "ok" else f" ({r['status']})"
        out.append(f"| {nb.label}{status} | {hours(dry_s)} | {hours(est)} | {r['machine']}, "
                   f"`{r['commit']}`, {r['date'][:10]} | {r['cut_loops']} |")
    out.append(f"| all recorded | | {hours(total)} | | |")
    if missing:
        out += ["", f"{missing} notebook(s) have no recorded dry run."]
    return "\n".join(out) + "\n"


def report(root: Path, rows: list[dict], expected: int, record: bool, exit_ok: bool = True,
           ran_at: str | None = None) -> int:
    """Write ``_build/dry_run.json`` (and with ``record`` ``data/dry_run.csv``), print the table.
    ``ran_at``: the commit the notebooks ran from, taken when the run started (a commit made while
    it ran is not what it measured); default the checkout's commit now."""
    meta = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": ran_at or commit(root),
            "machine": machine()}
    out = root / "_build" / "dry_run.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps({**meta, "notebooks": rows}, indent=1))
    print(table(rows))
    failed = [r for r in rows if r["status"] != "ok"]
    for r in failed:
        print(f"FAILED {r['chapter']}/{r['notebook']}: {r['error']}", file=sys.stderr)
    if record:  # every row says its status: a failed or missing notebook shows as such on the page
        atomic_write_text(root / RECORD, merged_record(read_record(root), rows, meta))
        print(f"recorded in {RECORD}")
    print(f"dry run: {len(rows) - len(failed)} of {expected} notebooks ran; {out.relative_to(root)}")
    return 0 if not failed and len(rows) == expected and exit_ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m privtrans.book.pipeline.dry_build", description=__doc__.split("\n\n")[1])
    ap.add_argument("--chapter", action="append", default=[], help=f"one of {', '.join(KEYS)} (default: all)")
    ap.add_argument("--notebook", action="append", default=[], help="chapter/name (repeatable)")
    ap.add_argument("--jobs", type=int, default=1, help="notebooks of that many chapters at once")
    ap.add_argument("--record", action="store_true",
                    help=f"also keep this run's rows in {RECORD} (replacing those notebooks' earlier rows)")
    ap.add_argument("--in-place", action="store_true",
                    help="run in this checkout itself, not a copy (a throwaway checkout, e.g. on a GPU machine)")
    ap.add_argument("--collect", action="store_true",
                    help="run nothing: report the dry run already in this checkout (one stopped half-way)")
    ap.add_argument("--root", type=Path, default=None)
    a = ap.parse_args(argv)
    root = (a.root or repo_root()).resolve()
    chapters = [get(c).key for arg in a.chapter for c in arg.split(",") if c]
    args = ["--profile", DRY, "--no-html", "--jobs", str(a.jobs)]
    args += ["--chapter", ",".join(chapters)] if chapters else []
    for nb in a.notebook:
        args += ["--notebook", nb]
    notebooks = discover(root)
    try:  # the pipeline's own names (chapter/name or chapter/stem), refused before any copy or write
        named = set(pick(notebooks, a.notebook)) if a.notebook else None
    except ParameterError as e:
        raise SystemExit(str(e)) from None
    wanted = [nb for nb in notebooks if (not chapters or nb.chapter in chapters) and (named is None or nb in named)]
    if a.collect:
        return report(root, rows_of(root, wanted), len(wanted), a.record)
    ran_at = commit(root)
    if a.in_place:
        proc = subprocess.run([sys.executable, "-m", "privtrans.book.pipeline", "--root", str(root), "--force", *args],
                              cwd=root, env=dict(os.environ, PRIVTRANS_ROOT=str(root)),
                              preexec_fn=stopping.bound_to_this_process())
        return report(root, rows_of(root, wanted), len(wanted), a.record, proc.returncode == 0, ran_at)
    with pipeline_in_copy(root, "dry-run-", args, "dry run (profile dry: paper shapes, one step per loop)") as (copy, proc):
        rows = rows_of(copy, [nb for nb in discover(copy) if nb.label in {w.label for w in wanted}])
    return report(root, rows, len(wanted), a.record, proc.returncode == 0, ran_at)


if __name__ == "__main__":
    sys.exit(main())
