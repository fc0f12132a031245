"""CrypTen 0.4.1 imports and computes correctly on this torch, in one process and as 2 parties.

Tolerances: CrypTen encodes reals in fixed point with 16 fractional bits (step 1.5e-5) and
approximates exp (limit approximation, 8 squarings), reciprocal (Newton, 10 iterations) and the
softmax max (secure comparisons); the bounds below are a few times what these give on the inputs
used, and far below what a broken shim or protocol gives (errors of order 1 or more).
"""

import copy
import sys

import pytest
import torch

from privtrans.shared.mpc import compat, parties, runner

TOL = {"matmul": 2e-3, "softmax": 5e-3, "exp_rel": 2e-2, "reciprocal_rel": 1e-2}


def test_shim_registers_only_the_registration_stub():
    compat.apply_shims()
    assert "torch.onnx._internal.registration" in sys.modules
    assert hasattr(sys.modules["torch.onnx._internal.registration"], "registry")
    # a stubbed symbolic_registry would switch CrypTen onto a path that needs its internals
    assert "torch.onnx.symbolic_registry" not in sys.modules
    cr = compat.module()
    assert cr.__version__ == "0.4.1"
    from crypten.nn import onnx_converter

    assert onnx_converter.SYM_REGISTRY is False


def _leaves(node, prefix=""):
    from omegaconf import DictConfig

    for key in node:
        value = node[key]
        yield from _leaves(value, f"{prefix}{key}.") if isinstance(value, DictConfig) else [(prefix + key, value)]


def test_config_reads_through_the_view_are_omegaconfs_after_every_kind_of_write(tmp_path):
    cr = compat.module()
    cfg = cr.cfg
    plain = lambda: dict(_leaves(cfg.config))  # noqa: E731 - OmegaConf's own reads

    def read_all(settings):
        for name, value in settings.items():
            node = cfg
            for key in name.split("."):
                node = getattr(node, key)
            assert node == value == cfg[name], name

    saved = copy.deepcopy(cfg.config)  # other tests' settings (communicator.verbose), put back at the end
    before = plain()
    assert len(before) > 20 and type(cfg.functions).__name__ == "_ConfigView"
    read_all(before)
    read_all(before)  # kept values, read again
    with cfg.temp_override({"functions.max_method": "pairwise", "debug.validation_mode": True}):
        assert cfg.functions.max_method == "pairwise" and cfg.debug.validation_mode is True
        read_all(plain())
    assert cfg.functions.max_method == before["functions.max_method"] and not cfg.debug.validation_mode
    old = cfg.functions.sqrt_nr_iters
    try:
        cfg.functions.sqrt_nr_iters = old + 5  # a write into a node, as layers.py makes
        assert cfg.functions.sqrt_nr_iters == cfg.config.functions.sqrt_nr_iters == old + 5
        with cfg.temp_override({"functions.exp_iterations": 3}):
            assert cfg.functions.sqrt_nr_iters == old + 5 and cfg.functions.exp_iterations == 3
        cfg["functions.reciprocal_nr_iters"] = 4  # a write by name: a new configuration
        read_all(plain())
        assert cfg.functions.reciprocal_nr_iters == 4
        cfg.load_config(None)  # crypten's defaults, as crypten.init() loads them
        read_all(plain())
    finally:
        cfg.set_config(saved)
    assert plain() == before and cfg.functions.sqrt_nr_iters == old


def test_single_process_numerics():
    cr = compat.crypten()
    assert cr.is_initialized()
    assert cr.cfg.communicator.verbose
    x = torch.tensor([0.5, -1.0, 2.0])
    ex = cr.cryptensor(x).exp().get_plain_text()
    assert torch.allclose(ex, x.exp(), rtol=TOL["exp_rel"])
    a = torch.randn(3, 4)
    b = torch.randn(4, 2)
    got = cr.cryptensor(a).matmul(cr.cryptensor(b)).get_plain_text()
    assert (got - a @ b).abs().max() < TOL["matmul"]


def test_two_parties_in_separate_processes_match_plaintext():
    res = runner.run(parties.selfcheck, 3, timeout=90)
    assert [r["rank"] for r in res] == [0, 1]
    assert all(r["world_size"] == 2 for r in res)
    inp = res[0]["inputs"]
    y = inp["x"] @ inp["w"]
    for r in res:  # both parties reveal the same (correct) values
        assert (r["matmul"] - y).abs().max() < TOL["matmul"]
        assert (r["softmax"] - torch.softmax(y, -1)).abs().max() < TOL["softmax"]
        assert ((r["exp"] - (0.5 * y).exp()) / (0.5 * y).exp()).abs().max() < TOL["exp_rel"]
        assert ((r["reciprocal"] - 1 / inp["pos"]) * inp["pos"]).abs().max() < TOL["reciprocal_rel"]
    # both parties communicated, and symmetrically (CrypTen counts per party, both directions)
    assert res[0]["stats"]["bytes"] > 0
    assert res[0]["stats"]["rounds"] == res[1]["stats"]["rounds"]


def test_runner_reports_party_failure():
    with pytest.raises(runner.PartyError, match="boom"):
        runner.run(parties.fail, "boom", timeout=60)


def test_runner_time_limit_kills_parties():
    with pytest.raises(runner.PartyError, match="within"):
        runner.run(parties.hang, 1, 60.0, timeout=5)


def test_cli_parties_rendezvous_like_two_hosts(tmp_path):
    """`python -m privtrans.shared.mpc.runner --rank R ...` in two independent processes (as on two hosts)."""
    import json
    import os
    import subprocess

    port = runner.free_port()
    cmd = lambda r: [sys.executable, "-m", "privtrans.shared.mpc.runner", "--rank", str(r), "--world-size", "2",  # noqa: E731
                     "--rendezvous", f"tcp://127.0.0.1:{port}", "privtrans.shared.mpc.parties:generation_report",
                     json.dumps(kwargs)]
    sizes = dict(vocab_size=40, d_model=8, n_layers=1, n_heads=2, max_len=12)
    kwargs = {"variant": "merge", "sizes": sizes, "prefix": [3, 1, 4], "n_new": 4}
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen(cmd(r), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for r in (0, 1)]
    try:
        outs = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    model, decoding = parties.build_model("merge", sizes, 0)
    want = model.generate(torch.tensor([[3, 1, 4]]), 4, decoding)[0].tolist()
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert reports[0] == {**reports[1], "seconds": reports[0]["seconds"]}  # same tokens, bytes, rounds
    assert reports[0]["ids"] == want and reports[0]["bytes"] > 0


def test_decode_is_exact_for_negative_values():
    """CrypTen 0.4.1 decodes -5.99995 (= -6 + 3 * 2^-16) as -6.99995; the shim's decode does not."""
    from crypten.encoder import FixedPointEncoder

    compat.module()
    enc = FixedPointEncoder()
    ints = torch.tensor([-6 * 65536 + 3, -6 * 65536, -2 * 65536 + 1, -1, 0, 1, 5 * 65536 + 7, -300 * 65536 + 250])
    want = ints.double() / 65536
    assert torch.allclose(enc.decode(ints).double(), want, atol=1e-6)
    assert (FixedPointEncoder._crypten_decode(enc, ints).double() - want).abs().max() > 0.99  # the bug


def test_dry_run_cuts_private_decoding_and_books_it_in_the_parent():
    """In a dry run (privtrans.book.dry) the parties decode one token and the parent's tally books
    the loop at its full length (rank 0's booking). Outside one every token is decoded: the
    generation tests of test_shared_mpc_layers."""
    from privtrans.book import dry

    sizes = dict(vocab_size=16, d_model=8, n_layers=1, n_heads=2, max_len=16)
    want = parties.build_model("crypten", sizes, 0)[0].generate(torch.tensor([[1, 2]]), 6, "vanilla")[0]
    try:
        dry.activate()
        cut = runner.run(parties.generation_report, "crypten", sizes, [1, 2], 6, timeout=120)
        report = dry.report(1.0)
    finally:
        dry.activate(False)
    assert cut[0]["ids"] == cut[1]["ids"] == want[:1].tolist()  # the first token, the same
    assert report["loops"] == {"generated tokens (private)": {"runs": 1, "kept": 1, "full": 6}}
    assert 0 < report["loops_seconds"] < report["loops_full_seconds"]
