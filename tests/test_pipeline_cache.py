"""privtrans.book.pipeline.cache: a notebook's key follows its source, profile, seed, data and the library
layers it imports; a damaged state file is a miss."""

import pytest

from privtrans.book.pipeline import cache
from privtrans.book.pipeline.discover import Notebook


def _tree(root):
    """A minimal library with the three layers: machinery, two mechanisms, two chapters."""
    files = {
        "lib/privtrans/__init__.py": "",
        "lib/privtrans/book/__init__.py": "",
        "lib/privtrans/book/session.py": "x = 1",
        "lib/privtrans/book/claims.py": "x = 1",
        "lib/privtrans/book/verdicts.py": "x = 1",
        "lib/privtrans/book/paper_values.py": "x = 1",
        "lib/privtrans/book/trials.py": "x = 1",
        "lib/privtrans/book/budgets.py": "x = 1",
        "lib/privtrans/book/pipeline/__init__.py": "",
        "lib/privtrans/book/pipeline/html.py": "x = 1",
        "lib/privtrans/shared/__init__.py": "",
        "lib/privtrans/shared/dp/__init__.py": "from .noise import add",
        "lib/privtrans/shared/dp/noise.py": "from privtrans.shared.models import tiny",
        "lib/privtrans/shared/models/__init__.py": "",
        "lib/privtrans/shared/models/tiny.py": "x = 1",
        "lib/privtrans/shared/mpc/__init__.py": "",
        "lib/privtrans/shared/mpc/runner.py": "PRELOAD = 'privtrans.shared.mpc.preload'",
        "lib/privtrans/shared/mpc/preload.py": "x = 1",
        "lib/privtrans/dp_icl/__init__.py": "",
        "lib/privtrans/dp_icl/run.py": "from ..shared.dp import add",
        "lib/privtrans/dp_icl/profile.yaml": "e: {smoke: {}, ci: {}, paper: {}}",
        "lib/privtrans/merge/__init__.py": "",
        "lib/privtrans/merge/run.py": "x = 1",
        "notebooks/dp_icl/01_x.md": "from privtrans.dp_icl import run",
        "notebooks/merge/01_y.md": "from privtrans.shared.mpc import runner",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return Notebook("dp_icl", root / "notebooks/dp_icl/01_x.md"), Notebook("merge", root / "notebooks/merge/01_y.md")


def test_cache_key_follows_source_profile_seed_and_data(root):
    icl, _ = _tree(root)
    k0 = cache.input_key(root, icl, "smoke", 0)
    assert k0 == cache.input_key(root, icl, "smoke", 0)
    assert k0 != cache.input_key(root, icl, "ci", 0) != cache.input_key(root, icl, "smoke", 1)
    (root / "data" / "dp_icl").mkdir(parents=True)
    (root / "data" / "dp_icl" / "paper_values.csv").write_text("c")
    k1 = cache.input_key(root, icl, "smoke", 0)
    (root / "data" / "dp_icl" / "claims.yaml").write_text("judged after the notebooks ran")
    (root / "data" / "dp_icl" / "README.md").write_text("docs")
    assert cache.input_key(root, icl, "smoke", 0) == k1 != k0, "claims and READMEs are not notebook inputs"
    icl.source.write_text("from privtrans.dp_icl import run  # edited")
    assert cache.input_key(root, icl, "smoke", 0) != k1


@pytest.mark.parametrize("edited, reruns", [
    ("lib/privtrans/dp_icl/run.py", {"dp_icl"}),             # a chapter: that chapter only
    ("lib/privtrans/dp_icl/profile.yaml", {"dp_icl"}),       # its profile table lives in its package
    ("lib/privtrans/merge/run.py", {"merge"}),
    ("lib/privtrans/shared/models/tiny.py", {"dp_icl"}),     # a mechanism: the chapters that import it,
    ("lib/privtrans/shared/mpc/preload.py", {"merge"}),      # also when imported by name at run time
    ("lib/privtrans/shared/dp/__init__.py", {"dp_icl"}),
    ("lib/privtrans/book/session.py", {"dp_icl", "merge"}),  # machinery inside a notebook: every chapter
    ("lib/privtrans/__init__.py", {"dp_icl", "merge"}),
    ("lib/privtrans/book/pipeline/html.py", set()),         # the build itself: nothing
    ("lib/privtrans/book/claims.py", set()),                  # judging claims happens after the notebooks
    ("lib/privtrans/book/verdicts.py", set()),
    ("lib/privtrans/book/paper_values.py", set()),
    ("lib/privtrans/book/trials.py", set()),
    ("lib/privtrans/book/budgets.py", set()),
])
def test_cache_key_follows_the_library_layers(root, edited, reruns):
    nbs = _tree(root)
    before = {nb.chapter: cache.input_key(root, nb, "smoke", 0) for nb in nbs}
    (root / edited).write_text((root / edited).read_text() + "\n# edited\n")
    after = {nb.chapter: cache.input_key(root, nb, "smoke", 0) for nb in nbs}
    assert {ch for ch in before if before[ch] != after[ch]} == reruns


def test_a_damaged_state_file_is_a_miss(root):
    icl, _ = _tree(root)
    cache.save_state(root, icl, {"status": "ok", "key": "k"})
    assert cache.load_state(root, icl)["key"] == "k"
    cache.state_path(root, icl).write_text('{"status": "o')
    with pytest.warns(UserWarning, match="unreadable"):
        assert cache.load_state(root, icl) is None
