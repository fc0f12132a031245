"""privtrans.book.paths, device and imports: where a build's files are, which device runs, and which
modules a module executes (the caches' keys rest on the last)."""

import os

import pytest
import yaml

from privtrans.book import device, imports, paths


def test_the_root_is_found_from_inside_a_copy_or_named(tmp_path, monkeypatch):
    monkeypatch.delenv(paths.ROOT_ENV, raising=False)
    (tmp_path / "lib" / "privtrans").mkdir(parents=True)
    (tmp_path / "_config.yml").write_text("")
    deep = tmp_path / "notebooks" / "taft"
    deep.mkdir(parents=True)
    assert paths.repo_root(deep) == tmp_path.resolve()
    assert paths.generated_dir("taft", tmp_path) == tmp_path / "book" / "_generated" / "taft"
    assert paths.data_dir("merge", tmp_path) == tmp_path / "data" / "merge"
    monkeypatch.setenv(paths.ROOT_ENV, str(deep))
    assert paths.repo_root(tmp_path) == deep.resolve()  # the variable wins over the search


def test_the_device_follows_the_variable(monkeypatch):
    monkeypatch.setenv("PRIVTRANS_DEVICE", "cpu")
    assert device.pick_device().type == "cpu"
    monkeypatch.delenv("PRIVTRANS_DEVICE")
    import torch

    assert device.pick_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_the_import_graph_follows_imports_at_any_depth_and_names_in_strings(tmp_path):
    pkg = tmp_path / "privtrans"
    (pkg / "ch").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ch" / "__init__.py").write_text("")
    (pkg / "ch" / "a.py").write_text("from . import b\n\ndef f():\n    from privtrans.ch import c  # inside a function\n")
    (pkg / "ch" / "b.py").write_text('WORKER = "privtrans.ch.d"  # run by name in a subprocess\n')
    (pkg / "ch" / "c.py").write_text("")
    (pkg / "ch" / "d.py").write_text("")
    (pkg / "ch" / "e.py").write_text("import privtrans.ch.a\n")
    g = imports.import_graph(pkg)
    assert set(g) == {"privtrans", "privtrans.ch", "privtrans.ch.a", "privtrans.ch.b", "privtrans.ch.c",
                      "privtrans.ch.d", "privtrans.ch.e"}
    assert imports.used_modules(g, ["privtrans.ch.a"]) == {"privtrans", "privtrans.ch", "privtrans.ch.a",
                                                           "privtrans.ch.b", "privtrans.ch.c", "privtrans.ch.d"}
    # a module can be left out, and then so is what only it brings in
    assert "privtrans.ch.d" not in imports.used_modules(g, ["privtrans.ch.a"], skip=lambda m: m.endswith(".b"))
    # an edit is read again (the memo is keyed by the files' mtimes)
    (pkg / "ch" / "c.py").write_text("from . import e\n")
    os.utime(pkg / "ch" / "c.py", ns=(1, 10**18))
    assert "privtrans.ch.e" in imports.used_modules(imports.import_graph(pkg), ["privtrans.ch.a"])
    assert imports.module_name(pkg, pkg / "ch" / "__init__.py") == "privtrans.ch"


def test_yaml_is_read_as_safe_load_reads_it(tmp_path):
    text = "a: [1, 2.5, 'x']\nb: {c: null, d: true}\nwhen: 2026-01-02\n"
    (tmp_path / "f.yaml").write_text(text)
    assert paths.read_yaml(tmp_path / "f.yaml") == yaml.safe_load(text)
    (tmp_path / "bad.yaml").write_text("!!python/object:os.system {}\n")  # the safe loader refuses tags
    with pytest.raises(yaml.YAMLError):
        paths.read_yaml(tmp_path / "bad.yaml")
