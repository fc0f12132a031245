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
training step. Timing is the median over the timed steps (after one warm-up step) of the
process CPU time (``cpu_s``; robust on a machine shared with other jobs, exact for 1 thread) and of
the wall time (``step_s``), with a fixed number of torch threads. :func:`memory_model` is the analytic count of the same.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

METHODS = ("nonprivate", "phantom", "paper_ghost", "opacus_ghost", "opacus_hooks")


def random_batch(n_items: int, length: int, batch: int, seed: int = 0):
    """Item sequences with a zipf-ish popularity (repeats) and left padding; next-item targets."""
    import torch

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
    for _ in range(steps):
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


def measure(method, n_items, length, batch, d=64, steps=3, threads=1, max_entries=None,
            timeout=600, device="cpu") -> dict:
    """:func:`run_here` in a fresh Python process, so peak RSS belongs to this configuration only."""
    cmd = [sys.executable, "-m", "privtrans.dpformer.efficiency", method, str(n_items), str(length),
           str(batch), "--d", str(d), "--steps", str(steps), "--threads", str(threads),
           "--device", str(device)]
    if max_entries is not None:
        cmd += ["--max-entries", str(int(max_entries))]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"{method} M={n_items} B={batch} failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def memory_model(method: str, n_items: int, length: int, batch: int, d: int = 64,
                 n_blocks: int = 2, bytes_per: int = 4) -> dict:
    """Analytic bytes of one step: shared activations + the method's clipping intermediates.

    Counts only the dominant terms (float32): logits, their softmax and gradient (3·B·L·M), the
    per-layer activations (~12·B·L·d per block), parameters (+ grads), and per method:
    Phantom: ~(2 per ghost Linear·6 per block + 5 for the tied embedding)·B·L² Gram entries and
    the logit gradient B·L·M, held until the clipped sum is formed;
    paper Ghost (d/2): the same held gradient, the candidate embedding and its grad 2·B·M·d/2, the M×M Gram and mask
    B·M²·(4 + 1) bytes; opacus ghost (d/2): Linear-head Gram 2·B·L² plus the same per-block terms;
    opacus hooks: per-sample grads of every parameter, tied embedding twice (B·2·M·d) + the rest.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    b, t, m = batch, length, n_items + 1
    dd = d // 2 if method in ("paper_ghost", "opacus_ghost") else d
    block_params = n_blocks * (6 * dd * dd + 12 * dd)
    emb_params = m * dd * (2 if method in ("paper_ghost", "opacus_ghost") else 1) + t * dd
    params = block_params + emb_params
    act = 3 * b * t * m + 12 * n_blocks * b * t * dd + 4 * b * t * dd
    clip = 0
    if method == "phantom":  # Gram matrices + the logit gradient held until the clipped sum
        clip = (2 * 6 * n_blocks + 5) * b * t * t + b * t * m
    elif method == "opacus_ghost":
        clip = (2 * 6 * n_blocks + 2 + 2) * b * t * t
    elif method == "paper_ghost":
        clip = (2 * 6 * n_blocks + 2) * b * t * t + b * t * m + 2 * b * m * dd + b * m * m * (1 + 1 / bytes_per)
    elif method == "opacus_hooks":
        clip = b * (2 * m * dd + block_params + t * dd)
    total = bytes_per * (act + 2 * params + clip)
    per_sample = bytes_per * (act + clip) / b
    return dict(method=method, M=n_items, B=batch, total_bytes=total, per_sample_bytes=per_sample,
                clip_bytes=bytes_per * clip, fixed_bytes=bytes_per * 2 * params)


def max_batch(method: str, n_items: int, length: int, budget_bytes: float = 16e9, d: int = 64) -> int:
    """Largest B whose modelled step fits in `budget_bytes` (Figure 3a's 16 GB V100)."""
    mm = memory_model(method, n_items, length, 1, d)
    return int(max(0, (budget_bytes - mm["fixed_bytes"]) // mm["per_sample_bytes"]))


def _main(argv=None):
    ap = argparse.ArgumentParser(description="time and measure one Figure-3 configuration")
    ap.add_argument("method", choices=METHODS)
    ap.add_argument("M", type=int)
    ap.add_argument("L", type=int)
    ap.add_argument("B", type=int)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-entries", type=int, default=None)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args(argv)
    print(json.dumps(run_here(a.method, a.M, a.L, a.B, a.d, a.steps, a.threads, a.max_entries,
                              a.device)))


if __name__ == "__main__":
    _main()


def sweep(methods, Ms, length, batch, d=64, steps=3, threads=1, isolate=True,
          ghost_cap: float | None = None) -> list[dict]:
    """Measure every (method, M). The paper-style Ghost builds its B·M² terms in groups of at most
    `ghost_cap` entries when B·M² exceeds it (row flagged ``chunked``; its memory then is capped)."""
    rows = []
    for m_items in Ms:
        for method in methods:
            cap = None
            if method == "paper_ghost" and ghost_cap is not None and batch * (m_items + 1) ** 2 > float(ghost_cap):
                cap = int(float(ghost_cap))
            n_steps = min(steps, 2) if method == "paper_ghost" else steps
            if isolate:
                r = measure(method, m_items, length, batch, d, n_steps, threads, cap)
            else:
                r = run_here(method, m_items, length, batch, d, n_steps, threads, cap)
            r["chunked"] = cap is not None
            r["isolated"] = isolate
            r["model_mb"] = memory_model(method, m_items, length, batch, d)["total_bytes"] / 2**20
            rows.append(r)
    return rows


def modelled_max_batch_table(methods, Ms, length: int, budget_gb: float, d: int = 64):
    """Figure 3a at the paper's scale: the modelled largest batch per (M, method) within
    ``budget_gb``, and the two ratios the paper quotes (Phantom over paper-style Ghost and over
    non-private)."""
    import pandas as pd

    rows = [dict(M=M, method=m, max_batch=max_batch(m, M, length, budget_gb * 1e9, d)) for M in Ms for m in methods]
    table = pd.DataFrame(rows).pivot(index="M", columns="method", values="max_batch")[list(methods)]
    _require_methods(table.columns, ("phantom", "paper_ghost", "nonprivate"), "the modelled table")
    table["Phantom / paper-style Ghost"] = table["phantom"] / table["paper_ghost"].clip(lower=1)
    table["Phantom / non-private"] = table["phantom"] / table["nonprivate"]
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
