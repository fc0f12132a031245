"""privtrans.dpformer.efficiency (Figure 3): the batch generator, the analytic memory model and the
largest batch it allows, the ratio tables, the peak-RSS measurement and the sweep's bookkeeping."""

import contextlib
import gc
import io
import math
import os
import statistics
import subprocess

import numpy as np
import pandas as pd
import pytest
import torch

from privtrans.dpformer import efficiency as eff
from privtrans.dpformer.ghost_baseline import paper_ghost_model
from privtrans.dpformer.sasrec import SASRec

pytestmark = pytest.mark.filterwarnings("ignore:Full backward hook is firing:UserWarning")  # opacus' hooks


@pytest.fixture(autouse=True)
def no_full_collection(monkeypatch):
    """time_interleaved collects garbage once before its timed rounds, which real timings need; here,
    with fake clocks and the test session's heap, each collection took 0.3 s of nothing (7 s of one
    test, about 20 s of this module). The collector's switching off and on is still checked."""
    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)


@pytest.fixture
def keep_threads():
    """run_here sets torch's thread count for the process; give the rest of the session its own back."""
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


# ----------------------------------------------------------------------------------- batch
def test_random_batch_is_a_left_padded_next_item_batch():
    x, y = eff.random_batch(n_items=20, length=8, batch=16, seed=3)
    assert x.shape == y.shape == (16, 8) and x.dtype == y.dtype == torch.int64
    assert int(x.min()) >= 0 and int(x.max()) <= 20 and int(y.max()) <= 20
    for row in x:  # left padding: the zeros form a prefix, shorter than half the sequence
        n_pad = int((row == 0).sum())
        assert n_pad < 8 // 2 and bool((row[:n_pad] == 0).all()) and bool((row[n_pad:] > 0).all())
    assert bool((y[x == 0] == 0).all()) and bool((y[x > 0] > 0).all())  # a target wherever there is an input
    real = x[:, :-1] > 0  # y is x shifted by one
    assert torch.equal(y[:, :-1][real], x[:, 1:][real])
    a, b = eff.random_batch(20, 8, 16, seed=3), eff.random_batch(20, 8, 16, seed=4)
    assert torch.equal(a[0], x) and torch.equal(a[1], y) and not torch.equal(b[0], x)
    # Zipf-ish popularity: item 1 is drawn far more often than the least popular half
    many = eff.random_batch(200, 20, 64, seed=0)[0]
    counts = torch.bincount(many[many > 0], minlength=201)
    assert int(counts[1]) > 5 * float(counts[101:].float().mean())


# ----------------------------------------------------------------------------------- memory model
# one tiny configuration by hand: M = 9 items (+ pad: m = 10 columns), L = 4, B = 3, d = 8, 2 blocks
N_ITEMS, L, B, D = 9, 4, 3, 8
M1 = N_ITEMS + 1
CLIP = {  # the method's clipping intermediates, from the docstring's formulas (float32)
    "nonprivate": 0,
    "phantom": 4 * ((2 * 6 * 2 + 5) * B * L * L + B * L * M1),                      # 4 · 1512
    "paper_ghost": 4 * ((2 * 6 * 2 + 2) * B * L * L + B * L * M1 + 2 * B * M1 * (D // 2))
    + B * M1 * M1 * (4 + 1),                                                           # Gram + byte mask
    "opacus_ghost": 4 * ((2 * 6 * 2 + 2 + 2) * B * L * L),
    "opacus_hooks": 4 * (B * (2 * M1 * D + 2 * (6 * D * D + 10 * D) + 2 * D + L * D)),
}


def test_memory_model_clip_bytes_by_hand():
    assert CLIP == {"nonprivate": 0, "phantom": 6048, "paper_ghost": 7932, "opacus_ghost": 5376,
                    "opacus_hooks": 13632}
    for method, want in CLIP.items():
        mm = eff.memory_model(method, N_ITEMS, L, B, D)
        assert mm["clip_bytes"] == pytest.approx(want, rel=1e-12), method
        assert (mm["method"], mm["M"], mm["B"]) == (method, N_ITEMS, B)


def test_memory_model_activations_and_parameters_of_the_nonprivate_step():
    mm = eff.memory_model("nonprivate", N_ITEMS, L, B, D)
    act = 3 * B * L * M1 + 12 * 2 * B * L * D + 4 * B * L * D   # logits ×3, per-block activations, embeddings
    params = 2 * (6 * D * D + 10 * D) + 2 * D + M1 * D + L * D  # tied: the item table once; final LN 2·D
    assert mm["fixed_bytes"] == 4 * 2 * params                   # parameters and their gradients
    assert mm["total_bytes"] == 4 * (act + 2 * params)
    assert mm["per_sample_bytes"] == pytest.approx(4 * act / B)


@pytest.mark.parametrize("method", eff.METHODS)
def test_memory_model_is_fixed_plus_linear_in_batch(method):
    for b in (1, 2, 7):
        mm = eff.memory_model(method, N_ITEMS, L, b, D)
        assert mm["total_bytes"] == pytest.approx(mm["fixed_bytes"] + b * mm["per_sample_bytes"], rel=1e-12)
        assert mm["fixed_bytes"] == eff.memory_model(method, N_ITEMS, L, 1, D)["fixed_bytes"]


def test_memory_model_growth_in_vocabulary():
    """Second differences in M: only the paper-style Ghost has B·M² terms (4-byte Gram + 1-byte mask)."""
    def second_diff(method, bytes_per=4):
        c = [eff.memory_model(method, n, L, B, D, bytes_per=bytes_per)["clip_bytes"] for n in (20, 21, 22)]
        return c[2] - 2 * c[1] + c[0]

    assert second_diff("paper_ghost") == pytest.approx(2 * B * (4 + 1))
    assert second_diff("paper_ghost", bytes_per=8) == pytest.approx(2 * B * (8 + 1))
    for method in ("nonprivate", "phantom", "opacus_ghost", "opacus_hooks"):
        assert second_diff(method) == pytest.approx(0.0, abs=1e-9), method
    # opacus ghost's clipping terms do not see M at all; Phantom adds one B·L·M logit gradient
    assert eff.memory_model("opacus_ghost", 20, L, B, D)["clip_bytes"] == eff.memory_model("opacus_ghost", 900, L, B, D)["clip_bytes"]
    step = eff.memory_model("phantom", 21, L, B, D)["clip_bytes"] - eff.memory_model("phantom", 20, L, B, D)["clip_bytes"]
    assert step == 4 * B * L
    # the shared logits: every extra item costs 3·B·L activations and 2·d parameters (+ grads)
    tot = [eff.memory_model("nonprivate", n, L, B, D)["total_bytes"] for n in (20, 21)]
    assert tot[1] - tot[0] == 4 * (3 * B * L + 2 * D)


def _real_params(method, n_items, length, d):
    if method == "paper_ghost":
        m = paper_ghost_model(n_items, length, d=d)
    else:
        m = SASRec(n_items, length, d=d // 2 if method == "opacus_ghost" else d,
                   tied=method != "opacus_ghost")
    return sum(p.numel() for p in m.parameters())  # a tied Parameter counts once


@pytest.mark.parametrize("method", eff.METHODS)
def test_memory_model_parameters_are_the_models_make_step_builds(method):
    """The parameter term counts the model each method trains (d/2 and untied for the ghost
    methods, tied otherwise), exactly (more sizes and depths in test_dpformer_memory_model.py)."""
    n_items, length, d = 50, 6, 8
    counted = eff.memory_model(method, n_items, length, 1, d)["fixed_bytes"] / (2 * 4)
    real = _real_params(method, n_items, length, d)
    assert counted == real, (method, counted, real)


def test_memory_model_and_make_step_refuse_an_unknown_method():
    for fn in (lambda: eff.memory_model("ghost", 10, 4, 2), lambda: eff.make_step("ghost", 10, 4, 2),
               lambda: eff.max_batch("ghost", 10, 4)):
        with pytest.raises(ValueError, match=r"one of \('nonprivate', 'phantom', 'paper_ghost'"):
            fn()


@pytest.mark.parametrize("method", eff.METHODS)
def test_max_batch_is_the_largest_batch_that_fits(method):
    n_items, length, d = 3416, 50, 64  # ML-1M's vocabulary at L = 50
    for budget in (16e9, 3e9):
        b = eff.max_batch(method, n_items, length, budget, d)
        assert b >= 1
        assert eff.memory_model(method, n_items, length, b, d)["total_bytes"] <= budget
        assert eff.memory_model(method, n_items, length, b + 1, d)["total_bytes"] > budget
    # exactly at a batch's size it fits, one byte less it does not
    at7 = eff.memory_model(method, n_items, length, 7, d)["total_bytes"]
    assert eff.max_batch(method, n_items, length, at7, d) == 7
    assert eff.max_batch(method, n_items, length, at7 - 1, d) == 6
    fixed = eff.memory_model(method, n_items, length, 1, d)["fixed_bytes"]
    assert eff.max_batch(method, n_items, length, fixed / 2, d) == 0  # not even the parameters fit


def test_modelled_max_batch_table():
    methods, Ms = ("nonprivate", "phantom", "paper_ghost"), (1000, 3416, 23715)
    t = eff.modelled_max_batch_table(methods, Ms, 50, 16, 64)
    assert list(t.index) == list(Ms)
    assert list(t.columns) == [*methods, "Phantom / paper-style Ghost", "Phantom / non-private"]
    for M in Ms:
        for m in methods:
            assert t.loc[M, m] == eff.max_batch(m, M, 50, 16e9, 64)
        assert t.loc[M, "Phantom / paper-style Ghost"] == t.loc[M, "phantom"] / max(1, t.loc[M, "paper_ghost"])
        assert t.loc[M, "Phantom / non-private"] == t.loc[M, "phantom"] / t.loc[M, "nonprivate"]
    ratio = t["Phantom / paper-style Ghost"].to_numpy()
    assert (np.diff(ratio) > 0).all() and ratio[-1] > 100       # grows with M (ghost's B·M²)
    assert ((t["Phantom / non-private"] < 1) & (t["Phantom / non-private"] > 0.5)).all()
    small = eff.modelled_max_batch_table(methods, (23715,), 50, 1, 64)  # 1 GB: one ghost sample does not fit
    assert small.loc[23715, "paper_ghost"] == 0 and small.loc[23715, "phantom"] > 0
    assert small.loc[23715, "Phantom / paper-style Ghost"] == small.loc[23715, "phantom"]  # divides by 1, not 0
    with pytest.raises(ValueError, match=r"lacks the method\(s\) \['paper_ghost'\]"):
        eff.modelled_max_batch_table(("nonprivate", "phantom"), Ms, 50, 16, 64)


# ----------------------------------------------------------------------------------- ratios
def _measured(values):
    rows = [dict(method=m, M=M, cpu_s=t, extra_mb=x) for (m, M), (t, x) in values.items()]
    return pd.DataFrame(rows)


def test_ratio_table_by_hand():
    v = {}
    for M, k in ((100, 1.0), (400, 4.0)):
        v.update({("nonprivate", M): (1.0 * k, 10.0 * k), ("phantom", M): (2.0 * k, 0.25),
                  ("paper_ghost", M): (8.0 * k, 40.0 * k), ("opacus_ghost", M): (3.0 * k, 5.0),
                  ("opacus_hooks", M): (6.0 * k, 60.0)})
    r = eff.ratio_table(_measured(v))
    assert list(r.index) == [100, 400] and list(r.columns) == list(eff.RATIOS)
    assert r["time: paper Ghost / Phantom"].tolist() == [4.0, 4.0]
    assert r["time: opacus ghost / Phantom"].tolist() == [1.5, 1.5]
    assert r["time: opacus hooks / Phantom"].tolist() == [3.0, 3.0]
    assert r["time: Phantom / non-private"].tolist() == [2.0, 2.0]
    # Phantom's 0.25 MB counts as 1 MB (a step adding nothing measurable does not divide by 0)
    assert r["memory: paper Ghost / Phantom"].tolist() == [40.0, 160.0]
    assert r["memory: Phantom / non-private"].tolist() == [0.1, 1 / 40]


def test_ratio_table_names_the_missing_method():
    v = {(m, 100): (1.0, 1.0) for m in eff.METHODS if m != "opacus_hooks"}
    with pytest.raises(ValueError, match=r"the sweep lacks the method\(s\) \['opacus_hooks'\]"):
        eff.ratio_table(_measured(v))


def test_loglog_slope_is_the_power_law_exponent():
    x = np.array([10.0, 30.0, 100.0, 1000.0])
    assert eff.loglog_slope(x, 3.0 * x ** 2.5) == pytest.approx(2.5)
    assert eff.loglog_slope(x, np.full(4, 7.0)) == pytest.approx(0.0, abs=1e-12)
    assert math.isnan(eff.loglog_slope([5.0], [2.0]))


# ----------------------------------------------------------------------------------- measuring
def test_peak_rss_reset_then_sees_a_step_allocation():
    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("no /proc/self/clear_refs: the peak cannot be reset here")
    hog = torch.ones(32 * 2 ** 20)  # 128 MiB, touched: raises the process's peak for good
    del hog
    setup = eff._reset_peak_rss()
    assert eff._peak_rss_mb() < setup + 16  # the old 128 MiB peak is forgotten
    buf = torch.ones(16 * 2 ** 20)          # 64 MiB
    extra = eff._peak_rss_mb() - setup
    del buf
    assert 60 <= extra <= 64 + 24


def test_measure_passes_its_configuration_to_the_child_process(monkeypatch):
    """measure() → command line → _main() → run_here() carries every argument through unchanged."""
    seen = {}

    def fake_child(*args):
        seen["args"] = args
        return {"ok": 1}

    def fake_run(cmd, **kw):  # run the child's command line in this process instead
        seen["cmd"], seen["env"] = cmd, kw["env"]
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            eff._main(cmd[3:])
        return subprocess.CompletedProcess(cmd, 0, "noise\n" + buf.getvalue(), "")

    monkeypatch.setattr(eff, "run_here", fake_child)
    monkeypatch.setattr(eff.subprocess, "run", fake_run)
    res = eff.measure("paper_ghost", 31, 7, 5, d=12, steps=4, threads=2, max_entries=999.0, device="cpu")
    assert res == {"ok": 1, "mmap_threshold": eff.MMAP_THRESHOLD}  # the last stdout line, parsed
    assert seen["cmd"][1:3] == ["-m", "privtrans.dpformer.efficiency"]
    assert seen["args"] == ("paper_ghost", 31, 7, 5, 12, 4, 2, 999, "cpu")
    assert seen["env"]["OMP_NUM_THREADS"] == "2" and seen["env"]["MKL_NUM_THREADS"] == "2"
    assert seen["env"]["MALLOC_MMAP_THRESHOLD_"] == str(eff.MMAP_THRESHOLD)  # glibc's, fixed: peaks repeat
    seen.clear()
    eff.measure("phantom", 31, 7, 5)
    assert "--max-entries" not in seen["cmd"] and seen["args"][-2] is None
    with pytest.raises(SystemExit):  # the command line refuses an unknown method
        eff._main(["ghost", "10", "4", "2"])


def test_measure_reports_the_childs_error():
    # a model of width d = 0 cannot be built: the child fails, and the error says why
    with pytest.raises(RuntimeError, match=r"(?s)nonprivate M=9 B=2 failed:\nTraceback.*bad sizes: n_items=9, max_len=4, d=0"):
        eff.measure("nonprivate", 9, 4, 2, d=0, steps=1, timeout=300)


def test_sweep_in_process_bookkeeping(keep_threads):
    Ms, b, length, d = (9, 15), 2, 4, 8
    cap = b * (9 + 1) ** 2  # M = 9 fits the cap exactly (not chunked); M = 15 exceeds it
    rows = eff.sweep(eff.METHODS, Ms, length, b, d, steps=3, threads=1, isolate=False, ghost_cap=cap)
    assert [(r["M"], r["method"]) for r in rows] == [(M, m) for M in Ms for m in eff.METHODS]
    for r in rows:
        assert r["chunked"] is (r["method"] == "paper_ghost" and r["M"] == 15)
        assert r["isolated"] is False and (r["L"], r["B"], r["d"], r["threads"]) == (length, b, d, 1)
        n_steps = 2 if r["method"] == "paper_ghost" else 3        # the slow baseline times fewer steps
        assert len(r["cpu_s_all"]) == len(r["step_s_all"]) == n_steps
        assert r["cpu_s"] == statistics.median(r["cpu_s_all"]) and r["step_s"] == statistics.median(r["step_s_all"])
        assert r["extra_mb"] == r["rss_peak_mb"] - r["rss_setup_mb"]
        assert r["model_mb"] == eff.memory_model(r["method"], r["M"], length, b, d)["total_bytes"] / 2 ** 20
    assert torch.get_num_threads() == 1  # the configured thread count is what was timed


def test_sweep_measures_a_method_of_Ms_for_only_at_its_Ms_and_the_ratios_leave_the_gaps_empty(keep_threads):
    Ms, methods = (9, 12, 15), ("nonprivate", "phantom", "paper_ghost", "opacus_hooks")
    rows = eff.sweep(methods, Ms, 4, 2, 8, steps=1, isolate=False, Ms_for={"opacus_hooks": [9, 15]})
    assert [(r["M"], r["method"]) for r in rows] == [(M, m) for M in Ms for m in methods
                                                     if not (m == "opacus_hooks" and M == 12)]
    ratios = eff.ratio_table(pd.DataFrame(rows + [dict(r, method="opacus_ghost") for r in rows
                                                  if r["method"] == "opacus_hooks"]))
    hooks = ratios["time: opacus hooks / Phantom"]
    assert math.isnan(hooks.loc[12]) and hooks.loc[[9, 15]].notna().all()
    assert ratios["time: paper Ghost / Phantom"].notna().all()     # the claims' ratios are whole
    for bad in ({"opacus_hooks": [10]}, {"opacus_ghost": [9]}, {"opacus_hooks": []}):
        with pytest.raises(ValueError, match="a method of .* and a non-empty subset of Ms"):
            eff.sweep(methods, Ms, 4, 2, 8, steps=1, isolate=False, Ms_for=bad)


def test_measure_all_runs_the_longest_configurations_first_and_returns_them_in_order(monkeypatch):
    started = []
    monkeypatch.setattr(eff, "measure", lambda **c: started.append((c["method"], c["n_items"])) or dict(c))
    configs = [dict(method=m, n_items=M, length=4, batch=2) for M in (100, 400) for m in
               ("nonprivate", "phantom", "paper_ghost")]
    assert eff.measure_all(configs, parallel=1) == configs
    assert started == [("paper_ghost", 400), ("paper_ghost", 100), ("phantom", 400), ("phantom", 100),
                       ("nonprivate", 400), ("nonprivate", 100)]


# ----------------------------------------------------------------------------------- Phantom vs non-private speed
# The claim fig3_phantom_speed_near_nonprivate is judged on the paired t interval of the log time ratio across
# interleaved repeats, not on one ratio (two builds read 2.57× and 1.39× off single timings).
LOG_1_5 = math.log(1.5)


class FakeClock:
    """A clock that only the fake steps advance: each step costs what ``cost(method, k)`` says, where k
    counts the steps run so far (warm-up included), so a test can give the machine a drift."""

    def __init__(self, cost):
        self.now, self.k, self.cost, self.calls = 0.0, 0, cost, []

    def __call__(self):
        return self.now

    def step(self, method):
        def run():
            self.now += self.cost(method, self.k)
            self.k += 1
            self.calls.append(method)
        return run

    def steps(self, methods=eff.SPEED_PAIR):
        return {m: self.step(m) for m in methods}


def _claim(values: dict, profile: str = "ci") -> dict:
    """The claims engine's row for fig3_phantom_speed_near_nonprivate over these recorded values."""
    from privtrans.book import claims
    from privtrans.book.session import _jsonable

    doc = claims.load("dpformer")
    doc = dict(doc, claims=[c for c in doc["claims"] if c["id"] == "fig3_phantom_speed_near_nonprivate"])
    results = {"fig3_memory_speed": {"profile": profile, "values": _jsonable(values)}}
    (row,) = claims.evaluate("dpformer", doc, results, profile)
    return row


def test_interleaved_order_alternates_which_method_runs_first():
    assert eff.interleaved_order(5) == [("phantom", "nonprivate"), ("nonprivate", "phantom"),
                                        ("phantom", "nonprivate"), ("nonprivate", "phantom"),
                                        ("phantom", "nonprivate")]
    for r in (2, 3, 8, 11):
        order = eff.interleaved_order(r, ("a", "b"))
        assert len(order) == r and all(sorted(p) == ["a", "b"] for p in order)
        assert all(order[i][0] != order[i + 1][0] for i in range(r - 1))  # never the same one first twice
        firsts = [p[0] for p in order]
        assert abs(firsts.count("a") - firsts.count("b")) == r % 2         # balanced (one extra when r is odd)


def test_time_interleaved_times_each_round_in_that_order_after_the_warm_up():
    # the first step of each method (its warm-up) costs 100 s: it must not be in any timed block
    clock = FakeClock(lambda m, k: 100.0 if k < 2 else (2.0 if m == "phantom" else 1.0) + 0.01 * k)
    out = eff.time_interleaved(clock.steps(), repeats=4, steps_per_repeat=3, warmup=1, clock=clock)
    assert clock.calls[:2] == ["phantom", "nonprivate"]                  # warm-up, one step each
    blocks = [clock.calls[2 + 3 * i] for i in range(8)]
    assert clock.calls[2:] == [m for m in blocks for _ in range(3)]      # consecutive blocks of 3 steps
    assert blocks == [m for pair in eff.interleaved_order(4) for m in pair]
    assert out["order"] == [list(p) for p in eff.interleaved_order(4)]
    assert out["steps_per_repeat"] == 3 and out["warmup"] == 1
    # no cycle collection inside the timed steps, and the collector is back on afterwards
    seen = []
    eff.time_interleaved({m: (lambda: seen.append(gc.isenabled())) for m in eff.SPEED_PAIR}, 2, 1, warmup=0)
    assert seen == [False] * 4 and gc.isenabled()
    for m, base in (("phantom", 2.0), ("nonprivate", 1.0)):
        assert len(out["times"][m]) == len(out["step_times"][m]) == 4 and all(len(b) == 3 for b in out["step_times"][m])
        assert all(base < t < base + 1 for b in out["step_times"][m] for t in b)  # no 100 s warm-up in it
        assert out["times"][m] == [statistics.median(b) for b in out["step_times"][m]]
    # the k-th step overall costs base + 0.01 k: the block of round 0's second method starts at k = 5
    assert out["step_times"]["nonprivate"][0] == pytest.approx([1.05, 1.06, 1.07])
    assert out["times"]["nonprivate"][1] == pytest.approx(1.0 + 0.01 * 9)   # round 1: non-private first, k = 8..10


def _run(ratio, noise=0.0, repeats=10, seed=0, steps_per_repeat=1, rng=None):
    """Fake interleaved timings: non-private 1 s a step, Phantom ``ratio`` s, each step × exp(N(0, noise))."""
    rng = np.random.default_rng(seed) if rng is None else rng
    clock = FakeClock(lambda m, k: (ratio if m == "phantom" else 1.0) * math.exp(rng.normal(0.0, noise)))
    return dict(eff.time_interleaved(clock.steps(), repeats, steps_per_repeat, clock=clock), M=4000)


def _processes(ratio, noise=0.0, processes=6, repeats=4, seed=0, steps_per_repeat=1, process_sd=0.0):
    """Fake runs of efficiency.speed_processes: each process's Phantom / non-private ratio is ``ratio``
    × exp(N(0, process_sd)), then its rounds are :func:`_run`'s."""
    rng = np.random.default_rng(seed)
    return [_run(ratio * math.exp(rng.normal(0.0, process_sd)), noise, repeats, steps_per_repeat=steps_per_repeat,
                 rng=rng) for _ in range(processes)]


def test_the_recorded_interval_is_the_paired_difference_of_the_log_times():
    from privtrans.book.paired import paired_difference

    run = _run(1.3, noise=0.1, repeats=9, seed=4, steps_per_repeat=3)
    rec = eff.speed_vs_nonprivate(run)
    t = rec["speed_times"]
    assert t == {"phantom": run["times"]["phantom"], "nonprivate": run["times"]["nonprivate"]}
    want = paired_difference([math.log(x) for x in t["nonprivate"]], [math.log(x) for x in t["phantom"]],
                             margin=-LOG_1_5)
    assert rec["phantom_log_speed_vs_nonprivate"] == want.as_dict() and want.n == 9
    r = rec["time_ratio_phantom_nonprivate_interleaved"]
    assert r["gm"] == pytest.approx(math.exp(-want.mean)) and r["repeats"] == 9 and r["max_time_ratio"] == 1.5
    assert (r["lo"], r["hi"]) == pytest.approx((math.exp(-want.hi), math.exp(-want.lo)))
    ratios = [p / n for p, n in zip(t["phantom"], t["nonprivate"])]   # the geometric mean of the per-round ratios
    assert r["gm"] == pytest.approx(statistics.geometric_mean(ratios)) and r["lo"] < r["gm"] < r["hi"]
    assert rec["speed_run"]["order"] == run["order"] and rec["speed_run"]["step_times"] == run["step_times"]


def test_processes_are_the_unit_the_claim_is_judged_across():
    """pool_processes: a process's time per method is the geometric mean of its rounds, so the recorded
    interval is the paired t interval across processes of each process's mean log ratio; the claim reads
    it with the threshold −log 1.5 (its margin is the function's default)."""
    from privtrans.book.paired import paired_difference

    runs = _processes(1.3, noise=0.1, processes=5, repeats=3, seed=4, steps_per_repeat=3, process_sd=0.05)
    pooled = eff.pool_processes(runs)
    for m in eff.SPEED_PAIR:
        assert pooled["times"][m] == pytest.approx([statistics.geometric_mean(r["times"][m]) for r in runs])
    rec = eff.speed_vs_nonprivate(pooled)
    per_process = [statistics.fmean(math.log(n) - math.log(p) for p, n in zip(r["times"]["phantom"], r["times"]["nonprivate"]))
                   for r in runs]
    want = paired_difference(per_process, [0.0] * 5, margin=-LOG_1_5)
    got = rec["phantom_log_speed_vs_nonprivate"]
    assert got["n"] == 5 and (got["mean"], got["lo"], got["hi"]) == pytest.approx((want.mean, want.lo, want.hi))
    assert rec["time_ratio_phantom_nonprivate_interleaved"]["repeats"] == 5
    assert rec["speed_run"]["repeats_per_process"] == [3] * 5 and rec["speed_run"]["steps_per_repeat"] == 3
    assert [p["step_times"] for p in rec["speed_run"]["processes"]] == [r["step_times"] for r in runs]
    row = _claim(rec)
    assert row["margin"] == pytest.approx(-LOG_1_5)
    fields = ("mean", "lo", "hi", "n", "planned")
    assert {k: row["cells"][""][k] for k in fields} == {k: got[k] for k in fields}
    assert row["verdict"] == ("held" if want.lo > -LOG_1_5 else "contradicted" if want.hi <= -LOG_1_5
                              else "inconclusive")
    assert "5 processes, each over 3 interleaved rounds of the median of 3 step(s)) at M = 4000" in row["value"]


def test_the_claim_is_held_contradicted_or_inconclusive_by_the_interval():
    rec = eff.speed_vs_nonprivate(eff.pool_processes(_processes(1.2, noise=0.05, seed=1)))
    held = _claim(rec)
    assert held["verdict"] == "held", held["reason"]
    gm = rec["time_ratio_phantom_nonprivate_interleaved"]["gm"]
    assert gm == pytest.approx(1.2, rel=0.05) and f"step time {gm:.2f}×" in held["value"] and "6 processes" in held["value"]
    slow = _claim(eff.speed_vs_nonprivate(eff.pool_processes(_processes(2.0, noise=0.05, seed=1))))
    assert slow["verdict"] == "contradicted", slow["reason"]
    # a ratio right at the threshold, with noise: one process's ratio may read either side, the interval both
    edge_runs = _processes(1.5, noise=0.05, seed=2, process_sd=0.1)
    edge = _claim(eff.speed_vs_nonprivate(eff.pool_processes(edge_runs)))
    assert edge["verdict"] == "inconclusive", edge["reason"]
    ratios = [p / n for p, n in zip(*eff.pool_processes(edge_runs)["times"].values())]
    assert min(ratios) < 1.5 < max(ratios)      # a single process would have flipped the verdict
    assert _claim(eff.speed_vs_nonprivate(eff.pool_processes(_processes(1.2, noise=0.05, seed=1))),
                  profile="smoke")["verdict"] == "not judged"


def test_rounds_in_one_process_cannot_stand_for_processes():
    """Why the process is the unit: with a process effect (each process's ratio × exp(N(0, 0.1))) and
    quiet rounds, each process's own interval across its rounds is narrow and reads held or contradicted
    by which process it was, while the interval across the processes is inconclusive."""
    runs = _processes(1.45, noise=0.01, processes=6, repeats=4, seed=0, process_sd=0.1)
    alone = {eff.speed_vs_nonprivate(r)["phantom_log_speed_vs_nonprivate"]["held"] for r in runs}
    assert alone == {True, False}
    p = eff.speed_vs_nonprivate(eff.pool_processes(runs))["phantom_log_speed_vs_nonprivate"]
    assert p["lo"] < -LOG_1_5 < p["hi"], p


def test_identical_workloads_are_not_held_faster_and_interleaving_cancels_a_drift():
    """The null case: both 'methods' are the same workload on a machine that slows down as it runs
    (each step 3 % slower than the last) with noise. A threshold that needs a real effect (Phantom at
    least as fast, or 10 % faster) is not held; 'at most 1.5×' is."""
    rng = np.random.default_rng(5)
    clock = FakeClock(lambda m, k: 1.03 ** k * math.exp(rng.normal(0.0, 0.02)))
    run = eff.time_interleaved(clock.steps(), 8, 1, clock=clock)
    for faster in (1.0, 1 / 1.1):  # margin 0 and log 1.1
        p = eff.speed_vs_nonprivate(run, max_time_ratio=faster)["phantom_log_speed_vs_nonprivate"]
        assert p["held"] is False and p["lo"] < 0 < p["hi"], p["reason"]
    assert eff.speed_vs_nonprivate(run)["phantom_log_speed_vs_nonprivate"]["held"] is True
    # without the alternation the drift alone makes whichever runs first look 3 % faster, every round
    rng = np.random.default_rng(5)
    clock = FakeClock(lambda m, k: 1.03 ** k * math.exp(rng.normal(0.0, 0.02)))
    fixed = {"order": [["phantom", "nonprivate"]] * 8, "times": {"phantom": [], "nonprivate": []}}
    for pair in fixed["order"]:
        for m in pair:
            t0 = clock()
            clock.step(m)()
            fixed["times"][m].append(clock() - t0)
    p = eff.speed_vs_nonprivate(fixed, max_time_ratio=1.0)["phantom_log_speed_vs_nonprivate"]
    assert p["held"] is True and p["lo"] > 0  # a spurious "Phantom is faster"


def test_identical_real_workloads_are_not_held_ten_percent_faster(one_torch_thread):
    """The same real computation under both names, timed by the process CPU clock: its interval does
    not clear log 1.1 (a claim that Phantom is 10 % faster than itself)."""
    a = torch.randn(96, 96)

    def work():
        for _ in range(20):
            a @ a

    run = eff.time_interleaved({"phantom": work, "nonprivate": work}, 6, 3)
    p = eff.speed_vs_nonprivate(run, max_time_ratio=1 / 1.1)["phantom_log_speed_vs_nonprivate"]
    assert p["n"] == 6 and p["held"] is False, p["reason"]


def test_speed_inputs_that_cannot_give_an_interval_are_refused():
    with pytest.raises(ValueError, match=r"repeats must be an integer >= 2 .* got 1"):
        eff.interleaved_order(1)
    for bad in (0, 2.0, True, None):
        with pytest.raises(ValueError, match="repeats must be an integer >= 2"):
            eff.interleaved_order(bad)
    clock = FakeClock(lambda m, k: 1.0)
    with pytest.raises(ValueError, match="repeats must be an integer >= 2"):
        eff.time_interleaved(clock.steps(), 1, 3, clock=clock)
    with pytest.raises(ValueError, match="repeats must be an integer >= 2"):  # refused before any model is built
        eff.interleaved_speed(10, 4, 2, 8, repeats=1, steps_per_repeat=1)
    with pytest.raises(ValueError, match="steps_per_repeat must be a positive integer, got 0"):
        eff.time_interleaved(clock.steps(), 2, 0, clock=clock)
    with pytest.raises(ValueError, match="warmup must be an integer >= 0"):
        eff.time_interleaved(clock.steps(), 2, 1, warmup=-1, clock=clock)
    with pytest.raises(ValueError, match="two different names"):
        eff.time_interleaved(clock.steps(("phantom",)), 2, 1, clock=clock)
    assert clock.calls == []                                       # nothing was timed
    one = {"times": {"phantom": [1.2], "nonprivate": [1.0]}}
    with pytest.raises(ValueError, match=r"repeats must be an integer >= 2 .* got 1"):
        eff.speed_vs_nonprivate(one)
    with pytest.raises(ValueError, match="one time per repeat for each method, got 3 for phantom and 2"):
        eff.speed_vs_nonprivate({"times": {"phantom": [1.0] * 3, "nonprivate": [1.0] * 2}})
    with pytest.raises(ValueError, match="lack the method 'nonprivate'"):
        eff.speed_vs_nonprivate({"times": {"phantom": [1.0, 1.0], "ghost": [1.0, 1.0]}})
    with pytest.raises(ValueError, match="positive finite seconds"):
        eff.speed_vs_nonprivate({"times": {"phantom": [1.0, 0.0], "nonprivate": [1.0, 1.0]}})
    with pytest.raises(ValueError, match="max_time_ratio must be a positive number"):
        eff.speed_vs_nonprivate({"times": {"phantom": [1.0, 1.1], "nonprivate": [1.0, 1.0]}}, max_time_ratio=0)
    with pytest.raises(ValueError, match="per-repeat 'times'"):
        eff.speed_vs_nonprivate([1.0, 1.1])
    with pytest.raises(ValueError, match="runs must be a non-empty list"):
        eff.pool_processes(_run(1.2, repeats=2))            # one run, not a list of them
    with pytest.raises(ValueError, match="each run needs positive per-round times of 'nonprivate'"):
        eff.pool_processes([{"times": {"phantom": [1.0, 1.1]}}])
    with pytest.raises(ValueError, match="repeats must be an integer >= 2 .* got 1"):  # one process: no interval
        eff.speed_processes(10, 4, 2, 8, processes=1, repeats=2, steps_per_repeat=1)


def test_interleaved_speed_times_real_steps_with_the_thread_count_restored(keep_threads):
    torch.set_num_threads(2)
    out = eff.interleaved_speed(30, 6, 4, 8, repeats=3, steps_per_repeat=2, threads=1)
    assert torch.get_num_threads() == 2
    assert (out["M"], out["L"], out["B"], out["d"], out["threads"]) == (30, 6, 4, 8, 1)
    assert out["order"] == [list(p) for p in eff.interleaved_order(3)]
    assert all(len(out["times"][m]) == 3 and min(out["times"][m]) > 0 for m in eff.SPEED_PAIR)
    rec = eff.speed_vs_nonprivate(out)
    assert rec["speed_run"]["M"] == 30 and rec["phantom_log_speed_vs_nonprivate"]["n"] == 3


def test_speed_processes_time_the_pair_in_fresh_interpreters():
    """Two processes at a time, each running the command line's interleaved timing with glibc's
    threshold fixed; pooled, the interval has one point per process."""
    runs = eff.speed_processes(30, 6, 4, 8, processes=2, repeats=3, steps_per_repeat=1, parallel=2)
    assert len(runs) == 2 and {r["mmap_threshold"] for r in runs} == {eff.MMAP_THRESHOLD}
    for r in runs:
        assert (r["M"], r["L"], r["B"], r["d"], r["threads"]) == (30, 6, 4, 8, 1)
        assert r["order"] == [list(p) for p in eff.interleaved_order(3)]
        assert all(len(r["times"][m]) == 3 and min(r["times"][m]) > 0 for m in eff.SPEED_PAIR)
    rec = eff.speed_vs_nonprivate(eff.pool_processes(runs))
    assert rec["phantom_log_speed_vs_nonprivate"]["n"] == 2 and rec["speed_run"]["repeats_per_process"] == [3, 3]


def test_ghost_speed_is_timed_interleaved_in_fresh_interpreters():
    """The paper-style Ghost against Phantom, the pair the speed-up checks read, through the command
    line's interleaved timing (its --methods and --max-entries), pooled per process."""
    runs = eff.speed_processes(30, 6, 4, 8, processes=2, repeats=2, steps_per_repeat=1, parallel=2,
                               methods=eff.GHOST_PAIR, max_entries=500)
    assert len(runs) == 2 and all(r["methods"] == list(eff.GHOST_PAIR) for r in runs)
    assert all(len(r["times"][m]) == 2 and min(r["times"][m]) > 0 for r in runs for m in eff.GHOST_PAIR)
    here = eff.speed_processes(60, 6, 4, 8, processes=2, repeats=2, steps_per_repeat=1, isolate=False,
                               methods=eff.GHOST_PAIR)
    rec = eff.ghost_speedup({30: runs, 60: here})
    assert [r["M"] for r in rec["time_ratio_ghost_phantom_interleaved"]] == [30, 60]
    assert rec["ghost_log_speedup_at_max_M"]["n"] == 2 and rec["ghost_log_speedup_growth"]["planned"] == 2
    with pytest.raises(ValueError, match="two different methods"):
        eff.speed_processes(30, 6, 4, 8, processes=2, repeats=2, steps_per_repeat=1, methods=("phantom", "phantom"))


def test_memory_repeats_measure_the_pair_again_with_the_sweeps_settings():
    rows = eff.sweep(["nonprivate", "phantom", "paper_ghost"], [20, 30], 4, 2, 8, steps=1, isolate=False)
    rep = eff.memory_repeats(rows, 3)  # in this process, as the sweep ran
    assert sorted({(r["method"], r["M"]) for r in rep}) == [(m, M) for m in ("nonprivate", "phantom") for M in (20, 30)]
    assert sorted(r["repeat"] for r in rep) == [k for k in range(3) for _ in range(4)]
    first = {(r["method"], r["M"]): r["extra_mb"] for r in rows}
    assert all(r["extra_mb"] == first[r["method"], r["M"]] for r in rep if r["repeat"] == 0)
    with pytest.raises(ValueError, match="repeats must be an integer >= 2"):
        eff.memory_repeats(rows, 1)
    with pytest.raises(ValueError, match="parallel must be a positive int"):
        eff.measure_all([], parallel=0)



def test_measure_all_runs_each_configuration_in_its_own_process_and_a_peak_repeats():
    """Each configuration in a fresh interpreter, two at a time, results in order: the step's extra peak
    is at least its logits (B·L·M float32), and the same configuration reads the same peak again.

    The shapes make the logits 5-10 MB, so the few hundred kB by which a process's small allocations
    vary stay within 5 % (eight processes of the larger read 36.07-36.31 MB; with logits of 0.7 MB they
    read 8.2-9.3 MB, too close to that noise to test 'repeats'). Without a fixed mmap threshold one
    configuration read 83-105 MB across processes (the module docstring)."""
    configs = [dict(method=m, n_items=M, length=16, batch=8, d=8, steps=1, threads=1)
               for M in (10000, 20000) for m in ("nonprivate", "nonprivate")]
    rows = eff.measure_all(configs, parallel=2)
    assert [(r["method"], r["M"]) for r in rows] == [(c["method"], c["n_items"]) for c in configs]
    assert {r["mmap_threshold"] for r in rows} == {eff.MMAP_THRESHOLD}
    for r in rows:
        assert r["extra_mb"] >= 8 * 16 * r["M"] * 4 / 2**20, r
    assert rows[0]["extra_mb"] == pytest.approx(rows[1]["extra_mb"], rel=0.05)
    assert rows[2]["extra_mb"] == pytest.approx(rows[3]["extra_mb"], rel=0.05)
