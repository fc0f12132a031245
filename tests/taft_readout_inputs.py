"""Hand-made inputs for the tests of privtrans.taft.readouts (no training), shared by its test files."""

from __future__ import annotations

import pandas as pd

from privtrans.book import claims
from privtrans.book.session import _jsonable


CLAIMS = {c["id"]: c for c in claims.load("taft")["claims"]}


SEEDS = [0, 1, 2]


NOISE = [0.004, -0.003, 0.001]


def row(claim_id: str, values: dict, profile: str = "ci") -> dict:
    c = CLAIMS[claim_id]
    (r,) = claims.evaluate("taft", {"claims": [c]}, {c["notebook"]: {"profile": profile, "values": _jsonable(values)}},
                           profile)
    return r


def verdict(claim_id: str, values: dict, profile: str = "ci") -> str:
    return row(claim_id, values, profile)["verdict"]


# ------------------------------------------------------------------------------------ Table 1
def table1_runs(taft_near=0.97, taft_far=0.55):
    acc = {("digits", "FC"): 0.94, ("digits", "NLFT-1"): 0.97, ("digits", "TAFT-1"): taft_near,
           ("digits", "NLFT-2"): 0.98, ("digits", "TAFT-2"): 0.98, ("digits", "TAFT-1 (paper setting)"): 0.91,
           ("letters", "FC"): 0.46, ("letters", "NLFT-1"): 0.60, ("letters", "TAFT-1"): taft_far,
           ("letters", "NLFT-2"): 0.68, ("letters", "TAFT-2"): 0.60, ("letters", "TAFT-1 (paper setting)"): 0.43}
    return pd.DataFrame([{"task": t, "method": m, "seed": s, "accuracy": a + e}
                         for (t, m), a in acc.items() for s, e in zip(SEEDS, NOISE)])


# ------------------------------------------------------------------------------------ Table 2 / 10
def composition_runs(gap_by_n, tasks=("digits", "letters")):
    return pd.DataFrame([{"task": t, "shards": n, "method": m, "seed": s, "accuracy": 0.8 + (g if m == "TAFT" else 0) + e}
                         for t in tasks for n, g in gap_by_n.items() for m in ("TAFT", "Soup")
                         for s, e in zip(SEEDS, NOISE if m == "TAFT" else [0, 0, 0])])


# ------------------------------------------------------------------------------------ Table 11
def gap(g, n):
    return g[n] if isinstance(g, dict) else g


def table11_runs(gaps, diff=None):
    """TAFT ahead of each method by ``gaps[method]`` (a number, or one per N); ``diff``: composed − ensemble."""
    diff = diff or {"TAFT": 1e-6, "Adapter": 0.02, "LoRA": 0.03, "Soup": 0.01}
    return pd.DataFrame([{"task": "letters", "shards": n, "method": m, "seed": s, "composed_minus_ensemble": diff[m],
                          "accuracy": 0.6 - gap(gaps.get(m, 0.0), n) + (e if m == "TAFT" else 0)}
                         for n in (10, 25, 50) for m in ("TAFT", "Adapter", "LoRA", "Soup")
                         for s, e in zip(SEEDS, NOISE)])


# ------------------------------------------------------------------------------------ Figures 1 and 3
def forgetting_frames(drop_at_half=0.01, paragon_gap=0.02, sisa_gap=0.05):
    curves = pd.DataFrame([{"task": t, "seed": s, "removed": r, "method": m,
                            "accuracy": 0.9 - drop_at_half * r / 25 - (gap(sisa_gap, r) if m == "SISA" else 0) + e}
                           for t in ("digits", "letters") for s, e in zip(SEEDS, NOISE) for r in (0, 25, 45)
                           for m in ("TAFT", "SISA")])
    retrain = pd.DataFrame([{"task": t, "seed": s, "fraction": f, "method": m, "seconds": 10.0 if m[0] == "P" else 5.0,
                             "shard_seconds": None if m[0] == "P" else 0.1,
                             "accuracy": 0.9 - (paragon_gap if m[0] == "T" and f > 0 else 0) + e}
                            for t in ("digits", "letters") for s, e in zip(SEEDS[:2], NOISE[:2]) for f in (0.0, 0.5)
                            for m in ("TAFT shard retraining", "Paragon NLFT-1")])
    return curves, retrain


# ------------------------------------------------------------------------------------ Table 3
def dp_runs(gap_by_cell, tasks=("digits",), regimes=("full", "ln"), seeds=SEEDS, noise=NOISE):
    """Ours ahead of NLFT by ``gap_by_cell(task, eps, regime)``; the seeds' noise on Ours only."""
    return pd.DataFrame([{"task": t, "epsilon": e, "regime": r if m != "FC" else "head", "method": m, "seed": s,
                          "accuracy": 0.5 + (gap_by_cell(t, e, r) + x if m == "Ours" else 0)}
                         for t in tasks for e in (1, 3, 8) for r in regimes for m in ("Ours", "NLFT", "FC")
                         for s, x in zip(seeds, noise)])


# ------------------------------------------------------------------------------------ null tests
# A = B plus independent noise on each side, 6 seeds: no claim of an effect may be held.
NULL_SEEDS = list(range(6))


def _noise(rng, sd=0.01):
    return float(rng.normal(0.0, sd))


def _not_held(claim_ids, rec, profile="ci"):
    """A null is judged and not held: "not judged" would mean the readout lost the value, not a pass."""
    got = {c: verdict(c, rec, profile) for c in claim_ids}
    assert all(v in ("inconclusive", "contradicted") for v in got.values()), got
