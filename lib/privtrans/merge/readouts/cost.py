"""Tables 1-2, Figure 4 and the private generation: each variant's bytes, rounds and time against
vanilla CrypTen's, how they scale with the generated length and the model size, and the
closed-form counts beside the measured ones.
"""

from __future__ import annotations

import pandas as pd

from privtrans.book.readouts import num, ratio, strict

from .. import cost_experiments
from .missing import MissingResult, _cut, _need
from .time_breakdown import _group, link_record


BASE = "crypten"
BASELINES = ("mpcformer_sf2relu", "mpcformer_sf2quad", "thex")  # softmax/activation substitutes only
#: the existing methods of Figure 4 (lower row): vanilla CrypTen and the softmax/activation substitutes
EXISTING = (BASE, *BASELINES)
ER_VARIANTS = ("only_er", "merge")
MM_VARIANTS = ("only_mm", "merge")
#: the variants whose comparisons the Tables 1-2 claims make
TABLES12_VARIANTS = (BASE, *BASELINES, "merge", "only_er", "only_mm")


#: the encoder-decoder variants whose measured rows the claims read (t2_t5_saves_more_than_gpt,
#: t2_encdec_fraction_matches_closed_form): `ci` measures only these; `paper` all of TABLES12_VARIANTS
ENCDEC_CLAIMED = (BASE, "merge")


def _is_best(values: dict, key: str, best=max) -> bool:
    """Is ``values[key]`` the best (max or min) of ``values``? Ties count as best."""
    _need(values, [key], "comparison")
    return values[key] == best(values.values())


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
