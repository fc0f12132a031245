"""The run cache's keys follow what a run consumes: its code through the import graph, the settings it
reads, and the key of the artefact it starts from. Each test edits a copy of the library and watches
which keys move (no training: a key that moves is a run that is made again)."""

import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

import privtrans
from privtrans.book.runcache import RunCache, code_modules, source_fingerprint
from privtrans.mpc_attention import experiments as mpc_experiments
from privtrans.taft import experiments as taft_experiments

LIB = Path(privtrans.__file__).resolve().parent


@pytest.fixture
def lib_copy(tmp_path):
    dst = tmp_path / "privtrans"
    shutil.copytree(LIB, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def _append(path: Path, text: str = "\n# an edit\n"):
    path.write_text(path.read_text() + text)


def test_editing_taft_pretrain_reruns_its_fine_tunes(lib_copy):
    fine_tune = source_fingerprint(taft_experiments.CODE, lib_copy)
    backbone = source_fingerprint(["privtrans.taft.pretrain"], lib_copy)
    assert source_fingerprint(taft_experiments.CODE, LIB) == fine_tune  # a copy keys as the original
    _append(lib_copy / "taft" / "pretrain.py")
    assert source_fingerprint(taft_experiments.CODE, lib_copy) != fine_tune
    assert source_fingerprint(["privtrans.taft.pretrain"], lib_copy) != backbone
    # what the runs do not execute moves nothing: the readouts, the build machinery
    moved = source_fingerprint(taft_experiments.CODE, lib_copy)
    _append(lib_copy / "taft" / "readouts" / "shards.py")
    _append(lib_copy / "book" / "session.py")
    assert source_fingerprint(taft_experiments.CODE, lib_copy) == moved


def test_a_fine_tune_carries_its_backbones_key(tmp_path):
    bench = taft_experiments.Bench.__new__(taft_experiments.Bench)  # the key's parts only: no backbone is trained here
    bench.spec, bench.backbone_seed, bench.task_cfg, bench.train_per_class = (
        taft_experiments.PretrainSpec(), 0, {}, None)
    bench.cache = RunCache("taft", root=tmp_path)
    parts = bench.key_parts("toy")
    assert parts["backbone_key"] == bench.cache.key({"spec": asdict(bench.spec), "seed": 0},
                                                    ["privtrans.taft.pretrain"])
    bench.backbone_seed = 1
    assert bench.key_parts("toy")["backbone_key"] != parts["backbone_key"]


def test_a_distillation_setting_retrains_no_teacher():
    cfg = {"max_len": 16, "n_train": 64, "n_dev": 32, "vocab_size": 100, "teacher_epochs": 1, "teacher_lr": 1e-3,
           "fit_batches": 1, "epochs1": 1, "epochs2": 1, "lr1": 1e-3, "lr2": 2e-4,
           "model": {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16}}
    s = mpc_experiments.Settings.from_cfg(cfg)
    cache = RunCache("mpc_attention", root="/nonexistent")
    key = lambda parts: cache.key(parts, mpc_experiments.CODE)  # noqa: E731
    student = lambda s: mpc_experiments._student_parts("mr2", s, 0, "2quad", "quad", False)  # noqa: E731
    t0 = key(mpc_experiments._teacher_parts("mr2", s.teacher, 0))
    st0 = key(student(s))
    # the keys hold the settings as profile.yaml states them: the student's all of them, the teacher's its own
    assert student(s)["settings"] == cfg and mpc_experiments._teacher_parts("mr2", s.teacher, 0)["settings"] == \
        {k: v for k, v in cfg.items() if k not in ("epochs1", "epochs2", "lr1", "lr2")}
    for change in ({"epochs1": 2}, {"lr2": 1e-5}, {"epochs2": 3}):
        s2 = mpc_experiments.Settings.from_cfg({**cfg, **change})
        assert s2.teacher == s.teacher and key(mpc_experiments._teacher_parts("mr2", s2.teacher, 0)) == t0, change
        assert key(student(s2)) != st0, change
    # a teacher setting moves the teacher and, through its key, every student of it
    s3 = mpc_experiments.Settings.from_cfg({**cfg, "teacher_epochs": 2})
    assert key(mpc_experiments._teacher_parts("mr2", s3.teacher, 0)) != t0
    assert student(s3)["teacher_key"] != student(s)["teacher_key"]
    # a setting neither class holds is refused by name
    with pytest.raises(ValueError, match=r"unknown task settings \['epochs3'\]: allowed are"):
        mpc_experiments.Settings.from_cfg({**cfg, "epochs3": 1})


def test_editing_shared_activations_reruns_mpc_attention_runs(lib_copy):
    assert "privtrans.shared.activations" in code_modules(mpc_experiments.CODE, lib_copy)
    before = source_fingerprint(mpc_experiments.CODE, lib_copy)
    _append(lib_copy / "shared" / "activations.py")
    assert source_fingerprint(mpc_experiments.CODE, lib_copy) != before


def test_every_chapters_run_code_reaches_its_training_loop():
    from privtrans.dpformer import runs
    from privtrans.merge import train as merge_train

    assert {"privtrans.taft.finetune", "privtrans.taft.tangent", "privtrans.taft.peft",
            "privtrans.shared.seeds_together"} <= set(code_modules(taft_experiments.CODE))
    assert {"privtrans.dpformer.train", "privtrans.dpformer.sasrec", "privtrans.shared.dp.phantom"} <= \
        set(code_modules(runs.TRAINING_MODULES))
    assert {"privtrans.merge.train", "privtrans.merge.data"} <= set(code_modules(merge_train.MODEL_CODE))
    assert not [m for m in code_modules(taft_experiments.CODE) if m.startswith("privtrans.book")]
