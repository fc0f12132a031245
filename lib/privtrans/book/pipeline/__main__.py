"""python -m privtrans.book.pipeline [--profile ci] [--seed 0] [--chapter CH ...] [--notebook CH/NAME ...] [--jobs N] [--no-html] [--force]

Runs the notebooks (papermill, cached), judges the claims, writes _build/summary.json and the
generated pages, then builds the HTML book. Exit status 0 only if every notebook ran and the book
built; a failure names the notebook and cell and leaves the previous _build/html in place.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from ..chapters import KEYS as CHAPTERS
from ..chapters import DRY, RUNNABLE, ParameterError, check_profile, check_seed
from ..paths import ROOT_ENV, repo_root
from .. import claims, stopping
from . import build_log, cache, calibration, execute, html, kernel_forks, lock, report, schedule, warm
from .discover import discover, pick


def parse(argv):
    ap = argparse.ArgumentParser(prog="python -m privtrans.book.pipeline", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default=os.environ.get("PROFILE") or "ci", help=f"one of {', '.join(RUNNABLE)}")
    ap.add_argument("--seed", default=os.environ.get("SEED") or "0")
    ap.add_argument("--chapter", action="append", default=[],
                    help=f"run only these chapters (repeat or comma-separate): {', '.join(CHAPTERS)}")
    ap.add_argument("--notebook", action="append", default=[],
                    help="run only these notebooks, as chapter/name (e.g. taft/cost or taft/06_cost; repeatable)")
    ap.add_argument("--no-html", action="store_true", help="run notebooks and judge claims, skip Jupyter Book")
    ap.add_argument("--force", action="store_true", help="ignore the cache and re-run")
    ap.add_argument("--jobs", default="1",
                    help="notebooks of different chapters run at once (default 1). More than one makes the "
                         "recorded seconds those of notebooks sharing the machine: the test build's choice, "
                         "not the timed book's")
    ap.add_argument("--root", default=None, help="the checkout to build (default: found from the cwd)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    try:
        profile = check_profile(args.profile)
        try:
            seed = check_seed(int(args.seed))
        except ValueError:
            raise ParameterError(f"seed must be a non-negative int, got {args.seed!r}") from None
        try:
            jobs = int(args.jobs)
        except ValueError:
            jobs = 0
        if jobs < 1:
            raise ParameterError(f"--jobs must be a positive int, got {args.jobs!r}")
        chapters = [c for arg in args.chapter for c in arg.split(",") if c]
        bad = [c for c in chapters if c not in CHAPTERS]
        if bad:
            raise ParameterError(f"unknown chapter(s) {bad}: allowed values are {', '.join(CHAPTERS)}")
    except ParameterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    root = Path(args.root).resolve() if args.root else repo_root()
    os.environ[ROOT_ENV] = str(root)
    all_nbs = discover(root)
    todo = [nb for nb in all_nbs if not chapters or nb.chapter in chapters]
    if args.notebook:
        try:
            picked = set(pick(all_nbs, args.notebook))
        except ParameterError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        todo = [nb for nb in todo if nb in picked]
    execute.remove_stale(root, all_nbs)

    # SIGTERM and SIGHUP stop the build as Ctrl-C does, through the same cleanup: every kernel and
    # worker it started ends with it (book.stopping)
    with stopping.raise_on_signals():
        try:
            with lock.build_lock(root):
                t_start = time.perf_counter()
                executed = run_all(root, todo, profile, seed, args.force, jobs)
                return finish(root, all_nbs, profile, seed, args.no_html, t_start, executed)
        except lock.Busy as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except build_log.Interrupted as e:
            print(f"\n{e}", file=sys.stderr)
            return 128 + (stopping.received() or signal.SIGINT)
        except KeyboardInterrupt:
            print("\ninterrupted between notebooks: every finished notebook is kept; the last good HTML "
                  "book in _build/html is unchanged", file=sys.stderr)
            return 128 + (stopping.received() or signal.SIGINT)


def run_all(root: Path, todo, profile: str, seed: int, force: bool, jobs: int = 1) -> int:
    """Run the notebooks whose inputs changed, one line each with i/n, time and an estimate; returns
    how many ran (0: every one was cached)."""
    bar = build_log.Progress(todo, [(cache.load_state(root, nb) or {}).get("seconds") for nb in todo], jobs=jobs)
    print(f"Running {len(todo)} notebook(s) at profile {profile}, seed {seed}"
          + (f", up to {jobs} at a time (one per chapter)" if jobs > 1 else ""), flush=True)
    stale = []
    for nb in todo:
        key = cache.input_key(root, nb, profile, seed)
        old = cache.load_state(root, nb)
        if (not force and old and old.get("key") == key and old.get("status") == "ok"
                and execute.papermill_problem(execute.executed_path(root, nb)) is None):
            bar.done(nb, old["seconds"], "ok (cached)")
            continue
        stale.append((nb, key))
    forks = kernel_forks.worth_it(len(stale), jobs)
    try:
        if jobs == 1:
            kernel_forks.use(forks)
            run_one_by_one(root, stale, profile, seed, bar)
        else:
            run_side_by_side(root, stale, profile, seed, jobs, bar, forks)
    finally:
        kernel_forks.use(None)
        kernel_forks.close_all()
    return len(stale)


def run_one_by_one(root: Path, stale, profile: str, seed: int, bar: build_log.Progress):
    """Each notebook in turn, the next one's kernel warming on an idle core meanwhile (``warm``)."""
    warming = warm.enabled()
    this = nxt = None  # the first notebook starts its own kernel: a warm one would have nothing to wait for
    try:
        for i, (nb, key) in enumerate(stale):
            this, nxt = nxt, None
            if warming and i + 1 < len(stale):
                nxt = execute.warm_kernel(root, stale[i + 1][0])
            with bar.running(nb):
                res = execute.run(root, nb, profile, seed, warm=this)
            record(root, nb, profile, seed, key, res, 1, bar)
    except BaseException:
        with stopping.held():  # interrupted: no kernel outlives the build, and none waits for its warm-up
            for kernel in (this, nxt):
                if kernel is not None:
                    kernel.close(now=True)
        raise


def run_side_by_side(root: Path, stale, profile: str, seed: int, jobs: int, bar: build_log.Progress,
                     forks: bool = False):
    """Up to ``jobs`` notebooks at once, each in its own worker process (``execute.run`` sets the
    kernel's environment in ``os.environ``, so they cannot share one); one chapter's notebooks in
    order (``schedule.ChapterQueue``)."""
    keys = dict(stale)
    queue = schedule.ChapterQueue([nb for nb, _ in stale], [bar.previous.get(nb) for nb, _ in stale])
    running = {}
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                             initializer=execute.worker_init, initargs=(os.getpid(), forks)) as pool:
        try:
            while running or not queue.empty():
                while len(running) < jobs and (nb := queue.next()) is not None:
                    bar.start_line(nb)
                    running[pool.submit(execute.run_in_worker, root, nb, profile, seed)] = nb
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    nb = running.pop(fut)
                    queue.finished(nb)
                    try:
                        res = fut.result()
                    except Exception as e:  # noqa: BLE001 - a worker that died: still one line naming the notebook
                        res = execute.Outcome("failed", 0.0, f"{nb.source.relative_to(root)}: its worker process "
                                                             f"died: {type(e).__name__}: {e}")
                    record(root, nb, profile, seed, keys[nb], res, jobs, bar)
        except KeyboardInterrupt:
            with stopping.held():
                pool.shutdown(wait=False, cancel_futures=True)
                # each worker's running notebook ends its kernel and that kernel's workers (execute.run)
                stopping.end_processes(multiprocessing.active_children())
            raise build_log.Interrupted(bar.interrupted_message([nb.label for nb in running.values()])) from None


def record(root: Path, nb, profile: str, seed: int, key: str, res: execute.Outcome, jobs: int, bar):
    """Keep a notebook's state (its key only when it ran clean) and print its line."""
    state = {"chapter": nb.chapter, "notebook": nb.stem, "profile": profile, "seed": seed,
             "seconds": round(res.seconds, 2), "status": res.status, "error": res.error,
             "key": key if res.status == "ok" else None, "jobs": jobs, "warm_kernel": res.warm_kernel}
    cache.save_state(root, nb, state)
    bar.done(nb, res.seconds, res.status)
    if res.error:
        print(f"    {res.error}", flush=True)


def finish(root: Path, all_nbs, profile: str, seed: int, no_html: bool, t_start: float, executed: int) -> int:
    """Judge the claims, write the summary and pages, build the HTML when every notebook is good.
    ``executed``: how many notebooks this invocation ran (the machine's speed is measured only then)."""
    rows = []
    for nb in all_nbs:
        st = cache.load_state(root, nb) or {"chapter": nb.chapter, "notebook": nb.stem, "profile": profile,
                                             "seed": seed, "seconds": 0.0, "status": "not run", "error": None}
        problem = execute.papermill_problem(execute.executed_path(root, nb)) if st["status"] == "ok" else None
        if problem:
            st = dict(st, status="failed", error=f"{nb.label}: {problem}")
        # jobs: how many notebooks shared the machine while this one ran (its seconds are its own only at 1);
        # warm_kernel: its kernel was started and its imports loaded before its turn (pipeline/warm.py)
        rows.append({**{k: st.get(k) for k in ("chapter", "notebook", "profile", "seed", "seconds", "status", "error")},
                     "jobs": st.get("jobs", 1), "warm_kernel": bool(st.get("warm_kernel"))})
    ran = {(nb.chapter, nb.name) for nb, r in zip(all_nbs, rows) if r["status"] == "ok"}
    if profile == DRY:  # one step per loop (privtrans.book.dry): no claim is judged on such numbers
        ran = set()
    claim_rows = report.judge_claims(root, profile, ran, seed)
    # this machine's speed, so that two builds' minutes can be compared (pipeline/calibration.py)
    summary = report.write_summary(root, profile, seed, rows, claim_rows, calibration.for_build(root, executed))

    failed = [r for r in rows if r["status"] == "failed"]
    not_run = [r for r in rows if r["status"] == "not run"]
    t = claims.tally(claim_rows)
    rep, chk = t["reproduction"], t["check"]
    print(f"\n{len(rows) - len(failed) - len(not_run)}/{len(rows)} notebooks ok in {time.perf_counter() - t_start:.0f}s; "
          f"the paper's claims: {claims.counts_line(rep)}; "
          f"checks: {chk['held']} of {chk['total']} held; summary: {summary.relative_to(root)}")
    if failed:
        for r in failed:
            print(f"  FAILED {r['chapter']}/{r['notebook']}: {r['error']}", file=sys.stderr)
        print("not building the HTML book: the last good book in _build/html is left in place", file=sys.stderr)
        return 1
    if no_html:
        return 0
    if not_run:
        # chapter pages link their notebooks and figures: a book with holes would not build with -W
        print(f"HTML book not built: {len(not_run)} notebook(s) have never run in this checkout "
              f"({', '.join(r['chapter'] + '/' + r['notebook'] for r in not_run)}); "
              "run `make book` once, after which `make chapter` rebuilds the book")
        return 0
    print("Building the HTML book (jupyter-book -W -n --keep-going) ...", flush=True)
    ok, msg = html.build(root, all_nbs)
    print(msg, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
