import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from book_beside import BrowserWalk, ColdRerun, end_session

# One thread per process: the unit tests share the 2 cores with the smoke book (three notebooks at a
# time, which inherit this), and idle OpenMP threads spin on the busy cores. Measured on one host
# (reference_s 0.035): full pytest 1,099 s and 1,600 CPU-s at 2 threads, 765 s and 1,100 CPU-s at 1.
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
# .venv-spu too (1 GB, 7,500 files): a copy's build runs the checkout's SPU environment (pipeline()).
# lib/'s __pycache__ is copied (`make env` compiles it): the copy's kernels and MPC parties import lib/
# from the copy, and Python re-reads a cached file only while its source's mtime (kept by the copy) matches
IGNORE = shutil.ignore_patterns(".venv", ".venv-spu", "_build", "_executed", "_generated", ".git",
                                ".pytest_cache", "*.egg-info", ".ipynb_checkpoints")


@pytest.fixture
def root(tmp_path, monkeypatch):
    """An empty book root (PRIVTRANS_ROOT) for the machinery's tests: a config and an empty library."""
    (tmp_path / "_config.yml").write_text("title: t\n")
    (tmp_path / "lib" / "privtrans").mkdir(parents=True)
    monkeypatch.setenv("PRIVTRANS_ROOT", str(tmp_path))
    return tmp_path


@pytest.fixture
def rng():
    """A seeded numpy generator, fresh for each test (the DP-ICL tests draw their problems from it)."""
    import numpy as np

    return np.random.default_rng(1234)


@pytest.fixture
def dry_run():
    """The dry run switched on (privtrans.book.dry, a fresh tally) for one test, off after it; yields
    the module, whose ``report`` gives the tally."""
    from privtrans.book import dry

    dry.activate()
    try:
        yield dry
    finally:
        dry.activate(False)


@pytest.fixture
def float64():
    """Comparisons at float64 tolerance (not the model's precision); the default dtype is restored after."""
    import torch

    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


@pytest.fixture
def one_torch_thread():
    """One torch thread, as the notebooks' runs use (two on the shared 2 cores are far slower); restored after."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture
def clean_figures():
    """The book's theme changes the global rcParams: give them back, and close every figure."""
    import matplotlib
    import matplotlib.pyplot as plt

    with matplotlib.rc_context():
        yield
    plt.close("all")


@pytest.fixture(scope="module")
def cr():
    """CrypTen, initialised in this process (its one-party world, for tests of the fixed-point
    numerics: test_shared_mpc_layers.py, test_shared_mpc_secure_encdec.py); once per module, and
    ``cfg.functions.sqrt_nr_iters``, which SecureGPT raises for LayerNorm, restored after."""
    from privtrans.shared.mpc import compat

    cr = compat.crypten()
    old = cr.cfg.functions.sqrt_nr_iters
    yield cr
    cr.cfg.functions.sqrt_nr_iters = old  # SecureGPT raises it for LayerNorm


@pytest.fixture
def spu():
    """``privtrans.mpc_attention.spu``, or a skip where ``make spu``'s environment is missing (a
    failure under CI=true: there the SPU tests may not be skipped)."""
    from privtrans.mpc_attention import spu

    if not spu.python().exists():
        msg = f"no SPU environment at {spu.python()}: run `make spu`"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg + "; CI=true, so the SPU test may not be skipped")
        pytest.skip(msg)
    return spu


@pytest.fixture
def small_encoder():
    """A two-layer ``TinyEncoder`` (vocabulary 40, d_model 16) with weights away from its 0.02-std
    initialisation, in eval mode: what the SPU and back-end tests run."""
    import torch

    from privtrans.mpc_attention import encoder

    torch.manual_seed(0)
    model = encoder.TinyEncoder(encoder.EncoderConfig(vocab_size=40, d_model=16, n_heads=2, n_layers=2, d_ff=32,
                                                      max_len=12))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model.eval()


def claims_file_error(root: Path, text: str, chapter: str = "dp_icl") -> str:
    """The error the claims loader raises on ``text`` written as ``data/<chapter>/claims.yaml`` under
    ``root`` (the schema tests' one way to ask what a malformed file is refused for)."""
    from privtrans.book import claims

    d = root / "data" / chapter
    d.mkdir(parents=True, exist_ok=True)
    (d / "claims.yaml").write_text(text)
    with pytest.raises(claims.ClaimsFileError) as e:
        claims.load(chapter, root)
    return str(e.value)


def _pipeline_env(root: Path) -> dict:
    """The environment of a pipeline (or verify) process on ``root``: the checkout's SPU environment
    where ``root`` has none of its own."""
    from privtrans.mpc_attention import spu

    env = dict(os.environ, PRIVTRANS_ROOT=str(root))
    if (REPO / ".venv-spu").is_dir() and not (root / ".venv-spu").exists():
        env.setdefault(spu.ENV_VAR, str(REPO / ".venv-spu" / "bin" / "python"))
    return env


def _pipeline_command(root: Path, *args: str) -> tuple[list[str], dict]:
    return [sys.executable, "-m", "privtrans.book.pipeline", "--root", str(root), *args], _pipeline_env(root)


def pipeline(root: Path, *args: str) -> subprocess.CompletedProcess:
    cmd, env = _pipeline_command(root, *args)
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=1500)


class SmokeBook:
    """The whole book at profile smoke, building in a copy of the checkout from the end of collection
    while the unit tests run: the build leaves part of the 2 cores idle (MPC parties waiting on each
    other, a serial HTML build) and the unit tests run on one, so side by side they fill the cores.
    Measured on one host (reference_s 0.058): the unit tests 363 s and the book's tests 552 s one
    after the other, 817 s side by side. Lowering the unit tests' priority (nice 10) made it 897 s:
    they then ran alone after the build; lowering the build's instead, 826 s. Since the build got
    cheaper (preloaded kernels, a lighter appendix), the unit tests, one process, are the longer
    chain: at equal priority the build took both cores for its first 463 s and the unit tests then
    ran alone for 590 s on one (1,074 s in all); with the build at nice 10 the cores were busy to
    the end of the unit tests and pytest took 691 s (reference_s 0.045 and 0.052). Its output goes
    to files (a pipe nobody reads would fill and stall it)."""

    # three notebooks at a time (of different chapters): at one notebook at a time the 2 cores idle
    # (the 42 notebooks, one build each on 2 cores: 499 s two at a time, 325 s three)
    ARGS = ("--profile", "smoke", "--jobs", "3")
    NICE = 10  # the unit tests' one process first, the build on what is left (see above)
    TIMEOUT = 1500

    def __init__(self, base: Path):
        self.root = base / "repo"
        shutil.copytree(REPO, self.root, ignore=IGNORE)
        cmd, env = _pipeline_command(self.root, *self.ARGS)
        self.out, self.err = (open(base / f"build.{s}", "w+") for s in ("stdout", "stderr"))
        # its own session: stop() ends the pipeline, which ends every kernel and worker it started
        self.proc = subprocess.Popen(cmd, cwd=self.root, env=env, stdout=self.out, stderr=self.err,
                                     text=True, start_new_session=True, preexec_fn=lambda: os.nice(self.NICE))
        self.cmd = cmd

    def wait(self) -> subprocess.CompletedProcess:
        try:
            rc = self.proc.wait(timeout=self.TIMEOUT)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        self.out.seek(0)
        self.err.seek(0)
        return subprocess.CompletedProcess(self.cmd, rc, self.out.read(), self.err.read())

    def stop(self):
        """SIGTERM to a build still running (pytest stopped early): the pipeline ends its kernels and
        their workers (privtrans.book.stopping), then exits."""
        end_session(self.proc)
        self.out.close()
        self.err.close()


_SMOKE_BOOK = pytest.StashKey[SmokeBook]()
# the checks that run beside the book's tests (book_beside.py): the session fixtures that start them
BESIDE = ("browsed", "verified")
_BESIDE_USED = pytest.StashKey[list]()


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: only a run that has book tests builds the book
def pytest_collection_modifyitems(config, items):
    """The tests that read the smoke book run last, and its build starts now, beside the unit tests."""
    reads_book = [item for item in items if "book" in getattr(item, "fixturenames", ())]
    if not reads_book or config.option.collectonly:
        return
    later = set(reads_book)
    items[:] = [item for item in items if item not in later] + reads_book
    config.stash[_BESIDE_USED] = [name for name in BESIDE if any(name in item.fixturenames for item in reads_book)]
    # pytest's own temporary root (the last three sessions kept), as tmp_path_factory gives fixtures
    config.stash[_SMOKE_BOOK] = SmokeBook(config._tmp_path_factory.mktemp("book"))


def pytest_unconfigure(config):
    build = config.stash.get(_SMOKE_BOOK, None)
    if build is not None:
        build.stop()


@pytest.fixture(scope="session")
def book(request):
    """The whole book at profile smoke, built once per session in a copy of the checkout (test_book,
    test_pipeline_verify and the browser test share it): (root, the build's CompletedProcess)."""
    build = request.config.stash.get(_SMOKE_BOOK, None)
    if build is None:  # collected some other way: build it now
        build = request.config.stash[_SMOKE_BOOK] = SmokeBook(request.config._tmp_path_factory.mktemp("book"))
    proc = build.wait()
    print(proc.stdout[-6000:], proc.stderr[-6000:])
    assert proc.returncode == 0, f"smoke build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return build.root, proc


@pytest.fixture(autouse=True)
def _beside_the_book(request):
    """At the first test that reads the book, start the checks that run beside the rest
    (book_beside.py) and that this session's tests use."""
    if "book" in request.fixturenames:
        for name in request.config.stash.get(_BESIDE_USED, ()):
            request.getfixturevalue(name)


@pytest.fixture(scope="session")
def served_book(book, tmp_path_factory):
    """A copy of the book's HTML, served over http://127.0.0.1, that the browser will load
    (book_beside.BrowserWalk); the internal-link test reads the copy, with no browser."""
    walk = BrowserWalk(book[0], tmp_path_factory.mktemp("browser"), REPO / "_build" / "screenshots")
    yield walk
    walk.close()


@pytest.fixture(scope="session")
def browsed(served_book):
    """The browser's walk of every page of the served copy, and its screenshots, started in a thread
    of their own; screenshots go to _build/screenshots/ of the checkout under test."""
    return served_book.start()


@pytest.fixture(scope="session")
def verified(book, tmp_path_factory):
    """verify's cold re-run of 3 dp_icl notebooks of a copy of the book, one value tampered with
    (book_beside.ColdRerun), in a process of its own."""
    rerun = ColdRerun(book[0], tmp_path_factory.mktemp("verify"), _pipeline_env)
    yield rerun
    rerun.close()
