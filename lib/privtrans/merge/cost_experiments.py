"""The cost experiments of the MERGE chapter (Figure 1, Tables 1-2, Figure 4), shared by its notebooks.

Each notebook makes *one* ``runner.run`` call (process start-up is paid once) with a list of jobs;
the party function ``cost_jobs`` runs them in order and returns the per-group meter of each.
Weights are random (variance-preserving), as in the paper's speed benchmark (which used all-ones
weights): cost does not depend on the values, and ``tests/test_mpc_*`` check correctness.

The tables the notebooks show are built here; what they record is in ``readouts``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import torch

from privtrans.book import dry
from privtrans.shared.models.plain_gpt import VARIANT_LABELS
from privtrans.shared.mpc import closed_form_cost, runner
from privtrans.shared.mpc.meter import GROUPS, Meter
from privtrans.shared.mpc.network import LAN, STATED_LAN, Link, modelled_time  # noqa: F401 - the stated 10 GbE link


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
            rows.append(dict(job=i, kind=a["kind"], variant=a["variant"], n_new=a.get("n_new"), sweep=a.get("sweep"),
                             timing_round=a.get("timing_round"), arch="encdec" if "n_enc_layers" in a["sizes"] else "gpt",
                             layers=a["sizes"].get("n_layers"), group=group,
                             seconds=max(m["seconds"], mb["seconds"]), rounds=m["rounds"],
                             bytes=m["bytes"], calls=m["calls"]))
    df = pd.DataFrame(rows)
    df["net_seconds"] = modelled_time(df["bytes"], df["rounds"])
    return df


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


def summary(df: pd.DataFrame, variants: list, n_new: int, labels: dict = VARIANT_LABELS,
            base: str = "crypten") -> pd.DataFrame:
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


def closed_form_vs_paper(shape, model: str, variants: list, labels: dict = VARIANT_LABELS,
                         root: Path | None = None, graph=closed_form_cost.OURS) -> pd.DataFrame:
    """The closed-form bytes (GiB per party) of ``graph`` at a paper shape beside the paper's Table 2 row."""
    paper = paper_table(root)
    p2 = paper[(paper.table == "Table 2") & (paper.model == model)].set_index(["variant", "group", "metric"])["value"]
    cf = pd.DataFrame(closed_form_cost.table(shape, variants, graph))
    out = {"variant": [labels[v] for v in cf.variant]}
    for g in ("Embed", "Linear", "Softmax", "Total"):
        out[f"{g} GiB (closed form)"] = cf[f"{g}_GiB"].values
        out[f"{g} GiB (paper)"] = [p2[(v, g, "GiB")] for v in cf.variant]
    out["fraction (closed form)"] = cf["fraction"].values
    out["fraction (paper)"] = [p2[(v, "Total", "fraction_pct")] / 100 for v in cf.variant]
    return pd.DataFrame(out, index=pd.Index(list(cf.variant), name="key"))


def labelled(t: pd.DataFrame, scale: float = 1.0) -> pd.DataFrame:
    """A per-variant table for display: values / ``scale``, variants by their labels."""
    out = (t / scale).reset_index()
    out["variant"] = out["variant"].map(VARIANT_LABELS)
    return out


# ---------------------------------------------------------------------------------------------
# Figure 1
# ---------------------------------------------------------------------------------------------

ENCODER, GENERATOR = "encoder (one pass)", "generator (greedy decoding)"


def fig1_jobs(cfg: dict) -> list:
    """Figure 1's runs: one encoder pass and one generation per timing round, interleaved (encode,
    generate, encode, ...) so that a drift of the shared machine's load falls on both alike. Bytes and
    rounds are the same in every round; the loopback seconds are not, and the rounds are the
    repetitions the time-share claims are judged across."""
    n = int(cfg["timing_rounds"])
    if n < 2:
        raise ValueError(f"Figure 1 needs at least two timing rounds to judge a time share, got timing_rounds={n!r}")
    out = []
    # a dry run keeps two rounds, as it keeps two paired seeds (and books the others)
    for r in dry.seeds(list(range(n))):
        out += [dict(kind="encode", variant=cfg["variant"], sizes=cfg["sizes"], length=cfg["enc_length"], timing_round=r),
                dict(kind="generate", variant=cfg["variant"], sizes=cfg["sizes"], prefix=cfg["prefix"],
                     n_new=cfg["n_new"], timing_round=r)]
    return out


def fig1_round_shares(df: pd.DataFrame) -> dict[int, pd.DataFrame]:
    """{timing round: the share of each group in the encoder's and the generator's loopback seconds}
    (``fig1_shares(...)["seconds"]`` of that round's two runs)."""
    if "timing_round" not in df or df["timing_round"].isna().any():
        raise ValueError("Figure 1's runs carry no timing round (make them with fig1_jobs)")
    return {int(r): fig1_shares(g)["seconds"] for r, g in df.groupby("timing_round")}


def fig1_shares(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """{"seconds" | "bytes" | "rounds": share of each group in the encoder's and the generator's
    total (rows ``ENCODER``, ``GENERATOR``)}. A group the meter never entered has no column."""
    df = df.assign(model=df["kind"].map({"encode": ENCODER, "generate": GENERATOR}))
    out = {}
    for value in ("seconds", "bytes", "rounds"):
        t = pivot(df, value, index=("model",)).drop(columns="Total")
        total = t.sum(axis=1)
        if (total <= 0).any():
            raise ValueError(f"a run metered no {value} at all: {total.to_dict()}")
        out[value] = t.div(total, axis=0)
    return out


def shares_table(shares: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The shares side by side, one column per (quantity, group), for display."""
    t = pd.concat(shares, axis=1).round(3).reset_index()
    t.columns = [" ".join(c).strip() if isinstance(c, tuple) else c for c in t.columns]
    return t


# ---------------------------------------------------------------------------------------------
# closed form at the measured shapes
# ---------------------------------------------------------------------------------------------


def shape_of(sizes: dict, prefix: int, n_new: int, src: int | None = None):
    """The ``closed_form_cost`` shape of a job's model (``sizes``: GPTConfig fields; with ``n_enc_layers``
    the encoder-decoder, reading ``src`` source tokens)."""
    common = dict(vocab=sizes["vocab_size"], d=sizes["d_model"], heads=sizes["n_heads"], prefix=prefix, n_new=n_new)
    if "n_enc_layers" in sizes:
        if src is None:
            raise ValueError("an encoder-decoder shape needs the source length src")
        return closed_form_cost.EncDecShape(enc_layers=sizes["n_enc_layers"], dec_layers=sizes["n_layers"], src=src, **common)
    return closed_form_cost.Shape(layers=sizes["n_layers"], **common)


def network_speedups(shape, variants: list, link: Link = STATED_LAN, graph=closed_form_cost.OURS) -> dict:
    """{variant: CrypTen's modelled communication time / the variant's} at ``shape`` (a paper shape),
    from closed-form bytes and rounds of ``graph`` on ``link`` (the calibrated one judges,
    ``privtrans.merge.calibration``): the speed-up the protocol fixes, free of the loopback clock,
    which on one shared CPU follows round counts and flips run to run."""
    t = {}
    for v in ["crypten", *variants]:
        c = closed_form_cost.generation_cost(shape, v, graph=graph)["Total"]
        t[v] = link.seconds(c["bytes"], c["rounds"])
    return {v: float(t["crypten"] / t[v]) for v in variants}


def network_group_times(shape, variants: list, link: Link = STATED_LAN) -> dict:
    """{variant: {group: modelled communication seconds}} at ``shape`` (closed-form bytes and rounds
    of each operation group on ``link``): the analogue of Table 1's communication-time column, per
    group (Embed, Linear, Softmax, Norm, Act, Gen, Other, Total)."""
    out = {}
    for v in variants:
        c = closed_form_cost.generation_cost(shape, v)
        out[v] = {g: float(link.seconds(x["bytes"], x["rounds"])) for g, x in c.items()}
    return out


#: one encoder pass of BERT-base (Figure 1(a, b)): V = 30522, d = 768, 12 layers, 128 tokens
BERT_BASE = dict(vocab=30522, d=768, layers=12, heads=12, d_ff=3072, length=128)
#: the groups of one encoder pass (a prefix pass without the LM head, sampling and reveal)
ENCODER_GROUPS = ("Embed", "Linear", "Softmax", "Norm", "Act")


def encoder_network_speedups(variants: list, vocab: int, d: int, layers: int, heads: int, d_ff: int,
                             length: int, link: Link = STATED_LAN) -> dict:
    """{variant: CrypTen's modelled communication time / the variant's} for ONE bidirectional
    encoder pass over ``length`` tokens (no generation): the closed form's prefix pass (``prefix =
    length``, one step), without the LM head, argmax and reveal that follow it. A public attention
    mask is local in 2PC, so the causal prefix pass costs what a bidirectional pass does."""
    shape = closed_form_cost.Shape(vocab=vocab, d=d, layers=layers, heads=heads, d_ff=d_ff, prefix=length, n_new=1)
    t = {}
    for v in ["crypten", *variants]:
        c = closed_form_cost.generation_cost(shape, v)
        t[v] = sum(link.seconds(c[g]["bytes"], c[g]["rounds"]) for g in ENCODER_GROUPS)
    return {v: t["crypten"] / t[v] for v in variants}


def length_reading(lengths: list, link: Link, graph=closed_form_cost.OURS) -> dict:
    """Figure 4's upper row at GPT-2 on ``link`` with the baselines run as ``graph`` (ER+MM always
    as ours): {"merge" | "thex": {length: speed-up over CrypTen}, "fraction": {length: ER+MM's
    bytes over CrypTen's}} (``closed_form_cost.NO_KV_CACHE``: App. C.1's baselines without a KV cache)."""
    out = {"merge": {}, "thex": {}, "fraction": {}}
    for n in lengths:
        shape = closed_form_cost.with_length(closed_form_cost.GPT2, n)
        sp = network_speedups(shape, ["merge", "thex"], link, graph)
        out["merge"][n], out["thex"][n] = sp["merge"], sp["thex"]
        out["fraction"][n] = (closed_form_cost.generation_cost(shape, "merge", graph=graph)["Total"]["bytes"]
                              / closed_form_cost.generation_cost(shape, "crypten", graph=graph)["Total"]["bytes"])
    return out


def size_sweep_network(layers: list, variants: list, d: int = 768, vocab: int = 50257, total: int = 128,
                       link: Link = STATED_LAN) -> pd.DataFrame:
    """Figure 4 (lower row): GPT-2 width (d = 768, V = 50257) at depth ``layers``, generating to
    length ``total``; per depth the parameters (M), each variant's modelled speed-up over CrypTen
    (closed-form bytes and rounds on ``link``) and its closed-form GiB per party."""
    rows = []
    for L in layers:
        shape = closed_form_cost.Shape(vocab=vocab, d=d, layers=L, heads=12, d_ff=4 * d, prefix=4, n_new=total - 4)
        sp = network_speedups(shape, [v for v in variants if v != "crypten"], link)
        row = {"layers": L, "params (M)": shape.params / 1e6}
        for v in variants:
            row[f"{v} speed-up"] = 1.0 if v == "crypten" else sp[v]
            row[f"{v} GiB"] = closed_form_cost.generation_cost(shape, v)["Total"]["bytes"] / closed_form_cost.GIB
        rows.append(row)
    return pd.DataFrame(rows)


def closed_form_totals(shape, variants: list) -> dict:
    """{variant: closed-form total bytes per party} at ``shape``."""
    return {v: closed_form_cost.generation_cost(shape, v)["Total"]["bytes"] for v in variants}


def measured_over_closed_form(bytes_t: pd.DataFrame, shape, variants: list) -> pd.DataFrame:
    """Measured / closed-form bytes per (variant, group); NaN where the closed form is 0."""
    rows = []
    for v in variants:
        model = closed_form_cost.generation_cost(shape, v)
        for g in ("Embed", "Linear", "Softmax", "Norm", "Act", "Gen", "Total"):
            m = bytes_t.loc[v, g] if g in bytes_t.columns else 0  # a group never entered sent nothing
            rows.append(dict(variant=v, group=g, ratio=m / model[g]["bytes"] if model[g]["bytes"] else float("nan")))
    return pd.DataFrame(rows).pivot(index="variant", columns="group", values="ratio").reset_index()


def byte_saving(base_bytes: float, variant_bytes: float, left_out: float = 0.0) -> float:
    """1 - variant / base, after taking ``left_out`` bytes (a cost both pay, e.g. the argmax) off both."""
    return 1 - (variant_bytes - left_out) / (base_bytes - left_out)


# ---------------------------------------------------------------------------------------------
# Figure 4
# ---------------------------------------------------------------------------------------------

WITH_ARGMAX, WITHOUT_ARGMAX = "every operation", "without the argmax (the paper's accounting)"


def length_ratios(df: pd.DataFrame) -> pd.DataFrame:
    """The length sweep: ER+MM's time speed-up, rounds ratio and byte fraction per generated length."""
    tot = df[(df.sweep == "length") & (df.group == "Total")]
    w = tot.pivot_table(index="n_new", columns="variant", values=["seconds", "bytes", "rounds"])
    return pd.DataFrame({
        "generated tokens": w.index,
        "time speed-up ER+MM": (w["seconds"]["crypten"] / w["seconds"]["merge"]).values,
        "rounds ratio CrypTen/ER+MM": (w["rounds"]["crypten"] / w["rounds"]["merge"]).values,
        "bytes fraction ER+MM": (w["bytes"]["merge"] / w["bytes"]["crypten"]).values,
    })


def depth_table(df: pd.DataFrame) -> pd.DataFrame:
    """The depth sweep: CrypTen and ER+MM seconds and KiB per number of layers."""
    tot = df[(df.sweep == "layers") & (df.group == "Total")]
    w = tot.pivot_table(index="layers", columns="variant", values=["seconds", "bytes"])
    return pd.DataFrame({
        "layers": w.index,
        "CrypTen s": w["seconds"]["crypten"].values, "ER+MM s": w["seconds"]["merge"].values,
        "time speed-up": (w["seconds"]["crypten"] / w["seconds"]["merge"]).values,
        "CrypTen KiB": w["bytes"]["crypten"].values / 1024, "ER+MM KiB": w["bytes"]["merge"].values / 1024,
        "bytes fraction": (w["bytes"]["merge"] / w["bytes"]["crypten"]).values,
    })


def embed_bytes(df: pd.DataFrame) -> pd.Series:
    """Embed bytes per (variant, n_new) of the length sweep: one entry per run (0 for a run that
    never entered Embed); a run that did not happen has no entry."""
    t = pivot(df[df.sweep == "length"], "bytes", index=("variant", "n_new"))
    return t["Embed"] if "Embed" in t.columns else pd.Series(0, index=t.index, name="Embed")


def closed_form_sweeps(lengths: list, layers: list, length_variants=("crypten", "mpcformer_sf2relu", "only_er", "merge"),
                       layer_variants=("crypten", "merge")) -> pd.DataFrame:
    """Closed-form GiB and rounds at GPT-2 (124M) for each total length, and at length 128 with
    d = 768, V = 50257 for each depth (x = parameters in millions)."""
    rows = []

    def add(sweep, x, v, shape):
        c = closed_form_cost.generation_cost(shape, v)
        rows.append(dict(sweep=sweep, x=x, variant=v, GiB=c["Total"]["bytes"] / closed_form_cost.GIB,
                         embed_GiB=c["Embed"]["bytes"] / closed_form_cost.GIB, rounds=c["Total"]["rounds"]))

    for total in lengths:
        for v in length_variants:
            add("length", total, v, closed_form_cost.with_length(closed_form_cost.GPT2, total))
    for L in layers:
        shape = closed_form_cost.Shape(vocab=50257, d=768, layers=L, heads=12, d_ff=3072, prefix=4, n_new=124)
        for v in layer_variants:
            add("params", shape.params / 1e6, v, shape)
    return pd.DataFrame(rows)


def closed_form_length_table(cf: pd.DataFrame, root: Path | None = None) -> pd.DataFrame:
    """GiB per variant and length (closed form), ER+MM's fraction, and the paper's Figure 4 values
    read off the plot (``paper_tables.csv``)."""
    t = cf[cf.sweep == "length"].pivot(index="x", columns="variant", values="GiB")
    t["ER+MM fraction"] = t["merge"] / t["crypten"]
    paper = paper_table(root)
    f4 = paper[paper.table == "Figure 4"].assign(x=lambda p: p.group.str.split().str[-1].astype(int))
    for v, label in (("crypten", "CrypTen GiB (paper, read off)"), ("merge", "ER+MM GiB (paper, read off)")):
        t[label] = f4[f4.variant == v].set_index("x")["value"]
    return t


def bytes_saved_at_length(sizes: dict, prefix: int, total: int = 64) -> pd.DataFrame:
    """Closed-form MiB of CrypTen and ER+MM generating to ``total`` positions, and ER+MM's saving,
    counting every operation and without the argmax that reveals the tokens (the paper's graph
    stops at the logits)."""
    shape = shape_of(sizes, prefix, total - prefix)
    argmax = closed_form_cost.rowop_cost("argmax", shape.n_new, shape.vocab)[0]
    tot = closed_form_totals(shape, ["crypten", "merge"])
    rows = []
    for count, left_out in ((WITH_ARGMAX, 0), (WITHOUT_ARGMAX, argmax)):
        rows.append({"count": count, "CrypTen MiB": (tot["crypten"] - left_out) / 2**20,
                     "ER+MM MiB": (tot["merge"] - left_out) / 2**20,
                     "bytes saved by ER+MM": byte_saving(tot["crypten"], tot["merge"], left_out)})
    return pd.DataFrame(rows)
