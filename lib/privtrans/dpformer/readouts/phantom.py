"""Claim 3.1 and Figure 3: Phantom Clipping's per-sample norms equal brute force, and what it costs
in memory and time against ghost clipping and non-private training.
"""

from __future__ import annotations

import pandas as pd

from privtrans.book.readouts import num

from .. import claim31, efficiency
from .runs import _increasing, _require


def claim31_phantom_exact(errors: pd.DataFrame, ghost_message: str, functional_tie: dict,
                          clipped_errors: dict, n_samples: int) -> dict:
    """Max relative norm error of each variant (``claim31.rel_errors``), what opacus and Phantom do
    with a tie, and the error of the noise-free clipped gradient (per clipping mode)."""
    _require(errors, claim31.VARIANTS, "the relative-error table")
    if errors.empty or not clipped_errors or n_samples < 1:
        raise ValueError("no sample was checked")
    err = {m: float(errors[m].max()) for m in claim31.VARIANTS}
    return {
        "phantom_max_rel_err": err["phantom"],
        "phantom_float32_max_rel_err": err["phantom_float32"],
        "no_cross_max_rel_err": err["no_cross_term"],
        "paper_eq2_max_rel_err": err["paper_eq2_as_printed"],
        "opacus_hooks_max_rel_err": err["opacus_hooks"],
        "opacus_ghost_refuses_tie": claim31.opacus_refuses_tie(ghost_message),
        "opacus_functional_tie_max_underestimate": claim31.functional_tie_underestimate(functional_tie),
        "phantom_refuses_functional_tie": claim31.phantom_refuses(functional_tie),
        "clipped_grad_max_rel_err": float(max(clipped_errors.values())),
        "n_samples_checked": int(n_samples),
    }


def fig3_memory_speed(measured: pd.DataFrame, modelled: pd.DataFrame, isolated: bool) -> dict:
    """Figure 3's ratios (``efficiency.ratio_table``) and power-law slopes of extra memory in M.

    The paper-style Ghost's slope uses only its unchunked points (a chunked run's memory is capped).
    """
    _require(measured, ["method", "M", "cpu_s", "extra_mb", "chunked"], "the measured sweep")
    ratios = efficiency.ratio_table(measured)
    tr = [float(v) for v in ratios["time: paper Ghost / Phantom"]]
    ghost = measured[(measured.method == "paper_ghost") & ~measured.chunked.astype(bool)]
    phantom = measured[measured.method == "phantom"]
    return {
        "Ms": [int(m) for m in ratios.index],
        "time_ratio_ghost_phantom": tr,
        "time_ratio_ghost_phantom_increasing": _increasing(tr),
        "time_ratio_ghost_phantom_at_max_M": tr[-1],
        "time_ratio_phantom_nonprivate": [float(v) for v in ratios["time: Phantom / non-private"]],
        "time_ratio_hooks_phantom_at_max_M": float(ratios["time: opacus hooks / Phantom"].iloc[-1]),
        "memory_ratio_phantom_nonprivate_max": float(ratios["memory: Phantom / non-private"].max()),
        "memory_ratio_ghost_phantom": [float(v) for v in ratios["memory: paper Ghost / Phantom"]],
        "ghost_memory_loglog_slope": num(efficiency.loglog_slope(ghost.M, ghost.extra_mb.clip(lower=1))),
        "phantom_memory_loglog_slope": num(efficiency.loglog_slope(phantom.M, phantom.extra_mb.clip(lower=1))),
        "ghost_unchunked_points": int(len(ghost)),
        "isolated": bool(isolated),
        "modelled_max_batch_ratio": [float(v) for v in modelled["Phantom / paper-style Ghost"]],
        # the same per vocabulary size, so that a claim can pick the paper's datasets' M by value
        "modelled_max_batch_by_M": [
            {"M": int(M), "phantom_over_ghost": float(r["Phantom / paper-style Ghost"]),
             "phantom_over_nonprivate": num(r["Phantom / non-private"]) if "Phantom / non-private" in r else None,
             # Phantom against the modern library's ghost clipping (opacus, untied d/2), same memory model
             "phantom_batch": int(r["phantom"]) if "phantom" in r else None,
             "opacus_ghost_batch": int(r["opacus_ghost"]) if "opacus_ghost" in r else None,
             "phantom_over_opacus_ghost": num(r["Phantom / opacus ghost"]) if "Phantom / opacus ghost" in r else None}
            for M, r in modelled.iterrows()],
    }


def fig3_memory_vs_nonprivate(rows) -> dict:
    """Phantom's extra peak memory against the non-private step's, per M, across repeated processes
    (``efficiency.memory_repeats``): per M the paired t interval of log(extra_nonprivate / extra_phantom)
    against −log 1.5, and the geometric-mean ratio with its interval (``efficiency.memory_vs_nonprivate``)."""
    return efficiency.memory_vs_nonprivate(list(rows))


def fig3_ghost_speed(runs_by_M: dict) -> dict:
    """The paper-style Ghost's step time over Phantom's, timed in interleaved rounds in each of several
    fresh processes at the sweep's smallest and largest M (``efficiency.speed_processes`` with
    ``methods=efficiency.GHOST_PAIR``): per M the paired t interval across the processes of the log
    time ratio, and its growth from the smallest M to the largest (``efficiency.ghost_speedup``)."""
    return efficiency.ghost_speedup(runs_by_M)


def fig3_speed_vs_nonprivate(runs: list) -> dict:
    """Phantom's step time against the non-private step's, timed in interleaved rounds in each of several
    fresh processes (``efficiency.speed_processes``): the paired t interval across the processes of the
    log speed ratio log(t_nonprivate / t_phantom) (each process: the mean over its rounds;
    ``efficiency.pool_processes``) against −log 1.5, and the geometric-mean time ratio with its interval
    (``efficiency.speed_vs_nonprivate``)."""
    return efficiency.speed_vs_nonprivate(efficiency.pool_processes(runs))
