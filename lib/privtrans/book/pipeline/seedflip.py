"""python -m privtrans.book.pipeline.seedflip --chapter CH [--seed 1] [--profile ci] [--against SUMMARY]

Which of a chapter's verdicts flip at another seed. Builds the chapter at ``--seed`` in a temporary
copy of this checkout (the build here is left alone) and compares its claims with those of
``--against`` (default: this checkout's ``_build/summary.json``, which must hold the chapter at the
same profile and another seed). Prints the flips with both reasons (``compare``), exit status 0 when
none flips. Not part of ``make test``: at ``ci`` it costs a whole chapter build.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .. import stopping
from ..chapters import check_profile, check_seed, get
from ..paths import repo_root
from .compare import print_differences

SPU_ENV = "PRIVTRANS_SPU_PYTHON"  # the MPC-attention chapter's spu module reads it (the machinery imports no chapter)
COPY_IGNORE = shutil.ignore_patterns(".venv", ".venv-*", "_build", "_executed", "_generated", ".git",
                                     "__pycache__", ".pytest_cache", "*.egg-info", ".ipynb_checkpoints")


def only(summary: dict, chapter: str) -> dict:
    """The summary cut to one chapter's claims (what ``compare`` should look at)."""
    return {**summary, "claims": [c for c in summary.get("claims", []) if c["chapter"] == chapter]}


def baseline(path: Path, chapter: str, profile: str, seed: int) -> dict:
    """The summary to compare against, refused with a clear reason when it cannot say anything."""
    if not path.is_file():
        raise SystemExit(f"no build to compare against: {path} does not exist "
                         f"(run `make chapter CH={chapter} PROFILE={profile}` first, or pass --against)")
    s = json.loads(path.read_text())
    if s.get("profile") != profile:
        raise SystemExit(f"{path} was built at profile {s.get('profile')!r}, not {profile!r}")
    if s.get("seed") == seed:
        raise SystemExit(f"{path} was built at seed {seed} already: pick another --seed")
    if not only(s, chapter)["claims"]:
        raise SystemExit(f"{path} judged no claim of chapter {chapter!r}")
    return s


@contextmanager
def pipeline_in_copy(root: Path, prefix: str, args: list[str], what: str):
    """Run the pipeline with ``args`` in a temporary copy of ``root`` (no ``_build``: cold caches);
    yields (the copy, the finished process) while the copy exists. The build in ``root`` is left alone."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(root, copy, ignore=COPY_IGNORE)
        env = dict(os.environ, PRIVTRANS_ROOT=str(copy))
        spu = root / ".venv-spu" / "bin" / "python"  # SecretFlow SPU's own environment is not copied
        if spu.is_file() and not env.get(SPU_ENV):
            env[SPU_ENV] = str(spu)
        cmd = [sys.executable, "-m", "privtrans.book.pipeline", "--root", str(copy), *args]
        print(f"{what} in {copy} ...", flush=True)
        yield copy, subprocess.run(cmd, cwd=copy, env=env, preexec_fn=stopping.bound_to_this_process())


def build_at_seed(root: Path, chapter: str | list[str], profile: str, seed: int) -> dict:
    """Build ``chapter`` (one key or a list) at ``seed`` in a temporary copy; its summary."""
    chapters = [chapter] if isinstance(chapter, str) else list(chapter)
    prefix = f"seedflip-{'-'.join(chapters) if len(chapters) < 3 else 'book'}-"
    args = ["--profile", profile, "--seed", str(seed), "--chapter", ",".join(chapters), "--no-html"]
    with pipeline_in_copy(root, prefix, args, f"building {', '.join(chapters)} at profile {profile}, seed {seed}") \
            as (copy, proc):
        summary = copy / "_build" / "summary.json"
        if proc.returncode != 0 or not summary.is_file():
            raise SystemExit(f"the build at seed {seed} failed (exit {proc.returncode}); see its output above")
        return json.loads(summary.read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m privtrans.book.pipeline.seedflip", description=__doc__.split("\n\n")[1])
    ap.add_argument("--chapter", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", default="ci")
    ap.add_argument("--against", type=Path, default=None, help="summary.json to compare with")
    ap.add_argument("--root", type=Path, default=None)
    a = ap.parse_args(argv)
    chapter, profile, seed = get(a.chapter).key, check_profile(a.profile), check_seed(a.seed)
    root = (a.root or repo_root()).resolve()
    old = baseline(a.against or root / "_build" / "summary.json", chapter, profile, seed)
    new = build_at_seed(root, chapter, profile, seed)
    old, new = only(old, chapter), only(new, chapter)
    return print_differences((f"seed {old.get('seed')}", old), (f"seed {seed}", new), "no verdict flips")


if __name__ == "__main__":
    sys.exit(main())
