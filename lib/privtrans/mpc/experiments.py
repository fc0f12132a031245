"""The cost experiments of the MERGE chapter (Figure 1, Tables 1-2, Figure 4), shared by its notebooks.

Each notebook makes *one* ``runner.run`` call (process start-up is paid once) with a list of jobs;
the party function ``cost_jobs`` runs them in order and returns the per-group meter of each.
Weights are random (variance-preserving), as in the paper's speed benchmark (which used all-ones
weights): cost does not depend on the values, and ``tests/test_mpc_*`` check correctness.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import torch

from . import runner
from .meter import GROUPS, Meter

#: a link like the paper's (10 GbE) for the modelled network time: bytes / B + rounds * RTT
LAN = dict(bandwidth=1.25e9, rtt=2e-4)


def _prefix(vocab: int, length: int, seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (length,), generator=g).tolist()


def cost_jobs(jobs: list, seed: int = 0) -> list:
    """Party function: run each job, return [{**job, "meter": {...}}]. A job is a dict with
    ``kind`` ("generate" | "encode"), ``variant``, ``sizes`` (GPTConfig fields), ``prefix``,
    ``n_new`` (generate) or ``length`` (encode)."""
    from .layers import SecureGPT
    from .parties import build_model

    out = []
    for job in jobs:
        model, decoding = build_model(job["variant"], job["sizes"], seed)
        meter = Meter()
        sg = SecureGPT(model, meter)
        with meter.total():
            if job["kind"] == "encode":  # BERT-like: one bidirectional pass over the sequence
                ids = _prefix(model.cfg.vocab_size, job["length"], seed)
                sg.layers(sg.embed(sg.onehot(torch.tensor(ids))), [{} for _ in range(model.cfg.n_layers)],
                          0, causal=False)
            else:
                prefix = _prefix(model.cfg.vocab_size, job["prefix"], seed)
                sg.generate(torch.tensor(prefix), job["n_new"], job.get("decoding", decoding))
        out.append({**job, "meter": meter.summary()})
    return out


def run_jobs(jobs: list, seed: int = 0, timeout: float = 900.0) -> pd.DataFrame:
    """Run the jobs as two parties; one row per (job, group) with rank 0's and rank 1's meters.

    Bytes and rounds are identical on both parties (checked); seconds are the max of the two.
    """
    res = runner.run(cost_jobs, jobs, seed, timeout=timeout)
    rows = []
    for i, (a, b) in enumerate(zip(*res)):
        for group, m in a["meter"].items():
            mb = b["meter"][group]
            if (m["bytes"], m["rounds"]) != (mb["bytes"], mb["rounds"]):
                raise RuntimeError(f"parties disagree on communication of job {i} group {group}")
            rows.append(dict(job=i, kind=a["kind"], variant=a["variant"], n_new=a.get("n_new"),
                             layers=a["sizes"].get("n_layers"), group=group,
                             seconds=max(m["seconds"], mb["seconds"]), rounds=m["rounds"],
                             bytes=m["bytes"], calls=m["calls"]))
    df = pd.DataFrame(rows)
    df["net_seconds"] = modelled_time(df["bytes"], df["rounds"])
    return df


def modelled_time(nbytes, rounds, bandwidth: float = LAN["bandwidth"], rtt: float = LAN["rtt"]):
    """Communication time on a LAN like the paper's (10 GbE): bytes / bandwidth + rounds x RTT."""
    return nbytes / bandwidth + rounds * rtt


def pivot(df: pd.DataFrame, value: str, index=("variant",)) -> pd.DataFrame:
    """Groups as columns (the paper's order), Total last."""
    t = df.pivot_table(index=list(index), columns="group", values=value, aggfunc="sum", fill_value=0)
    cols = [g for g in GROUPS if g in t.columns] + ["Total"]
    return t[cols]


def paper_table(root: Path | None = None) -> pd.DataFrame:
    """data/merge/paper_tables.csv: the paper's Tables 1 and 2 (cited in its ``source`` column)."""
    from ..paths import data_dir

    path = data_dir("merge", root) / "paper_tables.csv"
    with open(path, newline="") as f:
        return pd.DataFrame(list(csv.DictReader(f))).astype({"value": float})
