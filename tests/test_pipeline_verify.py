"""privtrans.book.pipeline.verify: a cached book's values equal a cold re-run's (make verify)."""

import json

import pytest

from privtrans.book.pipeline import verify

from book_beside import first_value_leaf


def test_compare_finds_a_changed_missing_or_extra_value_and_lists_wall_clock_ones():
    old = {"acc": {"taft": [0.91, 0.88]}, "cached_speedup": 22.2, "seconds": 3.0, "n": 5, "label": "a"}
    assert verify.compare(old, json.loads(json.dumps(old))) == ([], ["cached_speedup", "seconds"])
    new = {**old, "acc": {"taft": [0.91, 0.8800001]}, "cached_speedup": 9.0, "extra": 1}
    del new["label"]
    diffs, timing = verify.compare(old, new)
    assert [d.split(":")[0] for d in diffs] == ["acc.taft[1]", "extra", "label"]
    assert timing == ["cached_speedup", "seconds"]  # machine load: listed, never failed
    assert verify.compare({"x": float("nan")}, {"x": float("nan")}) == ([], [])
    assert verify.compare({"x": True}, {"x": 1})[0]  # a flag is not a number


@pytest.mark.parametrize("path, timing", [("ratio.train b=1 cached", True), ("train_ratio_b1_images", True), ("lan_seconds", True), ("enc_time_share", True),
                                          ("fig4.speedup[512]", True), ("wall_s", True),
                                          ("accuracy", False), ("rounds", False), ("sigma", False),
                                          ("mr2.steps", False), ("fall_ratio.0.2", False), ("merge_round_ratio", False),
                                          ("paper_setting_near_within.mean", False)])
def test_what_counts_as_wall_clock(path, timing):
    assert bool(verify.TIMING.search(path)) is timing


def test_the_first_value_leaf_is_found_under_keys_with_dots():
    values = {"seconds": 2.0, "by_eps": {"ε=0.1": [1, {"mse": 0.5}]}, "later": 3.0}
    head, key, name = first_value_leaf(values)
    assert head is values["by_eps"]["ε=0.1"][1] and key == "mse" and name == "by_eps.ε=0.1[1].mse"
    assert first_value_leaf({"n": 3, "label": "a"}) is None


@pytest.mark.book
def test_a_cold_rerun_of_a_cached_notebook_records_the_same_values(verified, capsys):
    # `make verify CH=dp_icl` on a copy of the book, one value of its fastest notebook tampered with,
    # run beside the book's other tests (conftest's ``verified``, book_beside.ColdRerun): that value is
    # named, every other value of every notebook equals the cached build's
    rc, out = verified.result()
    root, chapter, name = verified.root, verified.chosen, verified.fastest
    assert rc == 1 and "1 notebook(s) differ from the cached build" in out, out
    lines = {n: next(line for line in out.splitlines() if line.startswith(f"dp_icl/{n}: ")) for n in chapter}
    assert all(", 0 differ" in lines[n] for n in chapter if n != name), out
    assert ", 1 differ" in lines[name] and f"    {verified.changed}: cached " in out, out
    # a notebook whose source changed since it ran is stale: named, not re-run, not passed
    summary = json.loads((root / "_build" / "summary.json").read_text())
    nb = f"dp_icl/{name}"
    src = root / "notebooks" / "dp_icl" / f"{verified.fastest_stem}.md"
    text = src.read_text()
    try:
        src.write_text(text + "\n<!-- edited after the build -->\n")
        assert verify.main(["--root", str(root), "--notebook", nb]) == 1
        out = capsys.readouterr().out
        assert f"{nb}: stale" in out and "nothing verified" in out and "re-running" not in out
    finally:
        src.write_text(text)
    assert verify.stale(root, [nb], summary["profile"], summary["seed"]) == []
