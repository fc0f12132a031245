"""What each MERGE notebook records: its experiment's output in, the dict for ``nb.record`` out.

One function per notebook that records values, named after its experiment. Every value that a
claim in ``data/merge/claims*.yaml`` reads is made here, so the comparisons the claims rest on
(which variant is fastest, which row is closer to the teacher, what counts as stable) are written
once and tested on small hand-made tables (``tests/test_merge_readouts.py``).

Missing data never becomes a number. A run or row that the experiment should have produced and did
not raises ``MissingResult``; a value that cannot be computed from what exists (the metrics of a
model whose training diverged, a ratio over zero) is None, and so is every aggregate over it: the
claims engine then reports the claim as not judged.
"""

from __future__ import annotations

import pandas as pd

from privtrans.book.paired import paired_difference
from privtrans.book.readouts import num, ratio, strict
from privtrans.shared.models.plain_gpt import VARIANT_LABELS

from . import cost_experiments
from . import quality_experiments

BASE = "crypten"
BASELINES = ("mpcformer_sf2relu", "mpcformer_sf2quad", "thex")  # softmax/activation substitutes only
#: the existing methods of Figure 4 (lower row): vanilla CrypTen and the softmax/activation substitutes
EXISTING = (BASE, *BASELINES)
MPCFORMER = ("mpcformer_sf2relu", "mpcformer_sf2quad")
ER_VARIANTS = ("only_er", "merge")
MM_VARIANTS = ("only_mm", "merge")
#: the variants whose comparisons the Tables 1-2 claims make
TABLES12_VARIANTS = (BASE, *BASELINES, "merge", "only_er", "only_mm")
#: the encoder-decoder variants whose measured rows the claims read (t2_t5_saves_more_than_gpt,
#: t2_encdec_fraction_matches_closed_form): `ci` measures only these; `paper` all of TABLES12_VARIANTS
ENCDEC_CLAIMED = (BASE, "merge")
NONLINEAR = ("Softmax", "Act", "Norm")
EMBED_GEN = ("Embed", "Gen")
#: Figure 5: the relative-MSE band where the paper's vanilla curve breaks down ("over 0.05")
MID_MSE = (0.05, 0.35)


class MissingResult(LookupError):
    """A run or row the experiment should have produced is absent."""


# ---------------------------------------------------------------------------------------------
# small rules used by several readouts
# ---------------------------------------------------------------------------------------------


def _need(have, want, what: str):
    missing = [w for w in want if w not in set(have)]
    if missing:
        raise MissingResult(f"{what}: nothing for {missing} (have {sorted(map(str, set(have)))})")


def _cut(value, base) -> float | None:
    """1 - value / base: the share of ``base`` that is gone; None when base is 0."""
    r = ratio(value, base)
    return None if r is None else 1 - r


def _is_best(values: dict, key: str, best=max) -> bool:
    """Is ``values[key]`` the best (max or min) of ``values``? Ties count as best."""
    _need(values, [key], "comparison")
    return values[key] == best(values.values())


def _group(t: pd.DataFrame, row: str, group: str) -> float:
    """One cell of a per-group table; a group the meter never entered (no column) cost nothing."""
    _need(t.index, [row], "per-group table")
    return float(t.loc[row, group]) if group in t.columns else 0.0


def _share(t: pd.DataFrame, row: str, groups) -> float:
    return sum(_group(t, row, g) for g in groups)


#: what a link calibration record holds (``network.Calibration.summary``)
LINK_FIELDS = ("bandwidth_GBps", "rtt_ms", "residuals_s", "held_out_errors", "max_held_out_error", "tolerance",
               "calibrated", "status")


def link_record(link: dict) -> dict:
    """The calibration of the link the time claims are judged on (``calibration.paper_link().summary()``):
    its parameters, residuals, held-out errors and whether it is calibrated (the claims' precondition)."""
    _need(link, LINK_FIELDS, "link calibration")
    return {"link_calibration": {k: link[k] for k in LINK_FIELDS}}


# ---------------------------------------------------------------------------------------------
# cost notebooks
# ---------------------------------------------------------------------------------------------


def fig1_time_breakdown(shares: dict[str, pd.DataFrame]) -> dict:
    """Figure 1 from ``cost_experiments.fig1_shares``: the nonlinear share of the encoder pass and
    the Embed + Gen share of generation, in time and in bytes, and the largest group's share of
    each pass's time (the paper's Figure 1 is time only: "more balanced" = a smaller largest share)."""
    s, b = shares["seconds"], shares["bytes"]
    for t in (s, b):
        _need(t.index, [cost_experiments.ENCODER, cost_experiments.GENERATOR], "Figure 1 shares")
    return dict(
        enc_time_share_largest=float(s.loc[cost_experiments.ENCODER].max()),
        gen_time_share_largest=float(s.loc[cost_experiments.GENERATOR].max()),
        enc_time_largest_group=str(s.loc[cost_experiments.ENCODER].idxmax()),
        gen_time_largest_group=str(s.loc[cost_experiments.GENERATOR].idxmax()),
        enc_time_share_softmax_act_norm=_share(s, cost_experiments.ENCODER, NONLINEAR),
        enc_time_share_softmax_act=_share(s, cost_experiments.ENCODER, ("Softmax", "Act")),
        gen_time_share_embed_gen=_share(s, cost_experiments.GENERATOR, EMBED_GEN),
        gen_byte_share_embed_gen=_share(b, cost_experiments.GENERATOR, EMBED_GEN),
        enc_byte_share_embed_gen=_share(b, cost_experiments.ENCODER, EMBED_GEN),
        gen_time_shares=s.loc[cost_experiments.GENERATOR].to_dict(),
        gen_byte_shares=b.loc[cost_experiments.GENERATOR].to_dict(),
    )


#: Figure 1(c)'s "non-trivial time consumption" from embedding query and token sampling, read as
#: Embed + Gen taking at least a quarter of generation's time (the donut's, read off, is about half)
EMBED_GEN_NONTRIVIAL = 0.25


def fig1_time_rounds(by_round: dict[int, pd.DataFrame]) -> dict:
    """Figure 1(b, c)'s time claims across the timing rounds (``cost_experiments.fig1_round_shares``:
    {round: time shares of the encoder pass and of generation}). Loopback seconds vary run to run,
    so each round gives one reading of every share and the claims are judged on t intervals across
    the rounds, never on one run: ``enc_nonlinear_time_share`` is the interval of the encoder's
    Softmax + Act + Norm share (against 0: the claim's margin is the share it asks);
    ``gen_time_balanced`` the intervals of the encoder's largest share − generation's (paired by
    round) and of generation's Embed + Gen share − ``EMBED_GEN_NONTRIVIAL``."""
    if len(by_round) < 2:
        raise MissingResult(f"Figure 1's time shares need two timing rounds or more, got {sorted(by_round)}")
    rounds = sorted(by_round)
    for r in rounds:
        _need(by_round[r].index, [cost_experiments.ENCODER, cost_experiments.GENERATOR], f"Figure 1 time shares of round {r}")
    nonlinear = [_share(by_round[r], cost_experiments.ENCODER, NONLINEAR) for r in rounds]
    enc_largest = [float(by_round[r].loc[cost_experiments.ENCODER].max()) for r in rounds]
    gen_largest = [float(by_round[r].loc[cost_experiments.GENERATOR].max()) for r in rounds]
    embed_gen = [_share(by_round[r], cost_experiments.GENERATOR, EMBED_GEN) for r in rounds]
    n = len(rounds)
    return dict(
        timing_rounds=n,
        enc_time_share_softmax_act_norm_by_round=nonlinear,
        enc_time_share_largest_by_round=enc_largest,
        gen_time_share_largest_by_round=gen_largest,
        gen_time_share_embed_gen_by_round=embed_gen,
        enc_nonlinear_time_share=paired_difference(nonlinear, [0.0] * n).as_dict(),
        gen_time_balanced={
            "largest share: encoder − generation": paired_difference(enc_largest, gen_largest).as_dict(),
            f"Embed + Gen share − {EMBED_GEN_NONTRIVIAL}": paired_difference(embed_gen,
                                                                            [EMBED_GEN_NONTRIVIAL] * n).as_dict()},
    )


def fig1a_speedups(encoder: dict, generation: dict, link: dict) -> dict:
    """Figure 1(a) from ``cost_experiments.encoder_network_speedups`` (one BERT-base encoder pass)
    and ``network_speedups`` (GPT-2 generation) on the calibrated link (``link``: its calibration):
    each variant's modelled speed-up over CrypTen on both, and MPCformer's (both softmax
    substitutes) smallest on the encoder, largest on generation."""
    _need(encoder, MPCFORMER, "encoder-pass speed-ups")
    _need(generation, MPCFORMER, "generation speed-ups")
    return dict(
        **link_record(link),
        encoder_speedups={v: float(x) for v, x in encoder.items()},
        generation_speedups={v: float(x) for v, x in generation.items()},
        mpcformer_min_speedup_encoder=min(float(encoder[v]) for v in MPCFORMER),
        mpcformer_max_speedup_generation=max(float(generation[v]) for v in MPCFORMER),
    )


def tables12_cost(runs: pd.DataFrame, variants: list, n_new: int, n_new_encdec: int,
                  closed_form: dict, closed_form_encdec: dict,
                  gpt2_vs_paper: pd.DataFrame, t5_vs_paper: pd.DataFrame,
                  network_gpt2: dict, network_t5: dict, group_times_gpt2: dict, group_times_t5: dict,
                  link: dict, readings: dict | None = None, encdec_variants: list | None = None) -> dict:
    """Tables 1-2 from ``cost_experiments.run_jobs`` (rows of both architectures, column ``arch``),
    the closed-form totals at the measured shapes ({variant: bytes}), the closed form beside the
    paper at GPT-2 and T5 (``closed_form_vs_paper``), the modelled network speed-ups at those two
    shapes (``network_speedups``), on which Table 1's time claims are judged, and the modelled
    communication time per operation group at both shapes (``network_group_times``), the analogue of
    Table 1's communication-time column. The speed-ups and group times are on the calibrated link
    (``link``: its calibration, ``calibration.paper_link().summary()``, recorded for the claims'
    precondition); ``readings``: {name: {shape: {variant: speed-up}}} of other links or graphs (the
    stated LAN, the authors' graph), recorded beside, judging nothing.

    ``encdec_variants`` are the variants measured on the encoder-decoder (default: ``variants``); a
    profile may measure only CrypTen and ER+MM there (``ENCDEC_CLAIMED``, the only rows claims read). Then
    the per-variant encoder-decoder dicts hold None for each variant not measured, and
    ``encdec_merge_fastest`` (a comparison with all of them) is None: never a number from fewer rows."""
    _need(network_gpt2, TABLES12_VARIANTS, "network speed-ups at GPT-2")
    _need(network_t5, TABLES12_VARIANTS, "network speed-ups at T5")
    _need(variants, TABLES12_VARIANTS, "Tables 1-2 variants")
    ed_variants = list(variants if encdec_variants is None else encdec_variants)
    _need(ed_variants, ENCDEC_CLAIMED, "encoder-decoder variants")
    out = {}
    for arch, prefix, steps, cf, measured in (("gpt", "", n_new, closed_form, variants),
                                              ("encdec", "encdec_", n_new_encdec, closed_form_encdec, ed_variants)):
        df = runs[runs.arch == arch]
        _need(df.variant, measured, f"Tables 1-2 runs ({arch})")
        _need(cf, [BASE, "merge"], f"closed-form totals ({arch})")
        s = cost_experiments.summary(df, measured, steps)
        frac = s["fraction of CrypTen bytes"].to_dict()
        speed = s["speed-up (loopback)"].to_dict()
        out[f"{prefix}merge_frac_over_closed_form"] = ratio(frac["merge"], ratio(cf["merge"], cf[BASE]))
        if arch == "gpt":
            out["frac_bytes"], out["speedup_time"] = frac, speed
            out["merge_fastest"] = _is_best(speed, "merge", max)
            out.update(_gpt_cost_rows(df, variants, s, frac, cf))
        else:
            complete = all(v in measured for v in TABLES12_VARIANTS)
            out["encdec_frac_bytes"] = _unmeasured_none(frac)
            out["encdec_speedup_time"] = _unmeasured_none(speed)
            out["encdec_merge_fastest"] = _is_best(speed, "merge", max) if complete else None
            out["encdec_rounds_ratio"] = _unmeasured_none(s["rounds ratio CrypTen/variant"].to_dict())
    out["frac_closed_form_gpt2"] = gpt2_vs_paper["fraction (closed form)"].to_dict()
    out["frac_closed_form_t5"] = t5_vs_paper["fraction (closed form)"].to_dict()
    out["speedup_network_gpt2"] = {v: float(network_gpt2[v]) for v in variants}
    out["speedup_network_t5"] = {v: float(network_t5[v]) for v in variants}
    out["network_merge_fastest_gpt2"] = _is_best(out["speedup_network_gpt2"], "merge", max)
    out["network_merge_fastest_t5"] = _is_best(out["speedup_network_t5"], "merge", max)
    out["network_baselines_max_speedup"] = max(out["speedup_network_gpt2"][v] for v in BASELINES)
    out["network_baselines_max_speedup_t5"] = max(out["speedup_network_t5"][v] for v in BASELINES)
    # Table 2's "98% and 25% on embedding table query and linear operation" at the paper's GPT-2 shape
    out["embed_cut_closed_form_gpt2"] = _closed_form_cut(gpt2_vs_paper, "Embed")
    out["linear_cut_closed_form_gpt2"] = _closed_form_cut(gpt2_vs_paper, "Linear")
    out.update(_group_time_rows({"gpt2": group_times_gpt2, "t5": group_times_t5}))
    out.update(link_record(link))
    out["speedup_readings"] = {name: {shape: {v: float(x) for v, x in sp.items()} for shape, sp in r.items()}
                               for name, r in (readings or {}).items()}
    return out


def _unmeasured_none(values: dict) -> dict:
    """{variant: value} over every Tables 1-2 variant, None for one that was not measured."""
    return {v: values.get(v) for v in TABLES12_VARIANTS} | values


def _group_time_rows(times: dict) -> dict:
    """Table 1 per operation group, from {shape: {variant: {group: modelled communication seconds}}}:
    only-ER's cut of CrypTen's Embed time (the text's 59x / 98.3 %), and ER+MM's Embed factor and
    Linear cut (the communication-time column), per shape."""
    for shape, t in times.items():
        _need(t, [BASE, "only_er", "merge"], f"communication time per group at {shape}")
        for v in (BASE, "only_er", "merge"):
            _need(t[v], ["Embed", "Linear", "Softmax"], f"communication time of {v} at {shape}")
    g = times["gpt2"]
    return dict(
        comm_time_by_group={s: {v: {k: float(t[v][k]) for k in ("Embed", "Linear", "Softmax")}
                                for v in (BASE, "only_er", "merge")} for s, t in times.items()},
        embed_time_speedup_only_er_gpt2=ratio(g[BASE]["Embed"], g["only_er"]["Embed"]),
        embed_time_cut_only_er_gpt2=_cut(g["only_er"]["Embed"], g[BASE]["Embed"]),
        merge_embed_comm_factor={s: ratio(t[BASE]["Embed"], t["merge"]["Embed"]) for s, t in times.items()},
        merge_linear_comm_cut={s: _cut(t["merge"]["Linear"], t[BASE]["Linear"]) for s, t in times.items()},
    )


def _closed_form_cut(side: pd.DataFrame, group: str) -> float | None:
    """ER+MM's cut of one group's closed-form bytes against CrypTen's (``closed_form_vs_paper``)."""
    col = f"{group} GiB (closed form)"
    _need(side.columns, [col], "closed form beside the paper")
    _need(side.index, [BASE, "merge"], f"closed-form {group} bytes")
    return _cut(float(side.loc["merge", col]), float(side.loc[BASE, col]))


def _gpt_cost_rows(df, variants, s, frac, cf) -> dict:
    bytes_t = cost_experiments.pivot(df, "bytes").loc[variants]
    secs_t = cost_experiments.pivot(df, "seconds").loc[variants]
    if _group(bytes_t, BASE, "Softmax") <= 0:
        # without this a broken grouping (no Softmax metered anywhere) would read as "MM has no softmax"
        raise MissingResult("the meter saw no Softmax bytes in CrypTen's run: the operation groups are broken")
    soft_bytes = {v: _group(bytes_t, v, "Softmax") for v in MM_VARIANTS}
    soft_secs = {v: _group(secs_t, v, "Softmax") for v in MM_VARIANTS}
    speed = s["speed-up (loopback)"]
    return dict(
        frac_closed_form_tiny={v: ratio(cf[v], cf[BASE]) for v in cf},
        embed_cut={v: _cut(_group(bytes_t, v, "Embed"), _group(bytes_t, BASE, "Embed")) for v in ER_VARIANTS},
        mm_softmax_bytes=soft_bytes,
        mm_softmax_seconds=soft_secs,
        mm_softmax_total=sum(soft_bytes.values()) + sum(soft_secs.values()),
        baselines_same_embed_linear=all(_group(bytes_t, v, g) == _group(bytes_t, BASE, g)
                                        for v in BASELINES for g in ("Embed", "Linear")),
        speedup_lan_model=s["speed-up (LAN model)"].to_dict(),
        rounds_per_token=s["rounds/token"].to_dict(),
        merge_fewest_bytes=_is_best(frac, "merge", min),
        baselines_max_speedup=max(float(speed[v]) for v in BASELINES),
    )


def fig4_scaling(runs: pd.DataFrame, variants: list, n_news: list, closed_form_length: pd.DataFrame,
                 saved: pd.DataFrame, network_by_length: dict, thex_by_length: dict,
                 size_sweep: pd.DataFrame, link: dict, readings: dict | None = None) -> dict:
    """Figure 4 from the sweep runs (``run_jobs`` rows with ``sweep`` = "length" | "layers"), the
    closed-form length table (``closed_form_length_table``), ``bytes_saved_at_length``, ER+MM's and
    THE-X's modelled network speed-ups over CrypTen at GPT-2 per total length ({length: speed-up},
    ``network_speedups``) and the lower row's size sweep (``size_sweep_network``), both on the
    calibrated link (``link``: its calibration, recorded for the claims' precondition).
    ``readings``: {name: {"merge": {length: speed-up}, "thex": {...}, "fraction": {length: ER+MM's
    byte fraction}}} of other links or baselines (the stated LAN; App. C.1's baseline without a KV
    cache), recorded beside, judging nothing."""
    if len(network_by_length) < 2:
        raise MissingResult(f"Figure 4 needs network speed-ups at two lengths or more, got {sorted(network_by_length)}")
    lengths = sorted(network_by_length)
    length = runs[(runs.sweep == "length") & (runs.group == "Total")]
    for n in n_news:
        _need(length[length.n_new == n].variant, [BASE, "merge"], f"Figure 4 length sweep at {n} tokens")
    r = cost_experiments.length_ratios(runs).set_index("generated tokens")
    n_lo, n_hi = min(n_news), max(n_news)
    embed = cost_experiments.embed_bytes(runs)
    er_embed = {}
    for v in (v for v in ER_VARIANTS if v in variants):
        _need(embed.index, [(v, n) for n in n_news], f"Figure 4 Embed bytes of {v}")
        er_embed[v] = [float(embed[(v, n)]) for n in sorted(n_news)]
    depth = cost_experiments.depth_table(runs)
    gap = depth["CrypTen KiB"] - depth["ER+MM KiB"]
    cf = closed_form_length.sort_index()
    by_count = saved.set_index("count")["bytes saved by ER+MM"]
    _need(by_count.index, [cost_experiments.WITH_ARGMAX, cost_experiments.WITHOUT_ARGMAX], "length-64 byte saving")
    return dict(
        speedup_short=float(r.loc[n_lo, "time speed-up ER+MM"]),
        speedup_long=float(r.loc[n_hi, "time speed-up ER+MM"]),
        rounds_ratio_short=float(r.loc[n_lo, "rounds ratio CrypTen/ER+MM"]),
        rounds_ratio_long=float(r.loc[n_hi, "rounds ratio CrypTen/ER+MM"]),
        bytes_fraction_by_length=dict(zip(map(str, r.index), r["bytes fraction ER+MM"])),
        # None when no ER variant ran: nothing to judge, not "flat"
        er_embed_flat=all(len(set(x)) == 1 for x in er_embed.values()) if er_embed else None,
        depth_speedup=dict(zip(map(str, depth.layers), depth["time speed-up"])),
        depth_gap_bytes_grows=bool(gap.is_monotonic_increasing) if len(gap) > 1 else None,
        closed_form_fraction_by_length=dict(zip(map(str, cf.index), cf["ER+MM fraction"])),
        closed_form_fraction_longest=float(cf["ER+MM fraction"].iloc[-1]),
        network_speedup_by_length={str(n): float(network_by_length[n]) for n in lengths},
        network_speedup_short=float(network_by_length[lengths[0]]),
        network_speedup_long=float(network_by_length[lengths[-1]]),
        # the paper's two points: 7.75x at length 128 (Table 1), 26.5x at 512 (Sec. 6); None if not modelled
        network_speedup_128=num(network_by_length.get(128)),
        network_speedup_512=num(network_by_length.get(512)),
        network_speedup_growth_128_512=ratio(network_by_length.get(512), network_by_length.get(128)),
        len64_saved_with_argmax=float(by_count[cost_experiments.WITH_ARGMAX]),
        len64_saved_without_argmax=float(by_count[cost_experiments.WITHOUT_ARGMAX]),
        # the text's 11.8x over THE-X at length 512: ER+MM's time over THE-X's; None if not modelled
        network_merge_over_thex_by_length={str(n): ratio(network_by_length[n], thex_by_length.get(n))
                                           for n in lengths},
        network_merge_over_thex_512=ratio(network_by_length.get(512), thex_by_length.get(512)),
        **_size_rows(size_sweep),
        **link_record(link),
        readings={name: _length_reading(r) for name, r in (readings or {}).items()},
    )


def _length_reading(r: dict) -> dict:
    """One reading beside Figure 4's judged values: ER+MM's speed-up per length, its growth from 128
    to 512 and its gain over THE-X at 512, and ER+MM's byte fraction at 512, where given."""
    merge, thex, frac = r.get("merge") or {}, r.get("thex") or {}, r.get("fraction") or {}
    return dict(speedup_by_length={str(n): float(x) for n, x in merge.items()},
                growth_128_512=ratio(merge.get(512), merge.get(128)),
                merge_over_thex_512=ratio(merge.get(512), thex.get(512)),
                fraction_512=num(frac.get(512)))


def _size_rows(sweep: pd.DataFrame) -> dict:
    """Figure 4's lower row from ``size_sweep_network``: per size, ER+MM's speed-up over the fastest
    existing method (CrypTen, MPCformer, THE-X), its smallest over the sizes, its growth from the
    smallest to the largest size, and whether ER+MM's byte gap to every existing method grows with size."""
    cols = [f"{v} speed-up" for v in (*EXISTING, "merge")] + [f"{v} GiB" for v in (*EXISTING, "merge")]
    _need(sweep.columns, cols, "Figure 4 size sweep")
    if len(sweep) < 2:
        raise MissingResult(f"Figure 4's size sweep needs two sizes or more, got {len(sweep)}")
    s = sweep.sort_values("params (M)")
    over = [ratio(m, max(r[f"{v} speed-up"] for v in EXISTING))
            for m, (_, r) in zip(s["merge speed-up"], s.iterrows())]
    gaps = {v: (s[f"{v} GiB"] - s["merge GiB"]).tolist() for v in EXISTING}
    return dict(
        size_params_m=[round(float(p), 1) for p in s["params (M)"]],
        size_merge_over_existing=dict(zip((f"{p:.0f}M" for p in s["params (M)"]), over)),
        size_min_merge_over_existing=strict(min, over),
        size_speedup_growth=ratio(over[-1], over[0]),
        size_bytes_gap_gib={f"{p:.0f}M": {v: float(gaps[v][i]) for v in EXISTING}
                            for i, p in enumerate(s["params (M)"])},
        size_bytes_gap_grows=all(all(b > a for a, b in zip(g, g[1:])) for g in gaps.values()),
    )


# ---------------------------------------------------------------------------------------------
# quality notebooks
# ---------------------------------------------------------------------------------------------


#: Figure 6's "converge stably": the validation loss ends below this share of its value after the swap
CONVERGED_BELOW = 0.5


def fig6_retraining(runs: dict, teacher, task: str, merge_by_seed: dict | None = None) -> dict:
    """Figure 6 from the re-trained runs ({variant: ``train.Trained``}, the figure's seed) and the
    teacher; ``merge_by_seed`` ({student seed: MERGE's ``train.Trained``}, default the figure's run
    alone): per seed whether MERGE converged stably (converged, stable, validation loss ending below
    ``CONVERGED_BELOW`` of its start) and the jump of the validation CE at the swap, and the counts
    and extremes over the seeds that the claims read."""
    _need(runs, ["merge"], "Figure 6 runs")
    rows = {v: quality_experiments.retraining_summary(r) for v, r in runs.items()}
    teacher_ce = teacher.history["val"]["ce"][-1]

    def jump(r):
        """The architecture swap: validation CE right after the student is built from the teacher
        (step 0) against the teacher's own final validation CE."""
        return ratio(r.history["val"]["ce"][0], teacher_ce)

    swap = {v: jump(r) for v, r in runs.items()}
    m = rows["merge"]
    per_seed = {}
    for s, r in sorted(merge_by_seed.items()) if merge_by_seed else [("figure", runs["merge"])]:
        q = quality_experiments.retraining_summary(r)
        v = q["val_end_over_start"]
        per_seed[str(s)] = {"converged": q["converged"], "stable": q["stable"], "val_end_over_start": v,
                            "converged_stably": bool(q["converged"] and q["stable"] and v is not None
                                                     and v < CONVERGED_BELOW),
                            "swap_ce_jump": jump(r)}
    jumps = [p["swap_ce_jump"] for p in per_seed.values()]
    seeds = {"seeds": sorted(int(s) for s in merge_by_seed)} if merge_by_seed else {}
    return dict(**seeds, runs=rows, task=task, swap_ce_jump=swap, teacher_val_ce=teacher_ce,
                merge_converged=m["converged"], merge_stable=m["stable"],
                merge_val_ratio=m["val_end_over_start"], merge_val_rises_initially=m["val_rises_initially"],
                merge_by_seed=per_seed, n_merge_seeds=len(per_seed),
                n_merge_converged_stably=sum(p["converged_stably"] for p in per_seed.values()),
                max_merge_val_ratio=strict(max, [p["val_end_over_start"] for p in per_seed.values()]),
                min_merge_swap_ce_jump=strict(min, jumps))


TEACHER, ER_NO_TRAIN, SF2RELU, MERGE = "GPT (teacher)", "+ER (no train)", "+MPCformer (sf2relu)", "+MERGE (ours)"
ONLY_ER, ONLY_MM = "+MERGE only ER", "+MERGE only MM"
OOT_CANDIDATES = ("+MPCformer (sf2quad)", "+THE-X")
#: Table 3's n-gram columns (the paper's NIST, ROUGE-L and METEOR; ours without WordNet synonyms)
NGRAM = ("NIST", "ROUGE-L", "METEOR (no synonyms)")


def _table3_value(table: pd.DataFrame, task: str, model: str, metric: str) -> float | None:
    """A row's metric; the row must exist, its value is None when the model diverged (NaN)."""
    row = table[(table.task == task) & (table.model == model)]
    if row.empty:
        raise MissingResult(f"Table 3 has no row {model!r} for task {task!r}")
    return num(row[metric].iloc[0])


def _closer(table, task, a, b, metric="chrF++") -> bool | None:
    """Is row ``a`` closer to the teacher than row ``b`` (absolute difference of ``metric``)?"""
    t, va, vb = (_table3_value(table, task, m, metric) for m in (TEACHER, a, b))
    return None if None in (t, va, vb) else abs(va - t) < abs(vb - t)


def _below(a, b) -> bool | None:
    """a < b; None when either is missing."""
    return None if a is None or b is None else a < b


def _table3_task(table: pd.DataFrame, task: str) -> dict:
    val = lambda model, metric: _table3_value(table, task, model, metric)  # noqa: E731
    rows = table[table.task == task]
    merge_bert, sf2relu_bert = val(MERGE, "BERTScore-proxy"), val(SF2RELU, "BERTScore-proxy")
    merge_chrf, er_chrf = val(MERGE, "chrF++"), val(ER_NO_TRAIN, "chrF++")
    return {
        "metrics": {m: {label: val(label, m) for label, _, _ in quality_experiments.TABLE3_ROWS} for m in quality_experiments.METRIC_ORDER},
        "status": dict(zip(rows.model, rows.status)),
        # a teacher at chrF++ 0 leaves nothing to collapse: the ratio is undefined, not 0
        "er_no_train_chrf_ratio": ratio(er_chrf, val(TEACHER, "chrF++")),
        # the other columns: the same share of the teacher's for the n-gram metrics; for the
        # (log-likelihood) BARTScore-proxy, whose scale is not the paper's, only lower or not
        "er_no_train_ngram_ratio": {m: ratio(val(ER_NO_TRAIN, m), val(TEACHER, m)) for m in NGRAM},
        "er_no_train_below_teacher_bartproxy": _below(val(ER_NO_TRAIN, "BARTScore-proxy"),
                                                      val(TEACHER, "BARTScore-proxy")),
        "merge_minus_sf2relu_bertproxy": None if None in (merge_bert, sf2relu_bert) else merge_bert - sf2relu_bert,
        "merge_over_sf2relu_chrf": ratio(merge_chrf, val(SF2RELU, "chrF++")),
        # a diverged MERGE did not recover (False); a missing ER-without-training row leaves it open (None)
        "merge_beats_er_no_train": (None if er_chrf is None else False if merge_chrf is None
                                    else merge_chrf > er_chrf),
        "only_er_closer_than_merge": _closer(table, task, ONLY_ER, MERGE),
        "only_mm_closer_than_merge": _closer(table, task, ONLY_MM, MERGE),
    }


def table3_quality(table: pd.DataFrame, tasks: list) -> dict:
    """Table 3 from ``quality_experiments.table3_tasks`` (one row per task and model; NaN metrics
    for a model whose training diverged). An aggregate over tasks is None when any task's value is
    missing: a diverged or absent MPCformer row leaves the MERGE-vs-MPCformer gap unjudged."""
    _need(table.task, tasks, "Table 3 tasks")
    rec = {task: _table3_task(table, task) for task in tasks}
    gaps = [None if r["merge_minus_sf2relu_bertproxy"] is None else -r["merge_minus_sf2relu_bertproxy"]
            for r in rec.values()]
    return dict(
        per_task=rec,
        tasks=list(tasks),
        # per task (claims cannot index per_task by a task name); ER without re-training is judged
        # across teacher seeds by ``table3_teachers``, this seed's shares stay in ``per_task``
        merge_gap_bertproxy_by_task=dict(zip(rec, gaps)),
        max_merge_gap_bertproxy=strict(max, gaps),
        min_merge_over_sf2relu_chrf=strict(min, [r["merge_over_sf2relu_chrf"] for r in rec.values()]),
        merge_beats_er_no_train_all=strict(all, [r["merge_beats_er_no_train"] for r in rec.values()]),
        # a pair that cannot be compared (a diverged row) does not count as closer
        n_single_closer=sum(r[k] is True for r in rec.values()
                            for k in ("only_er_closer_than_merge", "only_mm_closer_than_merge")),
        n_single_pairs=2 * len(rec),
        sf2quad_or_thex_failed=any(r["status"][m] == "diverged" for r in rec.values() for m in OOT_CANDIDATES),
        # the paper: both OOT on every task; a cell = (task, model)
        n_sf2quad_thex_failed=sum(r["status"][m] == "diverged" for r in rec.values() for m in OOT_CANDIDATES),
        n_sf2quad_thex=len(OOT_CANDIDATES) * len(rec),
    )


#: the single-change cells' labels, as the page shows them
SINGLE_LABELS = {"only_er": "only-ER", "only_mm": "only-MM"}


def _planned(df: pd.DataFrame, models, seeds, what: str) -> list[int]:
    """The seeds a readout pairs over: ``seeds`` (the notebook's planned seeds) or, without them,
    every seed any of ``models`` has a row at. A seed is never dropped because one model has no
    value there: that model's value at it is None, and the interval counts it as a lost seed."""
    have = sorted({int(s) for s in df[df.model.isin(list(models))].seed})
    if seeds is None:
        return have
    planned = sorted(int(s) for s in seeds)
    stray = sorted(set(have) - set(planned))
    if stray:
        raise MissingResult(f"{what}: rows at seeds {stray} that were not planned ({planned})")
    return planned


def table3_seeds(df: pd.DataFrame, tasks: list, metric: str = "chrF++", close_metric: str = "BERTScore-proxy",
                 seeds: list | None = None) -> dict:
    """Table 3's claims across student seeds, from ``quality_experiments.across_student_seeds``.

    ``single_closer``: per (task, only-ER or only-MM) the paired 95 % t interval across seeds of
    |MERGE − teacher| − |single − teacher| on ``metric`` (positive: the single change is closer to
    the vanilla model than ER + MM), the same seed's MERGE and single model paired.
    ``merge_recovers``: per task the interval across seeds of MERGE − the teacher decoded with ER
    and no re-training (one model, the same at every seed: the spread is MERGE's).
    ``merge_minus_mpcformer``: per task the interval across seeds of MERGE − MPCformer (sf2relu) on
    ``close_metric``, the same seed's two students paired; ``merge_minus_mpcformer_bertscore_units``
    the same on the proxy scaled to the paper's BERTScore (``proxy_scale``: our teacher − ER (no train)
    span made the paper's), which the claim judges against the paper's margin (None where our
    span is not positive: ``proxy_scaled`` is then False and the claim is not judged).
    Every interval runs over the planned student ``seeds`` (default: every seed a student has a row
    at): a seed whose model diverged (NaN) or has no row is a None in its list, kept in the
    interval's ``planned`` count, so a claim cannot hold on the seeds that survived.
    ``distance_by_seed``: each row's |metric − teacher's| per seed, the figure's numbers;
    ``chrf_by_seed`` and ``close_by_seed`` the compared scores."""
    _need(df.task, tasks, "Table 3 across seeds: tasks")
    seeds = _planned(df, quality_experiments.STUDENT_SEED_VARIANTS, seeds, "Table 3 across seeds")
    cells, recovers, close, by_seed, dist_by_seed, close_by_seed = {}, {}, {}, {}, {}, {}
    spans, scale, close_bs = quality_experiments.paper_bertscore_span(), {}, {}
    for task in tasks:
        d = df[df.task == task]
        _need(d.model, ["teacher", "er_no_train", *quality_experiments.STUDENT_SEED_VARIANTS], f"Table 3 across seeds, {task}")

        def per_seed(v, col):
            got = dict(zip((int(s) for s in d[d.model == v].seed), map(num, d[d.model == v][col])))
            return [got.get(s) for s in seeds]

        (teacher,) = [num(x) for x in d[d.model == "teacher"][metric]]
        (er,) = [num(x) for x in d[d.model == "er_no_train"][metric]]
        per = {v: per_seed(v, metric) for v in quality_experiments.SINGLE_CHANGE_VARIANTS}
        dist = {v: [None if x is None or teacher is None else abs(x - teacher) for x in per[v]] for v in per}
        by_seed[task] = {"teacher": teacher, "er_no_train": er, "seeds": seeds, **per}
        dist_by_seed[task] = {"seeds": seeds, **dist}
        for v, label in SINGLE_LABELS.items():
            cells[f"{task} / {label}"] = paired_difference(dist["merge"], dist[v]).as_dict()
        recovers[task] = paired_difference(per["merge"], [er] * len(seeds)).as_dict()
        close_by_seed[task] = {"seeds": seeds, **{v: per_seed(v, close_metric) for v in ("merge", quality_experiments.CLOSE_TO)}}
        close[task] = paired_difference(close_by_seed[task]["merge"], close_by_seed[task][quality_experiments.CLOSE_TO]).as_dict()
        # the proxy in the paper's BERTScore units: scaled so that its teacher − ER (no train) span
        # equals the paper's (two rows the closeness claim does not compare); no span, no scale
        (t_p,) = [num(x) for x in d[d.model == "teacher"][close_metric]]
        (e_p,) = [num(x) for x in d[d.model == "er_no_train"][close_metric]]
        span = None if None in (t_p, e_p) else t_p - e_p
        k = spans.get(task) / span if span and span > 0 and spans.get(task) else None
        scale[task] = {"proxy span": span, "paper span": spans.get(task), "scale": k}
        close_bs[task] = None if k is None else paired_difference(
            [None if x is None else k * x for x in close_by_seed[task]["merge"]],
            [None if x is None else k * x for x in close_by_seed[task][quality_experiments.CLOSE_TO]]).as_dict()
    return {"seeds": seeds, "n_seeds": len(seeds),
            # the fewest seeds any interval has both values at (n_seeds is the planned count)
            "n_paired_min": min(c["n"] for c in (*cells.values(), *recovers.values(), *close.values())),
            "single_closer": cells, "merge_recovers": recovers, "merge_minus_mpcformer": close,
            "proxy_scale": scale, "proxy_scaled": all(v is not None for v in close_bs.values()),
            "merge_minus_mpcformer_bertscore_units": close_bs,
            "chrf_by_seed": by_seed, "close_by_seed": close_by_seed, "distance_by_seed": dist_by_seed}


def table3_teachers(df: pd.DataFrame, tasks: list, seeds: list | None = None) -> dict:
    """ER without re-training across teacher seeds, from ``quality_experiments.across_teacher_seeds``.

    Per task and teacher seed, the share of the teacher's own score that decoding it with ER loses,
    ``1 − ER / teacher`` (None where the teacher scores 0: nothing to lose), on chrF++ and on each
    n-gram column; ``chrf_lost`` and ``ngram_lost`` are the 95 % t intervals of those shares across
    the seeds (the claims: above the paper's reading of a collapse), ``bartproxy_falls`` the
    interval of teacher − ER on the BARTScore-proxy (only the direction: its scale is not
    BARTScore's). Each seed's teacher and its ER decoding are a pair: the spread is the teachers'.
    Every interval runs over the planned teacher ``seeds`` (default: every seed with a row): a
    teacher that diverged, or that scores 0 (nothing to lose), is a lost seed, kept in the count."""
    _need(df.task, tasks, "Table 3 across teacher seeds: tasks")
    seeds = _planned(df, ("teacher", "er_no_train"), seeds, "Table 3 across teacher seeds")
    chrf, ngram, bart, by_seed, lost_by_seed = {}, {}, {}, {}, {}
    for task in tasks:
        d = df[df.task == task]
        _need(d.model, ["teacher", "er_no_train"], f"Table 3 across teacher seeds, {task}")

        def scores(model, metric):
            got = dict(zip((int(s) for s in d[d.model == model].seed), map(num, d[d.model == model][metric])))
            return [got.get(s) for s in seeds]

        def lost(metric):
            return [_cut(e, t) for e, t in zip(scores("er_no_train", metric), scores("teacher", metric))]

        zeros = [0.0] * len(seeds)
        lost_by_seed[task] = {"seeds": seeds, "chrF++": lost("chrF++")}
        chrf[task] = paired_difference(lost_by_seed[task]["chrF++"], zeros).as_dict()
        ngram[task] = {m: paired_difference(lost(m), zeros).as_dict() for m in NGRAM}
        bart[task] = paired_difference(scores("teacher", "BARTScore-proxy"), scores("er_no_train", "BARTScore-proxy")).as_dict()
        by_seed[task] = {"seeds": seeds, "teacher": scores("teacher", "chrF++"), "ER (no train)": scores("er_no_train", "chrF++")}
    return {"seeds": seeds, "tasks": list(tasks),
            "chrf_lost": chrf, "ngram_lost": ngram, "bartproxy_falls": bart, "chrf_by_seed": by_seed,
            "chrf_lost_by_seed": lost_by_seed,
            # the means the intervals are about, per task (and metric), to show beside the claims
            "ngram_lost_by_task": {t: {m: c["mean"] for m, c in per.items()} for t, per in ngram.items()},
            "bartproxy_fall_by_task": {t: c["mean"] for t, c in bart.items()},
            # the smallest mean share lost over the cells: the value each claim shows
            "min_chrf_lost": strict(min, [c["mean"] for c in chrf.values()]),
            "min_ngram_lost": strict(min, [c["mean"] for t in ngram.values() for c in t.values()]),
            "n_seeds": len(seeds),
            # the fewest teacher seeds any chrF++ interval has a value at (n_seeds is the planned count)
            "n_paired_min": min((c["n"] for c in chrf.values()), default=0)}


def _noise_readout(g: pd.DataFrame, metric: str) -> dict:
    clean, noisy = num(g[metric].iloc[0]), num(g[metric].iloc[-1])
    mid = g[(g.rel_mse >= MID_MSE[0]) & (g.rel_mse <= MID_MSE[1])]
    drop = None if None in (clean, noisy) else clean - noisy
    return {"clean": clean, "max_noise": noisy, "drop": drop,
            # a model already at 0 has nothing to lose: its relative drop is undefined, not 0
            "rel_drop": ratio(drop, clean),
            "mid_mean": num(mid[metric].mean()) if len(mid) else None}


def fig5_embedding_noise(sweep: pd.DataFrame, tasks: list, variants: list,
                         metrics=("chrF++", "ROUGE-L"), seeds: list | None = None) -> dict:
    """Figure 5 from ``quality_experiments.robustness_tasks``.

    The figure's seed (the sweep's first): per task, model and metric the clean score, the score at
    the largest noise, the (relative) drop and the mean over ``MID_MSE``, and how many noise-trained
    (task, model) pairs lose a smaller share of chrF++ than the teacher. Across seeds:
    ``more_robust``, per (task, noise-trained model) the paired 95 % t interval of the teacher's
    relative chrF++ drop − the model's (positive: the model loses the smaller share), the teacher and
    the model of one seed decoded with that seed's noise; a drop from a clean score of 0 is undefined
    and is a lost seed of that pair, as is a seed with no noise-free run; every interval runs over the
    planned ``seeds`` (default: every seed in the sweep) and keeps them in its count.
    ``rel_drop_by_seed``: the compared drops."""
    _need(variants, ["teacher"], "Figure 5 variants")
    sweep = sweep if "seed" in sweep else sweep.assign(seed=0)
    first = sweep.seed.min()
    planned = sorted({int(s) for s in sweep.seed}) if seeds is None else sorted(int(s) for s in seeds)
    stray = sorted({int(s) for s in sweep.seed} - set(planned))
    if stray:
        raise MissingResult(f"Figure 5: runs at seeds {stray} that were not planned ({planned})")
    rec, by_seed, more = {}, {}, {}
    for t in tasks:
        rec[t], drops = {}, {}
        for v in variants:
            g = sweep[(sweep.task == t) & (sweep.variant == v)]
            if g.empty or (g[g.seed == first].noise.min() != 0):
                raise MissingResult(f"Figure 5 has no noise-free run of {v!r} on {t!r}")
            rec[t][v] = {m: _noise_readout(g[g.seed == first].sort_values("noise"), m) for m in metrics}
            drops[v] = {int(s): _noise_readout(gs.sort_values("noise"), "chrF++")["rel_drop"]
                        for s, gs in g.groupby("seed") if gs.noise.min() == 0}
        by_seed[t] = {"seeds": planned, **{v: [drops[v].get(s) for s in planned] for v in variants}}
        for v in variants:
            if v != "teacher":
                more[f"{t} / {VARIANT_LABELS.get(v, v)}"] = paired_difference(by_seed[t]["teacher"], by_seed[t][v]).as_dict()

    def more_robust(t, v, m="chrF++"):
        a, b = rec[t][v][m]["rel_drop"], rec[t]["teacher"][m]["rel_drop"]
        return None if None in (a, b) else a < b

    trained = [(t, v) for t in tasks for v in variants if v != "teacher"]
    mid = lambda t, v: rec[t][v]["chrF++"]["mid_mean"]  # noqa: E731
    return dict(
        seeds=planned,
        readout=rec,
        chrf_clean_and_noisiest={t: {v: [rec[t][v]["chrF++"]["clean"], rec[t][v]["chrF++"]["max_noise"]]
                                     for v in variants} for t in tasks},
        teacher_rel_drop_chrf={t: rec[t]["teacher"]["chrF++"]["rel_drop"] for t in tasks},
        # the figure's seed alone; a pair whose drop is undefined does not count as more robust
        n_er_trained_more_robust=sum(more_robust(t, v) is True for t, v in trained),
        n_er_trained=len(trained),
        more_robust=more,
        rel_drop_by_seed=by_seed,
        n_seeds=len(planned),
        # the fewest seeds any pair has both drops at (n_seeds is the planned count)
        n_paired_min=min((c["n"] for c in more.values()), default=0),
        only_er_mid_ge_teacher={t: None if None in (mid(t, "only_er"), mid(t, "teacher"))
                                else mid(t, "only_er") >= mid(t, "teacher") for t in tasks}
        if "only_er" in variants else {},
    )


def private_generation(results: dict, cost: pd.DataFrame, n_new: int) -> dict:
    """The private-generation check from ``private.private_vs_plain`` and ``private.cost_table``:
    the token agreement with plaintext greedy decoding (``token_match``, as revealed) and, step by
    step on the private prefix (``private.agreement``), the logit error over its tolerance, the near
    ties (plaintext top-2 gap within twice the tolerance) and the faults (a logit out of tolerance,
    or another token than the plaintext argmax where there is no near tie)."""
    if not results:
        raise MissingResult("private generation returned no model")
    per = cost.set_index("model")
    both = {BASE, "merge"} <= set(per.index)
    agree = {v: r["agreement"] for v, r in results.items()}
    return dict(
        token_match={v: r["match"] for v, r in results.items()},
        min_token_match=min(r["match"] for r in results.values()),
        n_faults=sum(a["n_faults"] for a in agree.values()),
        faults={v: a["faults"] for v, a in agree.items()},
        max_err_over_tol=max(a["max_err_over_tol"] for a in agree.values()),
        near_ties={v: a["near_ties"] for v, a in agree.items()},
        n_near_ties=sum(a["n_near_ties"] for a in agree.values()),
        min_top2_gap={v: a["min_gap"] for v, a in agree.items()},
        steps=sum(a["steps"] for a in agree.values()),
        ranks_agree=all(r["ranks_agree"] for r in results.values()),
        n_prompts=len(next(iter(results.values()))["private"]), n_new=n_new,
        private_ids={v: r["private"] for v, r in results.items()},
        cost=per.to_dict(),
        merge_round_ratio=ratio(per.loc[BASE, "rounds"], per.loc["merge", "rounds"]) if both else None,
        merge_byte_ratio=ratio(per.loc[BASE, "MiB"], per.loc["merge", "MiB"]) if both else None,
    )


def paper_table3_text_vs_table(paper: pd.DataFrame, tol: float = 5e-4) -> pd.DataFrame:
    """The paper against itself: per task, how much lower MERGE's BERTScore is than MPCformer
    (sf2relu)'s in its Table 3, and by how much its text says it is lower (§5.4). The two agree
    where they differ by at most ``tol`` (the table's rounding)."""
    rows = []
    for task, g in paper.groupby("task", sort=False):
        by = g.set_index("model")
        _need(by.index, [MERGE, SF2RELU], f"the paper's Table 3 rows for {task}")
        table_gap = float(by.loc[SF2RELU, "bertscore"] - by.loc[MERGE, "bertscore"])
        text_gap = num(by.loc[MERGE, "text_says_lower_by"])
        rows.append({"task": task, "table: MPCformer − MERGE": round(table_gap, 4), "text: lower by": text_gap,
                     "agree": None if text_gap is None else abs(table_gap - text_gap) <= tol})
    return pd.DataFrame(rows)
