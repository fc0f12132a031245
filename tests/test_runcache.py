"""The one run cache: keys follow everything that makes an artefact, writes are all-or-nothing."""

import sys

import pytest

from privtrans.book import runcache


def test_fingerprint_is_canonical_and_sensitive():
    assert runcache.fingerprint({"a": 1, "b": [1, 2]}) == runcache.fingerprint({"b": [1, 2], "a": 1})
    assert runcache.fingerprint({"a": 1}) != runcache.fingerprint({"a": 2})
    assert runcache.fingerprint({"a": 1}, "code1") != runcache.fingerprint({"a": 1}, "code2")


def test_source_fingerprint_follows_the_code(tmp_path, monkeypatch):
    (tmp_path / "maker_mod.py").write_text("def make(): return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    k0 = runcache.source_fingerprint(["maker_mod"])
    (tmp_path / "maker_mod.py").write_text("def make(): return 2\n")
    assert runcache.source_fingerprint(["maker_mod"]) != k0
    sys.modules.pop("maker_mod", None)


def test_get_or_make_makes_once_and_keys_on_parts_and_code(tmp_path):
    cache, calls = runcache.RunCache("t", root=tmp_path), []

    def make():
        calls.append(1)
        return {"w": [1.0, 2.0]}

    a, hit_a = cache.get_or_make("model", {"seed": 0}, make, code=[runcache])
    b, hit_b = cache.get_or_make("model", {"seed": 0}, make, code=[runcache])
    c, hit_c = cache.get_or_make("model", {"seed": 1}, make, code=[runcache])
    assert (hit_a, hit_b, hit_c) == (False, True, False) and len(calls) == 2 and a == b == c
    assert (cache.hits, cache.misses) == (1, 2)
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".json", ".pt", ".pt"]


def test_a_damaged_entry_is_a_miss(tmp_path):
    cache = runcache.RunCache("t", root=tmp_path)
    key = cache.key({"seed": 0})
    cache.put("model", key, {"w": 1})
    cache.path("model", key).write_bytes(b"not a torch file")
    with pytest.warns(UserWarning, match="unreadable"):
        assert cache.get("model", key) is None
    with pytest.warns(UserWarning, match="unreadable"):
        obj, hit = cache.get_or_make("model", {"seed": 0}, lambda: {"w": 2})
    assert obj == {"w": 2} and not hit and cache.get("model", key) == {"w": 2}


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    p = tmp_path / "f.json"
    runcache.atomic_write_text(p, "old")

    def boom(f):
        f.write(b"half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        runcache.atomic_write(p, boom)
    assert p.read_text() == "old" and [x.name for x in tmp_path.iterdir()] == ["f.json"]


def test_bad_kind_is_refused(tmp_path):
    with pytest.raises(ValueError, match="kind"):
        runcache.RunCache("t", root=tmp_path).path("../x", "k")
