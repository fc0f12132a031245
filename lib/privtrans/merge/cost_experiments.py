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

from privtrans.shared.mpc import runner
from privtrans.shared.mpc.meter import GROUPS, Meter

#: a link like the paper's (10 GbE) for the modelled network time: bytes / B + rounds * RTT
LAN = dict(bandwidth=1.25e9, rtt=2e-4)


def _prefix(vocab: int, length: int, seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (length,), generator=g).tolist()


def cost_jobs(jobs: list, seed: int = 0) -> list:
    """Party function: run each job, return [{**job, "meter": {...}}]. A job is a dict with
    ``kind`` ("generate" | "encode"), ``variant``, ``sizes`` (GPTConfig fields; with
    ``n_enc_layers`` the encoder-decoder, which also needs ``src``, the source length), ``prefix``,
    ``n_new`` (generate) or ``length`` (encode)."""
    from privtrans.shared.mpc.parties import build_model, secure_twin

    out = []
    for job in jobs:
        model, decoding = build_model(job["variant"], job["sizes"], seed)
        meter = Meter()
        sg = secure_twin(model, meter)
        with meter.total():
            if job["kind"] == "encode":  # BERT-like: one bidirectional pass over the sequence
                ids = _prefix(model.cfg.vocab_size, job["length"], seed)
                sg.layers(sg.embed(sg.onehot(torch.tensor(ids))), [{} for _ in range(model.cfg.n_layers)],
                          0, causal=False)
            else:
                prefix = torch.tensor(_prefix(model.cfg.vocab_size, job["prefix"], seed))
                src = (torch.tensor(_prefix(model.cfg.vocab_size, job["src"], seed + 1)),) if "src" in job else ()
                sg.generate(*src, prefix, job["n_new"], job.get("decoding", decoding))
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
                             arch="encdec" if "n_enc_layers" in a["sizes"] else "gpt",
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
    from privtrans.book.paths import data_dir

    path = data_dir("merge", root) / "paper_tables.csv"
    with open(path, newline="") as f:
        return pd.DataFrame(list(csv.DictReader(f))).astype({"value": float})


def summary(df: pd.DataFrame, variants: list, n_new: int, labels: dict, base: str = "crypten") -> pd.DataFrame:
    """Totals per variant with the ratios that transfer (bytes, rounds) and those that do not (seconds)."""
    b = pivot(df, "bytes").loc[variants, "Total"]
    r = pivot(df, "rounds").loc[variants, "Total"]
    s = pivot(df, "seconds").loc[variants, "Total"]
    lan = pivot(df, "net_seconds").loc[variants, "Total"]
    return pd.DataFrame({
        "variant": [labels[v] for v in variants],
        "KiB/party": b.values / 1024,
        "fraction of CrypTen bytes": (b / b[base]).values,
        "rounds": r.values,
        "rounds/token": r.values / n_new,
        "rounds ratio CrypTen/variant": (r[base] / r).values,
        "loopback s": s.values,
        "speed-up (loopback)": (s[base] / s).values,
        "modelled LAN s": lan.values,
        "speed-up (LAN model)": (lan[base] / lan).values,
    }, index=pd.Index(variants, name="key"))


def closed_form_vs_paper(shape, model: str, variants: list, labels: dict, root: Path | None = None) -> pd.DataFrame:
    """The closed-form bytes (GiB per party) at a paper shape beside the paper's Table 2 row."""
    from privtrans.shared.mpc import cost_model

    paper = paper_table(root)
    p2 = paper[(paper.table == "Table 2") & (paper.model == model)].set_index(["variant", "group", "metric"])["value"]
    cf = pd.DataFrame(cost_model.table(shape, variants))
    out = {"variant": [labels[v] for v in cf.variant]}
    for g in ("Embed", "Linear", "Softmax", "Total"):
        out[f"{g} GiB (closed form)"] = cf[f"{g}_GiB"].values
        out[f"{g} GiB (paper)"] = [p2[(v, g, "GiB")] for v in cf.variant]
    out["fraction (closed form)"] = cf["fraction"].values
    out["fraction (paper)"] = [p2[(v, "Total", "fraction_pct")] / 100 for v in cf.variant]
    return pd.DataFrame(out, index=pd.Index(list(cf.variant), name="key"))
