"""Figure 3 machinery: one DP (or non-private) training step per method, timed and measured.

Methods (all on the same SASRec body, 2 blocks, 1 head, full softmax over M items):
- ``nonprivate``: tied model, plain backward.
- ``phantom``: tied model, :class:`~privtrans.shared.dp.step.PhantomDPSGD` (Phantom norms, opacus noise).
- ``paper_ghost``: untied d/2 model with a candidate-lookup output, paper-style Ghost (B·M² terms).
- ``opacus_ghost``: untied d/2 model with an ``nn.Linear`` head, opacus 1.6 ghost clipping.
- ``opacus_hooks``: tied model (module tie), opacus 1.6 per-sample gradients (B·M·d).

Memory is measured honestly by running each configuration in a fresh subprocess
(:func:`measure`): after setup (imports, model, batch) the kernel's peak-RSS mark is reset to the
current RSS (``/proc/self/clear_refs``), and after the warm-up and timed steps the peak (VmHWM,
the value ``getrusage().ru_maxrss`` reports) is read; the difference is the peak extra memory of a
training step. The subprocess runs with glibc's mmap threshold fixed (:data:`MMAP_THRESHOLD`): left
dynamic, glibc raises it after large frees and then keeps freed blocks in the heap, so how much of a
step's memory showed as new RSS depended on the process's allocation history (one configuration,
eight processes: 83-105 MB; Phantom / non-private at M = 2000 read 1.11 in one build and 1.62 in the
next). Fixed, every tensor of at least that size is its own mapping, returned on free: the
non-private step's peak then repeats within 0.3 MB, Phantom's within a few per cent
(:func:`memory_repeats`). Timing is the median over the timed steps (after one warm-up step) of the
process CPU time (``cpu_s``; robust on a machine shared with other jobs, exact for 1 thread) and of
the wall time (``step_s``), with a fixed number of torch threads. :func:`memory_model` is the analytic count of the same.

Phantom's speed against non-private training is not read off the sweep (one median of a few steps per
method, measured in separate processes at different times: two builds gave 2.57× and 1.39×). It is
timed by :func:`interleaved_speed`: both steps built in one process, warmed up, then ``repeats`` rounds
in which each method times ``steps_per_repeat`` steps, the order alternating (A B, B A, …:
:func:`interleaved_order`) so that a drift of the machine or a first/second position effect falls on
both alike. :func:`speed_vs_nonprivate` judges the per-repeat times by the paired t interval of the log
time ratio across repeats (:func:`privtrans.book.paired.paired_difference`).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence

from privtrans.book import dry

METHODS = ("nonprivate", "phantom", "paper_ghost", "opacus_ghost", "opacus_hooks")
SPEED_PAIR = ("phantom", "nonprivate")  # what the speed and memory claims compare: Phantom, its reference
SPEED_TIMING = "speed"  # the command line's method that runs interleaved_speed (speed_processes' children)
MMAP_THRESHOLD = 128 * 1024  # bytes: glibc's default starting value, here kept fixed (module docstring)


def random_batch(n_items: int, length: int, batch: int, seed: int = 0):
    """Item sequences with a zipf-ish popularity (repeats) and left padding; next-item targets.

    Needs integers n_items >= 1, length >= 2 and batch >= 1 (a ValueError naming the argument otherwise)."""
    import numbers

    import torch

    for name, value, low, why in (
            ("n_items", n_items, 1, " (item ids 1..n_items; 0 is the pad)"),
            ("length", length, 2, " (inputs and next-item targets are length + 1 draws, left padding up to "
                                  "length // 2 - 1)"),
            ("batch", batch, 1, "")):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise ValueError(f"random_batch: {name} must be an integer >= {low}{why}, got {value!r}")
    g = torch.Generator().manual_seed(seed)
    ranks = torch.arange(1, n_items + 1, dtype=torch.float64)
    seqs = torch.multinomial((1 / ranks).expand(batch, -1), length + 1, replacement=True, generator=g) + 1
    pads = torch.randint(0, length // 2, (batch,), generator=g)
    for i, p in enumerate(pads.tolist()):
        seqs[i, :p] = 0
    x, y = seqs[:, :-1].contiguous(), seqs[:, 1:].contiguous()
    y[x == 0] = 0
    return x, y


def make_step(method: str, n_items: int, length: int, batch: int, d: int = 64, *,
              max_entries: int | None = None, seed: int = 0, device: str = "cpu"):
    """Return a zero-argument function that performs one training step of `method` on `device`."""
    import torch

    from .sasrec import SASRec, per_sample_loss

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    torch.manual_seed(seed)
    x, y = (t.to(device) for t in random_batch(n_items, length, batch, seed))
    kw = dict(dropout=0.0)
    if method == "nonprivate":
        model = SASRec(n_items, length, d=d, **kw).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            per_sample_loss(model(x), y).mean().backward()
            opt.step()
        return step

    if method in ("phantom", "paper_ghost"):
        from .ghost_baseline import PaperGhostClipper, paper_ghost_model
        from privtrans.shared.dp.step import PhantomDPSGD

        if method == "phantom":
            model, clipper = SASRec(n_items, length, d=d, **kw).to(device), None
        else:
            model = paper_ghost_model(n_items, length, d=d, **kw).to(device)
            clipper = PaperGhostClipper(model, max_entries=max_entries, validate="never")
        dp = PhantomDPSGD(model, torch.optim.SGD(model.parameters(), lr=1e-3), noise_multiplier=1.0,
                          expected_batch_size=batch, sample_rate=0.01, clipper=clipper)

        def step():
            dp.step(lambda: per_sample_loss(model(x), y))
        return step

    from opacus.optimizers import DPOptimizer, DPOptimizerFastGradientClipping

    if method == "opacus_ghost":
        from opacus.grad_sample import GradSampleModuleFastGradientClipping
        from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping

        model = GradSampleModuleFastGradientClipping(
            SASRec(n_items, length, d=d // 2, tied=False, **kw).to(device), max_grad_norm=1.0,
            use_ghost_clipping=True, loss_reduction="sum")
        opt = DPOptimizerFastGradientClipping(
            torch.optim.SGD(model.parameters(), lr=1e-3), noise_multiplier=1.0, max_grad_norm=1.0,
            expected_batch_size=batch, loss_reduction="sum")

        def step():
            opt.zero_grad(set_to_none=True)
            losses = per_sample_loss(model(x), y)
            DPTensorFastGradientClipping(model, opt, losses, "sum").backward()
            opt.step()
        return step

    from opacus import GradSampleModule  # opacus_hooks

    model = GradSampleModule(SASRec(n_items, length, d=d, **kw).to(device), loss_reduction="sum")
    opt = DPOptimizer(torch.optim.SGD(model.parameters(), lr=1e-3), noise_multiplier=1.0,
                      max_grad_norm=1.0, expected_batch_size=batch, loss_reduction="sum")

    def step():
        opt.zero_grad(set_to_none=True)
        per_sample_loss(model(x), y).sum().backward()
        opt.step()
    return step


def _status_mb(key: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return None


def _reset_peak_rss() -> float:
    """Reset the kernel's peak-RSS mark to the current RSS (Linux ≥ 4.0); return the current RSS.

    Without this the peak left by imports (torch, opacus, scipy) would hide a small step's peak.
    Falls back to ru_maxrss (no reset) where /proc/self/clear_refs is unavailable."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status_mb("VmRSS")
    except OSError:
        return _peak_rss_mb()


def _peak_rss_mb() -> float:
    hwm = _status_mb("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_here(method, n_items, length, batch, d=64, steps=3, threads=1, max_entries=None,
             device="cpu") -> dict:
    """Build, warm up once, time `steps` steps in this process; peak RSS before and after.

    On a CUDA device the memory columns are torch.cuda.max_memory_allocated instead (setup =
    allocated after the model and batch are built) and times are synchronised wall times."""
    import torch

    torch.set_num_threads(threads)
    cuda = str(device).startswith("cuda")
    step = make_step(method, n_items, length, batch, d, max_entries=max_entries, device=device)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        rss_setup = torch.cuda.memory_allocated() / 2**20
    else:
        rss_setup = _reset_peak_rss()
    step()  # warm-up (Phantom also validates its factors against autograd here)
    times, cpu = [], []
    for _ in dry.loop(range(steps), "timed steps"):
        if cuda:
            torch.cuda.synchronize()
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else _peak_rss_mb()
    return dict(method=method, M=n_items, L=length, B=batch, d=d, threads=threads, device=str(device),
                step_s=statistics.median(times), step_s_all=times, cpu_s=statistics.median(cpu),
                cpu_s_all=cpu, rss_setup_mb=rss_setup,
                rss_peak_mb=peak, extra_mb=peak - rss_setup)


def _child(cmd: list[str], threads: int, timeout: float, what: str) -> dict:
    """Run this module's command line in a fresh interpreter with ``threads`` BLAS threads and glibc's
    mmap threshold fixed (read by glibc at start: see the module docstring); its last stdout line is JSON."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               MALLOC_MMAP_THRESHOLD_=str(MMAP_THRESHOLD))
    res = subprocess.run([sys.executable, "-m", "privtrans.dpformer.efficiency", *cmd], capture_output=True,
                         text=True, env=env, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{res.stderr[-2000:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    booking = out.pop("dry_booking", None)
    if booking is not None:  # a dry run: the child's cut loops are booked here, as an MPC party's are
        dry.absorb(booking)
    return {**out, "mmap_threshold": MMAP_THRESHOLD}


def measure(method, n_items, length, batch, d=64, steps=3, threads=1, max_entries=None,
            timeout=600, device="cpu") -> dict:
    """:func:`run_here` in a fresh Python process, so peak RSS belongs to this configuration only."""
    cmd = [method, str(n_items), str(length), str(batch), "--d", str(d), "--steps", str(steps),
           "--threads", str(threads), "--device", str(device)]
    if max_entries is not None:
        cmd += ["--max-entries", str(int(max_entries))]
    return _child(cmd, threads, timeout, f"{method} M={n_items} B={batch}")


def memory_model(method: str, n_items: int, length: int, batch: int, d: int = 64,
                 n_blocks: int = 2, bytes_per: int = 4) -> dict:
    """Analytic bytes of one step: shared activations + the method's clipping intermediates.

    Counts only the dominant terms (float32): logits, their softmax and gradient (3·B·L·M), the
    per-layer activations (~12·B·L·d per block), parameters (+ grads; exactly the trained model's:
    per block 6·d² weights and 10·d biases and LayerNorm entries, the final LayerNorm 2·d, the
    embeddings), and per method:
    Phantom: ~(2 per ghost Linear·6 per block + 5 for the tied embedding)·B·L² Gram entries and
    the logit gradient B·L·M, held until the clipped sum is formed;
    paper Ghost (d/2): the same held gradient, the candidate embedding and its grad 2·B·M·d/2, the M×M Gram and mask
    B·M²·(4 + 1) bytes; opacus ghost (d/2): Linear-head Gram 2·B·L² plus the same per-block terms;
    opacus hooks: per-sample grads of every parameter, tied embedding twice (B·(params + M·d)).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    b, t, m = batch, length, n_items + 1
    dd = d // 2 if method in ("paper_ghost", "opacus_ghost") else d
    # per block: q, k, v, out and the two FFN Linears (d×d + d each, ffn_dim = d), two LayerNorms (2·d each)
    block_params = n_blocks * (6 * dd * dd + 6 * dd + 2 * 2 * dd)
    final_ln = 2 * dd
    emb_params = m * dd * (2 if method in ("paper_ghost", "opacus_ghost") else 1) + t * dd
    params = block_params + final_ln + emb_params
    act = 3 * b * t * m + 12 * n_blocks * b * t * dd + 4 * b * t * dd
    clip = 0
    if method == "phantom":  # Gram matrices + the logit gradient held until the clipped sum
        clip = (2 * 6 * n_blocks + 5) * b * t * t + b * t * m
    elif method == "opacus_ghost":
        clip = (2 * 6 * n_blocks + 2 + 2) * b * t * t
    elif method == "paper_ghost":
        clip = (2 * 6 * n_blocks + 2) * b * t * t + b * t * m + 2 * b * m * dd + b * m * m * (1 + 1 / bytes_per)
    elif method == "opacus_hooks":
        clip = b * (params + m * dd)  # the tied item table once per module (lookup and head)
    total = bytes_per * (act + 2 * params + clip)
    per_sample = bytes_per * (act + clip) / b
    return dict(method=method, M=n_items, B=batch, total_bytes=total, per_sample_bytes=per_sample,
                clip_bytes=bytes_per * clip, fixed_bytes=bytes_per * 2 * params)


def max_batch(method: str, n_items: int, length: int, budget_bytes: float = 16e9, d: int = 64) -> int:
    """Largest B whose modelled step fits in `budget_bytes` (Figure 3a's 16 GB V100)."""
    mm = memory_model(method, n_items, length, 1, d)
    return int(max(0, (budget_bytes - mm["fixed_bytes"]) // mm["per_sample_bytes"]))


def _main(argv=None):
    ap = argparse.ArgumentParser(description="time and measure one Figure-3 configuration, or (method "
                                             f"{SPEED_TIMING!r}) time {' against '.join(SPEED_PAIR)} interleaved")
    ap.add_argument("method", choices=METHODS + (SPEED_TIMING,))
    ap.add_argument("M", type=int)
    ap.add_argument("L", type=int)
    ap.add_argument("B", type=int)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-entries", type=int, default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=2, help=f"{SPEED_TIMING}: interleaved rounds")
    ap.add_argument("--steps-per-repeat", type=int, default=1, help=f"{SPEED_TIMING}: timed steps per round")
    ap.add_argument("--seed", type=int, default=0, help=f"{SPEED_TIMING}: the batch's and models' seed")
    ap.add_argument("--methods", default=",".join(SPEED_PAIR), help=f"{SPEED_TIMING}: the two methods timed")
    a = ap.parse_args(argv)
    if a.method == SPEED_TIMING:
        out = interleaved_speed(a.M, a.L, a.B, a.d, repeats=a.repeats, steps_per_repeat=a.steps_per_repeat,
                                threads=a.threads, seed=a.seed, methods=a.methods.split(","),
                                max_entries=a.max_entries)
    else:
        out = run_here(a.method, a.M, a.L, a.B, a.d, a.steps, a.threads, a.max_entries, a.device)
    if dry.active():  # for the parent's tally (_child absorbs it)
        out["dry_booking"] = dry.booking()
    print(json.dumps(out))


def measure_all(configs: Sequence[Mapping], isolate: bool = True, parallel: int = 1) -> list[dict]:
    """:func:`measure` (or, not isolated, :func:`run_here`) for each configuration (keyword arguments),
    ``parallel`` fresh interpreters at a time, results in the order given. A peak RSS belongs to its own
    process whatever runs beside it; CPU time does not count waiting for a core, though two processes
    side by side share the cache. (Forking each process from one server that imported torch once would
    measure a configuration in about 1.5 s instead of 5, but a forked child timed Phantom / non-private at 1.48-1.54×
    where fresh interpreters gave 1.25-1.38×, and read 2-3 MB more extra memory: not the same measurement.)"""
    _check_parallel(parallel)
    if not isolate:  # one process: nothing to run side by side
        return [run_here(**c) for c in configs]
    # longest first (the paper-style Ghost's B·M² steps, then the methods that import opacus), so that no
    # long process is left running alone at the end while the other core idles
    order = sorted(range(len(configs)), key=lambda i: _expected_cost(configs[i]), reverse=True)
    done = dict(zip(order, _in_parallel(lambda i: measure(**configs[i]), order, parallel)))
    return [done[i] for i in range(len(configs))]


def _check_parallel(parallel) -> None:
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise ValueError(f"parallel must be a positive int (processes at a time), got {parallel!r}")


def _in_parallel(fn: Callable, items: Sequence, parallel: int) -> list:
    """``fn(item)`` for each item, ``parallel`` at a time, results in the order of ``items``: each call
    starts a child process (:func:`_child`), so the threads only wait on it."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(parallel) as pool:
        return list(pool.map(fn, items))


def _expected_cost(c: Mapping) -> tuple:
    """A sort key for how long :func:`measure` of a configuration runs (measured at ci shapes: paper-style
    Ghost 12-30 s at M = 2000-4000, the methods that import opacus about 9.5 s, non-private 5.5 s)."""
    ghost = c["method"] == "paper_ghost"
    return (c["batch"] * c["n_items"] ** 2 if ghost else 0, c["method"] != "nonprivate", c["n_items"])


def sweep(methods, Ms, length, batch, d=64, steps=3, threads=1, isolate=True,
          ghost_cap: float | None = None, parallel: int = 1,
          Ms_for: Mapping[str, Sequence[int]] | None = None) -> list[dict]:
    """Measure every (method, M), except that a method named in ``Ms_for`` is measured only at the Ms it
    lists (a subset of ``Ms``). The paper-style Ghost builds its B·M² terms in groups of at most
    `ghost_cap` entries when B·M² exceeds it (row flagged ``chunked``; its memory then is capped)."""
    Ms_for = dict(Ms_for or {})
    for method, at in Ms_for.items():
        if method not in methods or not at or not set(at) <= set(Ms):
            raise ValueError(f"Ms_for[{method!r}] = {at!r}: a method of {list(methods)} and a non-empty subset "
                             f"of Ms = {list(Ms)}")
    configs = []
    for m_items in Ms:
        for method in methods:
            if m_items not in Ms_for.get(method, Ms):
                continue
            cap = None
            if method == "paper_ghost" and ghost_cap is not None and batch * (m_items + 1) ** 2 > float(ghost_cap):
                cap = int(float(ghost_cap))
            n_steps = min(steps, 2) if method == "paper_ghost" else steps
            configs.append(dict(method=method, n_items=m_items, length=length, batch=batch, d=d, steps=n_steps,
                                threads=threads, max_entries=cap))
    rows = measure_all(configs, isolate, parallel)
    for c, r in zip(configs, rows):
        r["chunked"] = c["max_entries"] is not None
        r["isolated"] = isolate
        r["model_mb"] = memory_model(c["method"], c["n_items"], length, batch, d)["total_bytes"] / 2**20
    return rows


def memory_repeats(sweep_rows: Sequence[Mapping], repeats: int, parallel: int = 1) -> list[dict]:
    """Phantom's and the non-private step's extra peak memory measured ``repeats`` times at every M of
    the sweep: the sweep's own rows are repeat 0, each further repeat a fresh process per (method, M)
    with the sweep's settings (in this process where the sweep's were). Even with glibc's threshold fixed, Phantom's peak varies by a few per
    cent between processes (M = 4000: 75.7, 79.7, 80.2 MB), and its ratio to the non-private peak lies
    near the 1.5× the claim tests, so one process per point cannot settle it."""
    _check_repeats(repeats)
    first = [r for r in sweep_rows if r["method"] in SPEED_PAIR]
    if not first:
        raise ValueError(f"the sweep has no row of {list(SPEED_PAIR)}")
    isolate = all(r["isolated"] for r in first)
    configs = [dict(method=r["method"], n_items=r["M"], length=r["L"], batch=r["B"], d=r["d"],
                    steps=len(r["step_s_all"]), threads=r["threads"]) for r in first]
    rows = [{"method": r["method"], "M": r["M"], "repeat": 0, "extra_mb": r["extra_mb"]} for r in first]
    for rep in dry.loop(range(1, repeats), "memory repeats"):  # a dry run measures one more repeat
        rows += [{"method": c["method"], "M": c["n_items"], "repeat": rep, "extra_mb": r["extra_mb"]}
                 for c, r in zip(configs, measure_all(configs, isolate, parallel))]
    return rows


def memory_vs_nonprivate(rows: Sequence[Mapping], *, max_ratio: float = 1.5, confidence: float = 0.95) -> dict:
    """Phantom's extra peak memory against the non-private step's, per M, across repeated processes.

    Per M the paired t interval (:func:`~privtrans.book.paired.paired_difference`, repeats paired by
    index) of log(extra_nonprivate) − log(extra_phantom) against the margin −log(max_ratio), the form
    of :func:`speed_vs_nonprivate`: it clears the margin when the ratio's interval lies below
    ``max_ratio``. Extra memory is clipped at 1 MB, as in :func:`ratio_table`. Returns
    ``phantom_log_memory_vs_nonprivate`` ({"M = …": interval}), ``memory_ratio_phantom_nonprivate_by_M``
    ([{M, gm, lo, hi, repeats}]) and ``memory_repeats_extra_mb`` ({method: {M: [MB per repeat]}})."""
    _check_ratio(max_ratio, "max_ratio")
    private, reference = SPEED_PAIR
    extra: dict[str, dict[int, dict[int, float]]] = {private: {}, reference: {}}
    for r in rows:
        if r["method"] in extra:
            extra[r["method"]].setdefault(int(r["M"]), {})[int(r["repeat"])] = max(float(r["extra_mb"]), 1.0)
    Ms = sorted(set(extra[private]) | set(extra[reference]))
    if not Ms:
        raise ValueError(f"no measured row of {list(SPEED_PAIR)}")
    from privtrans.book.paired import paired_difference

    cells, by_M = {}, []
    for M in Ms:
        reps = sorted(set(extra[private].get(M, {})) | set(extra[reference].get(M, {})))
        tp = [extra[private].get(M, {}).get(k) for k in reps]
        tr = [extra[reference].get(M, {}).get(k) for k in reps]
        p = paired_difference([None if x is None else math.log(x) for x in tr],
                              [None if x is None else math.log(x) for x in tp],
                              margin=-math.log(max_ratio), confidence=confidence)
        cells[f"M = {M}"] = p.as_dict()
        by_M.append({"M": M, **_ratio_interval(p), "max_ratio": float(max_ratio)})
    return {"phantom_log_memory_vs_nonprivate": cells,
            "memory_ratio_phantom_nonprivate_by_M": by_M,
            "memory_repeats_extra_mb": {m: {str(M): [v[k] for k in sorted(v)] for M, v in per.items()}
                                        for m, per in extra.items()}}


def modelled_max_batch_table(methods, Ms, length: int, budget_gb: float, d: int = 64):
    """Figure 3a at the paper's scale: the modelled largest batch per (M, method) within
    ``budget_gb``, and the two ratios the paper quotes (Phantom over paper-style Ghost and over
    non-private), and, where ``methods`` has it, Phantom over opacus's ghost clipping of the untied d/2
    model (the modern library's ghost clipping, which needs no B·M² term)."""
    import pandas as pd

    rows = [dict(M=M, method=m, max_batch=max_batch(m, M, length, budget_gb * 1e9, d)) for M in Ms for m in methods]
    table = pd.DataFrame(rows).pivot(index="M", columns="method", values="max_batch")[list(methods)]
    _require_methods(table.columns, ("phantom", "paper_ghost", "nonprivate"), "the modelled table")
    table["Phantom / paper-style Ghost"] = table["phantom"] / table["paper_ghost"].clip(lower=1)
    table["Phantom / non-private"] = table["phantom"] / table["nonprivate"]
    if "opacus_ghost" in table.columns:
        table["Phantom / opacus ghost"] = table["phantom"] / table["opacus_ghost"]
    return table


RATIOS = {  # column: (measure, numerator, denominator)
    "time: paper Ghost / Phantom": ("cpu_s", "paper_ghost", "phantom"),
    "time: opacus ghost / Phantom": ("cpu_s", "opacus_ghost", "phantom"),
    "time: opacus hooks / Phantom": ("cpu_s", "opacus_hooks", "phantom"),
    "time: Phantom / non-private": ("cpu_s", "phantom", "nonprivate"),
    "memory: paper Ghost / Phantom": ("extra_mb", "paper_ghost", "phantom"),
    "memory: Phantom / non-private": ("extra_mb", "phantom", "nonprivate"),
}


def ratio_table(measured):
    """Figure 3's ratios per M from :func:`sweep`'s rows: CPU step time and extra peak memory (at
    least 1 MB, so a step that adds nothing measurable does not divide by 0), method over method."""
    import pandas as pd

    _require_methods(set(measured.method), {m for _, a, b in RATIOS.values() for m in (a, b)}, "the sweep")
    piv = {k: measured.pivot(index="M", columns="method", values=k) for k in ("cpu_s", "extra_mb")}
    piv["extra_mb"] = piv["extra_mb"].clip(lower=1)
    return pd.DataFrame({name: piv[k][a] / piv[k][b] for name, (k, a, b) in RATIOS.items()})


def _require_methods(present, needed, where: str) -> None:
    absent = sorted(set(needed) - set(present))
    if absent:
        raise ValueError(f"{where} lacks the method(s) {absent}: the Figure 3 ratios need them")


def loglog_slope(x, y) -> float:
    """Least-squares slope of log y on log x (the exponent of a power law)."""
    import numpy as np

    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    return float(np.polyfit(lx, ly, 1)[0]) if len(lx) >= 2 else float("nan")


# ------------------------------------------------------------------ Phantom's speed vs non-private
def _check_ratio(value, name: str) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")


def _ratio_interval(p) -> dict:
    """Phantom / reference as a ratio, from the paired interval of log(reference) − log(Phantom): the
    geometric mean and its interval (None where the interval has no value), and the repeats."""
    def ratio(x):
        return None if x is None else math.exp(-x)

    return {"gm": ratio(p.mean), "lo": ratio(p.hi), "hi": ratio(p.lo), "repeats": p.n}


def _check_repeats(repeats) -> int:
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 2:
        raise ValueError(f"repeats must be an integer >= 2 (a paired interval across repeats needs at least two), "
                         f"got {repeats!r}")
    return repeats


def interleaved_order(repeats: int, methods: Sequence[str] = SPEED_PAIR) -> list[tuple[str, str]]:
    """The order in which two methods are timed in each repeat: (A, B), (B, A), (A, B), …

    Alternating, so that a slow drift of the machine or an effect of running first or second
    (caches, the allocator, a neighbour's job) falls on both methods alike across the repeats."""
    _check_repeats(repeats)
    if isinstance(methods, str) or len(methods) != 2 or methods[0] == methods[1]:
        raise ValueError(f"methods must be two different names, got {methods!r}")
    a, b = methods
    return [(a, b) if i % 2 == 0 else (b, a) for i in range(repeats)]


def time_interleaved(steps: Mapping[str, Callable[[], None]], repeats: int, steps_per_repeat: int, *,
                     warmup: int = 1, clock: Callable[[], float] = time.process_time) -> dict:
    """Time two step functions in :func:`interleaved_order`: per repeat, each method runs
    ``steps_per_repeat`` consecutive steps, each timed by ``clock``, and its time in that repeat is
    their median (one step disturbed by a neighbour's job does not move it). Each method first runs
    ``warmup`` untimed steps (Phantom also validates its factors against autograd in its first step);
    garbage is collected once after the warm-up and the cycle collector is off while the rounds run.

    Returns {"order": [[first, second], …], "times": {method: [seconds per step, one per repeat]},
    "step_times": {method: [[every timed step's seconds], one list per repeat]}, "steps_per_repeat",
    "warmup"}."""
    methods = tuple(steps)
    order = interleaved_order(repeats, methods)
    if isinstance(steps_per_repeat, bool) or not isinstance(steps_per_repeat, int) or steps_per_repeat < 1:
        raise ValueError(f"steps_per_repeat must be a positive integer, got {steps_per_repeat!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")
    for m in methods:
        for _ in range(warmup):
            steps[m]()
    blocks: dict[str, list[list[float]]] = {m: [] for m in methods}
    ran = []  # the rounds run: all of ``order``, except in a dry run (privtrans.book.dry)
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()  # as timeit does: no cycle collection lands inside one method's timed steps
    try:
        for pair in dry.loop(order, "speed repeats", keep=2):  # two: the paired interval needs them
            ran.append(list(pair))
            for m in pair:
                block = []
                for _ in dry.loop(range(steps_per_repeat), "speed steps per repeat"):
                    t0 = clock()
                    steps[m]()
                    block.append(clock() - t0)
                blocks[m].append(block)
    finally:
        if was_enabled:
            gc.enable()
    return {"order": ran,
            "times": {m: [statistics.median(b) for b in bs] for m, bs in blocks.items()},
            "step_times": blocks, "steps_per_repeat": steps_per_repeat, "warmup": warmup}


def interleaved_speed(n_items: int, length: int, batch: int, d: int = 64, *, repeats: int,
                      steps_per_repeat: int, warmup: int = 1, threads: int = 1,
                      methods: Sequence[str] = SPEED_PAIR, seed: int = 0, max_entries: int | None = None,
                      clock: Callable[[], float] = time.process_time) -> dict:
    """:func:`time_interleaved` on real training steps (:func:`make_step`, same batch and seed for
    both methods) in this process with ``threads`` torch threads (restored afterwards). With one thread
    the process CPU time (the default clock) is the step's compute time, whatever else runs beside it.
    ``max_entries``: the paper-style Ghost's cap on the B·M² entries it builds at once (as in :func:`sweep`)."""
    import torch

    _check_repeats(repeats)
    _check_methods(methods)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        steps = {m: make_step(m, n_items, length, batch, d, seed=seed,
                              max_entries=max_entries if m == "paper_ghost" else None) for m in methods}
        out = time_interleaved(steps, repeats, steps_per_repeat, warmup=warmup, clock=clock)
    finally:
        torch.set_num_threads(before)
    out.update(M=n_items, L=length, B=batch, d=d, threads=threads, methods=list(methods))
    return out


def _check_methods(methods) -> None:
    if isinstance(methods, str) or len(methods) != 2 or len(set(methods)) != 2 or not set(methods) <= set(METHODS):
        raise ValueError(f"methods must be two different methods of {METHODS}, got {methods!r}")


def speed_processes(n_items: int, length: int, batch: int, d: int = 64, *, processes: int, repeats: int,
                    steps_per_repeat: int, threads: int = 1, isolate: bool = True, parallel: int = 1,
                    seed: int = 0, timeout: float = 600, methods: Sequence[str] = SPEED_PAIR,
                    max_entries: int | None = None) -> list[dict]:
    """:func:`interleaved_speed` in ``processes`` fresh interpreters (``parallel`` at a time; in this
    process, one after another, where not ``isolate``), each with its own ``repeats`` rounds.

    The process is the unit the speed claim is judged across (:func:`pool_processes`): the ratio a
    process times varies from process to process by more than its rounds vary within it (five
    processes of one build's setting read 1.28-1.57×, each with an interval of about ±10 %), so
    repeats inside one process cannot give an interval that a second build would repeat."""
    _check_repeats(processes)
    _check_repeats(repeats)
    _check_methods(methods)
    if not isolate:
        return [interleaved_speed(n_items, length, batch, d, repeats=repeats, steps_per_repeat=steps_per_repeat,
                                  threads=threads, seed=seed, methods=methods, max_entries=max_entries)
                for _ in dry.loop(range(processes), "speed processes", keep=2)]
    _check_parallel(parallel)
    cmd = [SPEED_TIMING, str(n_items), str(length), str(batch), "--d", str(d), "--threads", str(threads),
           "--repeats", str(repeats), "--steps-per-repeat", str(steps_per_repeat), "--seed", str(seed),
           "--methods", ",".join(methods)]
    if max_entries is not None:
        cmd += ["--max-entries", str(int(max_entries))]

    def one(_):
        return _child(cmd, threads, timeout, f"speed timing M={n_items} B={batch}")

    if dry.active():  # one at a time inside the cut loop, so that each kept process's time is scaled
        return [one(i) for i in dry.loop(range(processes), "speed processes", keep=2)]
    return _in_parallel(one, range(processes), parallel)


def pool_processes(runs: Sequence[Mapping], methods: Sequence[str] = SPEED_PAIR) -> dict:
    """Several :func:`interleaved_speed` runs (one per process) as one run whose repeats are the
    processes: each method's time in a process is the geometric mean of its per-round times, so the
    paired log difference of a process is the mean of its rounds' log differences, and
    :func:`speed_vs_nonprivate` then judges across processes. ``processes`` keeps each run (its order
    and every timed step); ``repeats_per_process`` and ``steps_per_repeat`` are the runs' own."""
    if isinstance(runs, Mapping) or not isinstance(runs, Sequence) or not runs:
        raise ValueError(f"runs must be a non-empty list of interleaved_speed results, got {type(runs).__name__}")
    times = {}
    for m in methods:
        per = []
        for r in runs:
            ts = (r.get("times") or {}).get(m) if isinstance(r, Mapping) else None
            if not ts or not all(isinstance(t, (int, float)) and math.isfinite(t) and t > 0 for t in ts):
                raise ValueError(f"each run needs positive per-round times of {m!r}, got {ts!r}")
            per.append(math.exp(statistics.fmean(math.log(t) for t in ts)))
        times[m] = per
    shape = {k: runs[0].get(k) for k in ("M", "L", "B", "d", "threads", "steps_per_repeat", "warmup")}
    return {"times": times, **shape, "repeats_per_process": [len(r["times"][methods[0]]) for r in runs],
            "processes": [{k: v for k, v in r.items() if k != "times"} for r in runs]}


def speed_vs_nonprivate(run: Mapping, *, max_time_ratio: float = 1.5, confidence: float = 0.95) -> dict:
    """Phantom's training speed relative to non-private training, judged across interleaved repeats.

    ``run``: what :func:`interleaved_speed` (or :func:`time_interleaved`) returned; its ``times`` hold
    one time per repeat for "phantom" and for "nonprivate".

    The paired t interval (:func:`~privtrans.book.paired.paired_difference`) of
    log(t_nonprivate) − log(t_phantom) over the repeats: the log of Phantom's relative speed, the
    quantity the paper states ("0.68× training speed of the non-private version"). Its margin is
    −log(max_time_ratio): the interval clears it when the time ratio's interval lies below
    ``max_time_ratio``. Logs, because a ratio's noise is multiplicative; exp of the interval gives the
    geometric-mean time ratio t_phantom / t_nonprivate and its interval.

    Returns the recorded values: ``phantom_log_speed_vs_nonprivate`` (the interval, as a dict),
    ``time_ratio_phantom_nonprivate_interleaved`` ({gm, lo, hi, …}), ``speed_times`` (the per-repeat
    seconds per step it was computed from) and ``speed_run`` (the rest of ``run``: the order, M, the
    steps per repeat and every timed step)."""
    if not isinstance(run, Mapping) or not isinstance(run.get("times"), Mapping):
        raise ValueError("run must be interleaved_speed's result, a mapping with the per-repeat 'times' of "
                         f"each method; got {type(run).__name__}")
    times = run["times"]
    _check_ratio(max_time_ratio, "max_time_ratio")
    private, reference = SPEED_PAIR
    for m in (private, reference):
        if m not in times:
            raise ValueError(f"the timings lack the method {m!r} (have {sorted(times)})")
    tp, tr = list(times[private]), list(times[reference])
    if len(tp) != len(tr):
        raise ValueError(f"one time per repeat for each method, got {len(tp)} for {private} and {len(tr)} for "
                         f"{reference}")
    _check_repeats(len(tp))
    bad = [t for t in tp + tr if not (isinstance(t, (int, float)) and math.isfinite(t) and t > 0)]
    if bad:
        raise ValueError(f"step times must be positive finite seconds, got {bad[:3]}")
    from privtrans.book.paired import paired_difference

    p = paired_difference([math.log(t) for t in tr], [math.log(t) for t in tp],
                          margin=-math.log(max_time_ratio), confidence=confidence)
    return {
        "phantom_log_speed_vs_nonprivate": p.as_dict(),
        "time_ratio_phantom_nonprivate_interleaved": {
            **_ratio_interval(p), "confidence": confidence, "max_time_ratio": float(max_time_ratio)},
        "speed_times": {private: [float(t) for t in tp], reference: [float(t) for t in tr]},
        "speed_run": {k: v for k, v in run.items() if k != "times"},
    }


GHOST_PAIR = ("paper_ghost", "phantom")  # the speed-up the paper quotes against Ghost Clipping


def ghost_speedup(runs_by_M: Mapping[int, Sequence[Mapping]], *, confidence: float = 0.95) -> dict:
    """The paper-style Ghost's step time over Phantom's at each M, judged across fresh processes.

    ``runs_by_M``: {M: :func:`speed_processes` results with ``methods=GHOST_PAIR``}. Per process the
    log time ratio log(t_ghost) − log(t_phantom) is the mean over its interleaved rounds
    (:func:`pool_processes`); per M its paired t interval across the processes
    (:func:`~privtrans.book.paired.paired_difference`), and the growth from the smallest M to the
    largest as the paired interval of the two Ms' log ratios, process k of one with process k of the
    other (the processes are independent and alike, so the pairing is by index). A ratio's noise is
    multiplicative, hence logs; exp of an interval is the geometric-mean ratio and its interval.

    Returns ``ghost_log_speedup_by_M`` ({"M = …": interval}), ``ghost_log_speedup_at_max_M``,
    ``ghost_log_speedup_growth`` (largest M − smallest M), ``time_ratio_ghost_phantom_interleaved``
    ([{M, gm, lo, hi, processes}]) and ``ghost_speed_times`` ({M: {method: [s per step per process]}})."""
    from privtrans.book.paired import paired_difference

    if not isinstance(runs_by_M, Mapping) or len(runs_by_M) < 1:
        raise ValueError("runs_by_M must map each M to its speed_processes results")
    slow, fast = GHOST_PAIR
    logs, cells, shown, times = {}, {}, [], {}
    for M in sorted(runs_by_M):
        pooled = pool_processes(runs_by_M[M], GHOST_PAIR)
        ts, tf = pooled["times"][slow], pooled["times"][fast]
        logs[M] = [math.log(a) - math.log(b) for a, b in zip(ts, tf)]
        p = paired_difference(logs[M], [0.0] * len(logs[M]), confidence=confidence)
        cells[f"M = {M}"] = p.as_dict()
        shown.append({"M": int(M), "gm": math.exp(p.mean),
                      "lo": None if p.lo is None else math.exp(p.lo),
                      "hi": None if p.hi is None else math.exp(p.hi), "processes": p.n})
        times[str(M)] = {slow: [float(t) for t in ts], fast: [float(t) for t in tf]}
    small, large = min(logs), max(logs)
    n = max(len(logs[small]), len(logs[large]))  # a process one M lacks is a lost pair, never dropped
    pad = lambda xs: list(xs) + [None] * (n - len(xs))  # noqa: E731
    growth = (paired_difference(pad(logs[large]), pad(logs[small]), confidence=confidence).as_dict()
              if large != small else paired_difference([], []).as_dict())
    return {"ghost_log_speedup_by_M": cells,
            "ghost_log_speedup_at_max_M": cells[f"M = {large}"],
            "ghost_log_speedup_growth": {**growth, "from_M": int(small), "to_M": int(large)},
            "time_ratio_ghost_phantom_interleaved": shown,
            "ghost_speed_times": times}


if __name__ == "__main__":  # last: the command line calls functions defined above
    _main()
