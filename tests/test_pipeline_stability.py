"""``make stability`` (privtrans.book.pipeline.stability): the stability summary replaces exactly the
chapters just built and keeps the others only when seed and profile match; ``main`` compares the
chapters it built with this checkout's ``_build/summary.json`` and calls a defect exactly a
reproduction that is held at one seed set and contradicted at the other. The build itself is faked
(``build_at_seed``): no book is built here."""

import json

import pytest

from privtrans.book.chapters import KEYS, ParameterError
from privtrans.book.pipeline import stability as stability
from privtrans.book.pipeline.report import stability_path


def claim(chapter, cid, verdict, kind="reproduction", reason=None):
    return {"chapter": chapter, "id": cid, "kind": kind, "verdict": verdict,
            "reason": reason or f"{verdict}: {chapter}/{cid}"}


def summary(seed, claims, profile="ci", **extra):
    return {"profile": profile, "seed": seed, "built": f"build at {seed}", "claims": claims, **extra}


def ids(s):
    return [(c["chapter"], c["id"], c["verdict"]) for c in s["claims"]]


# ----------------------------------------------------------------------------------------- merged

OLD = summary(100, [claim("taft", "a", "held"), claim("taft", "b", "held"), claim("merge", "m", "held"),
                    claim("dp_icl", "d", "contradicted")], notebooks=["old"])
NEW = summary(100, [claim("taft", "a", "contradicted"), claim("merge", "m", "inconclusive"),
                    claim("dpformer", "p", "held")], notebooks=["new"])


def test_merged_without_a_file_is_the_new_build_cut_to_its_chapters(tmp_path):
    out = stability.merged(tmp_path / "absent.json", NEW, ["taft", "merge"])
    assert ids(out) == [("taft", "a", "contradicted"), ("merge", "m", "inconclusive")]
    assert {k: out[k] for k in ("profile", "seed", "built", "notebooks")} == \
        {"profile": "ci", "seed": 100, "built": "build at 100", "notebooks": ["new"]}


def test_merged_replaces_the_chapters_built_and_keeps_the_others(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(OLD))
    out = stability.merged(path, NEW, ["taft"])
    # taft: the new build's claims only (old taft/b is gone: the chapter was rebuilt without it);
    # merge and dp_icl: the old ones, even where the new summary has merge claims (not asked for);
    # dpformer: not built and not in the old file, so absent
    assert ids(out) == [("merge", "m", "held"), ("dp_icl", "d", "contradicted"), ("taft", "a", "contradicted")]
    assert out["seed"] == 100 and out["built"] == "build at 100" and out["notebooks"] == ["new"]
    assert json.loads(path.read_text()) == OLD, "merged only computes; main writes"
    out = stability.merged(path, NEW, ["taft", "merge", "dpformer"])
    assert ids(out) == [("dp_icl", "d", "contradicted"), ("taft", "a", "contradicted"),
                        ("merge", "m", "inconclusive"), ("dpformer", "p", "held")]


@pytest.mark.parametrize("other", [{"seed": 7}, {"profile": "smoke"}], ids=["another-seed", "another-profile"])
def test_merged_drops_a_file_of_another_seed_or_profile(tmp_path, other):
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({**OLD, **other}))
    out = stability.merged(path, NEW, ["taft"])
    assert ids(out) == [("taft", "a", "contradicted")]


# ------------------------------------------------------------------------------------------- main

BASE = summary(0, [
    claim("taft", "flip", "held"),            # -> contradicted: a defect
    claim("taft", "back", "contradicted"),    # -> held: a defect too (held at one seed set only)
    claim("taft", "check", "held", kind="check"),  # -> contradicted, but a check: no defect
    claim("taft", "soft", "held"),            # -> inconclusive: differs, no defect
    claim("taft", "same", "held"),            # -> held: no line
    claim("taft", "gone", "held"),            # not in the stability build
    claim("merge", "other", "held"),          # another chapter, not rebuilt: not compared
])
STAB = summary(100, [
    claim("taft", "flip", "contradicted"), claim("taft", "back", "held"),
    claim("taft", "check", "contradicted", kind="check"), claim("taft", "soft", "inconclusive"),
    claim("taft", "same", "held"), claim("taft", "new", "held"),
])


class Checkout:
    """A fake checkout in ``path``; ``build_at_seed`` records its calls and returns ``result``."""

    def __init__(self, path):
        self.path, self.builds, self.result = path, [], STAB

    def build_at_seed(self, root, chapters, profile, seed):
        self.builds.append((root, list(chapters), profile, seed))
        return json.loads(json.dumps(self.result))

    def main(self, *args):
        return stability.main(["--root", str(self.path), *args])

    def stability(self):
        return json.loads(stability_path(self.path).read_text())

    def write_base(self, s=BASE):
        (self.path / "_build").mkdir(exist_ok=True)
        (self.path / "_build" / "summary.json").write_text(json.dumps(s))


@pytest.fixture
def repo(tmp_path, monkeypatch):
    c = Checkout(tmp_path)
    monkeypatch.setattr(stability, "build_at_seed", c.build_at_seed)
    return c


def test_main_reports_differences_and_defects_of_the_chapters_built(repo, capsys):
    repo.write_base()
    repo.main("--chapter", "taft")
    out = capsys.readouterr().out
    assert repo.builds == [(repo.path.resolve(), ["taft"], "ci", stability.DEFAULT_SEED)]
    assert "stability build at seed 100: 3 held, 2 contradicted, 1 inconclusive, 0 not judged (profile ci, seed 100)" \
        in out and "kept in _build/stability/summary.json" in out
    diff = {ln.split(":")[0] for ln in out.splitlines() if ln.startswith("taft/") or ln.startswith("merge/")}
    assert diff == {"taft/flip", "taft/back", "taft/check", "taft/soft", "taft/gone", "taft/new"}
    assert "taft/flip: held -> contradicted\n    old: held: taft/flip\n    new: contradicted: taft/flip" in out
    assert "taft/gone: only in the old summary" in out and "taft/new: only in the new summary" in out
    defects = sorted(ln for ln in out.splitlines() if ln.startswith("DEFECT"))
    assert defects == ["DEFECT taft/back: held at one seed set, contradicted at the other",
                       "DEFECT taft/flip: held at one seed set, contradicted at the other"]
    assert "merge/other" not in out
    assert repo.stability() == STAB


def test_main_reports_nothing_when_no_verdict_differs(repo, capsys):
    repo.write_base(summary(0, [claim("taft", "a", "held"), claim("taft", "b", "contradicted", kind="check"),
                                claim("merge", "x", "held")], profile="smoke"))
    repo.result = summary(5, [claim("taft", "a", "held"), claim("taft", "b", "contradicted", kind="check")],
                          profile="smoke")
    assert repo.main("--chapter", "taft", "--seed", "5", "--profile", "smoke") == 0
    out = capsys.readouterr().out
    assert repo.builds == [(repo.path.resolve(), ["taft"], "smoke", 5)]
    assert "no verdict differs from the book's build" in out and "DEFECT" not in out


def test_main_compares_nothing_with_a_book_of_another_profile(repo, capsys):
    """A book built at smoke says nothing about verdicts at ci: no differences, no defects."""
    repo.write_base(summary(0, [claim("taft", "flip", "contradicted")], profile="smoke"))
    assert repo.main("--chapter", "taft") == 0
    out = capsys.readouterr().out
    assert "at profile 'smoke', this one at 'ci': verdicts not compared" in out
    assert "DEFECT" not in out and "taft/flip" not in out
    assert repo.stability() == {**STAB, "claims": [c for c in STAB["claims"] if c["chapter"] == "taft"]}


def test_main_refuses_the_books_own_seed_before_building(repo):
    repo.write_base(summary(100, [claim("taft", "a", "held")]))
    with pytest.raises(SystemExit, match="needs a disjoint seed set"):
        repo.main("--chapter", "taft")
    assert repo.builds == []


def test_main_without_a_book_build_keeps_the_summary_and_says_so(repo, capsys):
    assert repo.main() == 0
    out = capsys.readouterr().out
    assert repo.builds[0][1] == list(KEYS), "no --chapter: every chapter"
    assert "no build of this checkout to compare with: run `make book`" in out and "DEFECT" not in out
    assert repo.stability()["seed"] == 100


def test_successive_runs_accumulate_chapters_at_one_seed_and_restart_at_another(repo):
    repo.result = summary(100, [claim("taft", "a", "held"), claim("merge", "m", "held")])
    repo.main("--chapter", "taft")
    assert ids(repo.stability()) == [("taft", "a", "held")]
    repo.result = summary(100, [claim("merge", "m", "contradicted")])
    repo.main("--chapter", "merge")
    assert ids(repo.stability()) == [("taft", "a", "held"), ("merge", "m", "contradicted")]
    repo.result = summary(200, [claim("merge", "m", "held")])
    repo.main("--chapter", "merge", "--seed", "200")
    assert ids(repo.stability()) == [("merge", "m", "held")]
    # comma-separated and repeated --chapter
    repo.main("--chapter", "taft,merge", "--chapter", "dp_icl")
    assert repo.builds[-1][1] == ["taft", "merge", "dp_icl"]


@pytest.mark.parametrize("args, match", [
    (["--chapter", "tafts"], "unknown chapter 'tafts': allowed values are dpformer, taft, merge, dp_icl, mpc_attention"),
    (["--chapter", "taft,nope"], "unknown chapter 'nope': allowed values are dpformer, taft, merge, dp_icl, mpc_attention"),
    (["--profile", "quick"], "unknown profile 'quick': allowed values are smoke, ci, paper"),
    (["--seed", "-1"], "seed must be a non-negative int"),
])
def test_bad_parameters_are_refused_before_any_build(repo, args, match):
    with pytest.raises(ParameterError, match=match):
        repo.main(*args)
    assert repo.builds == [] and not stability_path(repo.path).exists()
