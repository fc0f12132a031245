"""privtrans.book.pipeline.seedflip: one chapter at another seed, a useless baseline refused, the SPU
environment found."""

import json

import pytest


def test_seedflip_compares_one_chapter_and_refuses_a_useless_baseline(tmp_path, monkeypatch, capsys):
    from privtrans.book.chapters import ParameterError
    from privtrans.book.pipeline import seedflip

    def claim(ch, cid, verdict):
        return {"chapter": ch, "id": cid, "verdict": verdict, "reason": f"r{verdict}"}

    old = {"profile": "ci", "seed": 0, "claims": [claim("merge", "a", "held"), claim("merge", "b", "contradicted"),
                                                  claim("dp_icl", "c", "held")]}
    new = {"profile": "ci", "seed": 1, "claims": [claim("merge", "a", "held"), claim("merge", "b", "not judged"),
                                                  claim("dp_icl", "c", "inconclusive")]}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(old))
    monkeypatch.setattr(seedflip, "build_at_seed", lambda root, ch, profile, seed: new)
    assert seedflip.main(["--chapter", "merge", "--against", str(path), "--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "merge/b: contradicted -> not judged" in out and "dp_icl" not in out  # the other chapter is not compared
    assert "seed 0: 1 held, 1 contradicted, 0 inconclusive, 0 not judged" in out
    with pytest.raises(SystemExit, match="seed 0 already"):
        seedflip.main(["--chapter", "merge", "--seed", "0", "--against", str(path)])
    with pytest.raises(SystemExit, match="profile 'ci', not 'smoke'"):
        seedflip.main(["--chapter", "merge", "--profile", "smoke", "--against", str(path)])
    with pytest.raises(SystemExit, match="no claim of chapter 'taft'"):
        seedflip.main(["--chapter", "taft", "--against", str(path)])
    with pytest.raises(SystemExit, match="does not exist"):
        seedflip.main(["--chapter", "merge", "--against", str(tmp_path / "none.json")])
    with pytest.raises(ParameterError, match="allowed values"):
        seedflip.main(["--chapter", "nope", "--against", str(path)])


def test_a_build_at_another_seed_finds_the_spu_environment(tmp_path, monkeypatch):
    """The temporary copy leaves .venv-spu behind (it is large): the copy's build is pointed at the
    checkout's own, under the name privtrans.mpc_attention.spu reads."""
    import subprocess

    from privtrans.book.pipeline import seedflip
    from privtrans.mpc_attention import spu

    (tmp_path / ".venv-spu" / "bin").mkdir(parents=True)
    (tmp_path / ".venv-spu" / "bin" / "python").write_text("")
    (tmp_path / "_config.yml").write_text("")
    seen = {}

    def run(cmd, cwd, env, **kwargs):
        seen.update(env)
        return subprocess.CompletedProcess(cmd, 1)

    monkeypatch.delenv(spu.ENV_VAR, raising=False)
    monkeypatch.setattr(seedflip.subprocess, "run", run)
    with pytest.raises(SystemExit, match="failed"):
        seedflip.build_at_seed(tmp_path, "mpc_attention", "smoke", 100)
    assert seen[spu.ENV_VAR] == str(tmp_path / ".venv-spu" / "bin" / "python")
