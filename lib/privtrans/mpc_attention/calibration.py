"""The LAN model of this chapter, calibrated on the paper's own baselines before it judges a time claim.

The paper prints seconds (Table 1, SPU ABY3, one attention layer at a shape it does not state) and
speed-ups (Table 2, the whole BERT model), never the rounds or bytes behind them. A time claim is
judged here only through a link whose two parameters (bandwidth, per-round latency) were fitted to
the paper's numbers for its **baselines** (prior art) with our counted rounds and bytes, and which
then predicts a baseline row held out of the fit (named before any fit was run) within
:data:`privtrans.shared.mpc.network.TOLERANCE` (10 %). The rows of the paper's method (freeDiv) are
neither fitted nor validated on: they are what the calibrated link judges, so a verdict against the
paper stays possible. The fit is
:func:`privtrans.shared.mpc.network.calibrate` (``scipy.optimize.least_squares``), the same one that
calibrates MERGE's link. Otherwise the claim is not judged, and the page says by how much the
best communication-only link misses the paper's own held-out rows. The stated LAN (10 Gbit/s,
0.2 ms a round) stays as a second, labelled reading that judges nothing.

* **Table 1** (:func:`table1_link`): our counts of one attention layer at the largest n measured,
  seconds from Table 1. Fitted: Softmax, 2ReLU, Scaling (:data:`T1_FIT`); held out: 2Quad
  (:data:`T1_HELD_OUT`, MPCFormer's, the baseline the near-tie claim compares with).
* **Tables 2 and 3** (:func:`table2_link`): our whole-model counts per (attention, activation);
  the paper's time of each row relative to Softmax + GeLU is 1 / its speed-up. Fitted: the rows
  without freeDiv but MPCFormer's 2Quad + Quad, which is held out (:data:`T2_HELD_OUT`).
"""

from __future__ import annotations

from privtrans.book.paper_values import lookup
from privtrans.shared.mpc.network import TOLERANCE, Calibration, Cell, calibrate

#: Table 1's prior-art attentions: fitted, and held out (the freeDiv rows are judged, not used)
T1_FIT = ("softmax", "2relu", "scaling")
T1_HELD_OUT = ("2quad",)
#: Table 2's baseline row held out of the fit (the other rows without freeDiv are fitted)
T2_HELD_OUT = ("2quad+quad",)
FREEDIV_NAMES = ("softmax_freediv", "2quad_freediv")


def _P(root=None):
    return lookup("mpc_attention", root)


def table1_link(counts: dict, label: str, root=None) -> Calibration:
    """``counts``: {attention: (bytes, rounds)} of one attention layer (the largest n measured).
    The link fitted to Table 1's seconds of :data:`T1_FIT` and validated on :data:`T1_HELD_OUT`."""
    P = _P(root)
    missing = [v for v in T1_FIT + T1_HELD_OUT if v not in counts]  # the judged rows are read, not fitted
    if missing:
        raise ValueError(f"table1_link: no counts for {missing}; it needs {list(T1_FIT + T1_HELD_OUT)}")

    def cell(v):
        b, r = counts[v]
        return Cell(v, float(b), float(r), P("paper_tables", "value", table="Table 1", attention=v, column="latency_s"))

    return calibrate([cell(v) for v in T1_FIT], [cell(v) for v in T1_HELD_OUT], TOLERANCE,
                     label=f"fitted to Table 1's seconds of {', '.join(T1_FIT)} ({label})")


def table2_link(counts: dict, label: str, root=None) -> Calibration:
    """``counts``: {"attention+activation": (bytes, rounds)} of the whole model. The link fitted to
    the paper's relative times (1 / Table 2's speed-up; Softmax + GeLU = 1) of the rows without
    freeDiv but :data:`T2_HELD_OUT`, and validated on that. Its seconds are in units of the paper's
    Softmax + GeLU."""
    P = _P(root)

    def cell(k):
        a, f = k.split("+")
        s = P("paper_tables", "value", table="Table 2", attention=a, activation=f, column="speedup")
        b, r = counts[k]
        return Cell(k, float(b), float(r), 1.0 / s)

    base = [k for k in counts if k.split("+")[0] not in FREEDIV_NAMES]
    fit = [cell(k) for k in base if k not in T2_HELD_OUT]
    held = [cell(k) for k in base if k in T2_HELD_OUT]
    return calibrate(fit, held, TOLERANCE,
                     label=f"fitted to Table 2's relative times of its baselines ({label})")


def record(cal: Calibration | ValueError) -> dict:
    """What a notebook records of a calibration (the claims' precondition compares its
    ``max_held_out_error`` with its ``tolerance``, so a not-judged reason shows both); a fit that could
    not give a link (``calibrate``'s ValueError) is recorded as not calibrated, with why."""
    if isinstance(cal, ValueError):
        return {"calibrated": False, "max_held_out_error": None, "tolerance": TOLERANCE,
                "status": f"not calibrated: {cal}"}
    return {**cal.summary(), "fitted": [c.name for c in cal.fitted], "held_out": [c.name for c in cal.held_out]}


def fitted(fit, *args, **kwargs) -> Calibration | ValueError:
    """``fit(*args, **kwargs)``, or the ValueError that says why these cells give no link."""
    try:
        return fit(*args, **kwargs)
    except ValueError as e:
        return e


def seconds(cal: Calibration | ValueError, nbytes, rounds) -> float | None:
    """Time on the fitted link (Table 2's: in units of the paper's Softmax + GeLU); None without one."""
    return None if isinstance(cal, ValueError) else float(cal.link.seconds(nbytes, rounds))


def shown(records: dict) -> "pd.DataFrame":
    """One row per link ({name: ``record``}): parameters, residuals, held-out errors, status."""
    import pandas as pd

    rows = []
    for name, r in records.items():
        rows.append({"link": name, "GB/s": r.get("bandwidth_GBps"), "ms a round": r.get("rtt_ms"),
                     "fitted": ", ".join(r.get("fitted", [])),
                     "residuals (s)": {k: round(v, 4) for k, v in (r.get("residuals_s") or {}).items()},
                     "held out": ", ".join(r.get("held_out", [])),
                     "held-out error": {k: f"{v:+.1%}" for k, v in (r.get("held_out_errors") or {}).items()},
                     "calibrated": r.get("calibrated"), "status": r.get("status")})
    return pd.DataFrame(rows)
