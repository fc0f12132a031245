"""privtrans.book.pipeline.verify: a cached book's values equal a cold re-run's (make verify)."""

import json

import pytest

from privtrans.book.pipeline import verify


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


def _first_value_leaf(node, path=""):
    """(container, key, flattened name) of the first float that is not a wall-clock value, walked in the order and with
    the names of ``verify.flatten`` (whose dotted names cannot be split back: keys such as "ε=0.1" hold dots)."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        name = (f"{path}.{k}" if path else str(k)) if isinstance(node, dict) else f"{path}[{k}]"
        if isinstance(v, float) and not isinstance(v, bool) and not verify.TIMING.search(name):
            return node, k, name
        found = _first_value_leaf(v, name)
        if found is not None:
            return found
    return None


def test_the_first_value_leaf_is_found_under_keys_with_dots():
    values = {"seconds": 2.0, "by_eps": {"ε=0.1": [1, {"mse": 0.5}]}, "later": 3.0}
    head, key, name = _first_value_leaf(values)
    assert head is values["by_eps"]["ε=0.1"][1] and key == "mse" and name == "by_eps.ε=0.1[1].mse"
    assert _first_value_leaf({"n": 3, "label": "a"}) is None


@pytest.mark.book
def test_a_cold_rerun_of_a_cached_notebook_records_the_same_values(book, capsys):
    root, _ = book
    summary = json.loads((root / "_build" / "summary.json").read_text())
    # make verify as `make verify CH=dp_icl` runs it: 3 notebooks drawn from the chapter (its default; the
    # whole chapter, 8 notebooks, cost 93 s of `make test`, a re-run being mostly kernel starts and
    # imports), cold in one temporary copy, with one cached value of the fastest of them changed
    # beforehand to a value the re-run cannot give: that value is named, every other value of every
    # notebook equals the cached build's (one cold re-run serves both checks: it is most of this test's
    # time). dp_icl records no wall-clock value under a name the check cannot tell (taft/cost's ratios were one)
    chapter = [x.split("/")[1] for x in verify.choose(root, "dp_icl", [], 3, 0)]
    seconds = {r["notebook"].split("_", 1)[1]: r["seconds"] for r in summary["notebooks"] if r["chapter"] == "dp_icl"}
    assert len(chapter) == 3 and set(chapter) <= set(seconds)
    name = min(chapter, key=seconds.get)
    fastest = next(r for r in summary["notebooks"] if r["chapter"] == "dp_icl" and r["notebook"].endswith("_" + name))
    nb = f"dp_icl/{name}"
    f = root / "book" / "_generated" / fastest["chapter"] / name / "results.json"
    good = f.read_text()
    try:
        tampered = json.loads(good)
        head, last, changed = _first_value_leaf(tampered["values"])
        head[last] += 1.0
        f.write_text(json.dumps(tampered))
        rc = verify.main(["--root", str(root), "--chapter", "dp_icl", "--n", "3"])
    finally:
        f.write_text(good)
    out = capsys.readouterr().out
    assert rc == 1 and "1 notebook(s) differ from the cached build" in out, out
    lines = {n: next(line for line in out.splitlines() if line.startswith(f"dp_icl/{n}: ")) for n in chapter}
    assert all(", 0 differ" in lines[n] for n in chapter if n != name), out
    assert ", 1 differ" in lines[name] and f"    {changed}: cached " in out, out
    # a notebook whose source changed since it ran is stale: named, not re-run, not passed
    src = next((root / "notebooks" / fastest["chapter"]).glob(f"{fastest['notebook']}.md"))
    text = src.read_text()
    try:
        src.write_text(text + "\n<!-- edited after the build -->\n")
        assert verify.main(["--root", str(root), "--notebook", nb]) == 1
        out = capsys.readouterr().out
        assert f"{nb}: stale" in out and "nothing verified" in out and "re-running" not in out
    finally:
        src.write_text(text)
    assert verify.stale(root, [nb], summary["profile"], summary["seed"]) == []
