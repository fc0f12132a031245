"""The MERGE readouts on small hand-made tables (no training, no MPC): the values the claims read,
the cases that must make a claim fail, and missing data that must never pass as a number.

Where a case decides a claim, the test runs the claim's own predicate from data/merge/claims*.yaml
on what the readout returns, as the book does after recording it, and asserts its verdict: held,
contradicted or not judged. The predicate claims are deterministic (exact counts, closed forms,
or counts of training runs), so they cannot be inconclusive; the claims judged by paired intervals,
across seeds or timing rounds (NULL_TESTED), are fed a null effect, which must come out inconclusive
or contradicted: never held, and never "not judged" (that would pass without testing anything)."""

import re

import numpy as np
import pandas as pd
import pytest

from privtrans.book import claims
from privtrans.book.session import _jsonable
from privtrans.merge import cost_experiments, quality_experiments, readouts
from privtrans.merge.train import Trained
from privtrans.shared.models.plain_gpt import VARIANTS


CLAIMS = {c["id"]: c for c in claims.load("merge")["claims"]}


#: interval claims fed a null effect through their readout (A = B plus noise for a margin >= 0; for
#: the one "close to" claim, a difference at its margin plus noise)
NULL_TESTED = {"table3_single_changes_closer", "table3_merge_recovers_from_er", "table3_merge_close_to_mpcformer",
               "fig5_er_training_resists_noise", "table3_er_without_training_collapses",
               "table3_er_no_train_collapses_ngram", "table3_er_no_train_bartscore_falls",
               "fig1_encoder_nonlinear_dominates", "fig1_generator_time_balanced"}


HELD, CONTRADICTED, NOT_JUDGED = "held", "contradicted", "not judged"


#: what a null may come out as: it was judged, and not held
NOT_HELD = ("inconclusive", "contradicted")


def verdict(claim_id: str, values: dict, profile: str = "ci"):
    """(verdict, value) of one claim on a readout's output, recorded as the notebook records it."""
    c = CLAIMS[claim_id]
    (row,) = claims.evaluate("merge", {"claims": [c]},
                             {c["notebook"]: {"profile": profile, "values": _jsonable(values)}}, profile)
    assert row["held"] == (None if row["verdict"] == NOT_JUDGED else row["verdict"] == HELD)
    assert row["verdict"] != "inconclusive", "a deterministic claim is held or contradicted"
    return row["verdict"], row["value"]


def run_rows(job: int, variant: str, groups: dict, arch="gpt", n_new=4, sweep=None, layers=1, kind="generate"):
    """One run: {group: (bytes, seconds, rounds)} plus its Total row."""
    rows = [dict(job=job, kind=kind, variant=variant, n_new=n_new, sweep=sweep, arch=arch, layers=layers,
                 group=g, bytes=b, seconds=s, rounds=r, calls=1) for g, (b, s, r) in groups.items()]
    tot = {k: sum(x[k] for x in rows) for k in ("bytes", "seconds", "rounds")}
    rows.append(dict(rows[0], group="Total", calls=len(rows), **tot))
    return rows


def frame(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    df["net_seconds"] = cost_experiments.modelled_time(df["bytes"], df["rounds"])
    return df


#: per variant: Embed, Linear, Softmax (absent for MM), Gen, as (bytes, seconds, rounds)
TABLES12 = {
    "crypten": {"Embed": (1000, 4.0, 4), "Linear": (3000, 3.0, 8), "Softmax": (800, 4.0, 40), "Gen": (1000, 3.0, 20)},
    "mpcformer_sf2relu": {"Embed": (1000, 4.0, 4), "Linear": (3000, 3.0, 8), "Softmax": (500, 2.0, 10), "Gen": (1000, 3.0, 20)},
    "mpcformer_sf2quad": {"Embed": (1000, 4.0, 4), "Linear": (3000, 3.0, 8), "Softmax": (400, 1.5, 8), "Gen": (1000, 3.0, 20)},
    "thex": {"Embed": (1000, 4.0, 4), "Linear": (3000, 3.0, 8), "Softmax": (300, 1.0, 6), "Gen": (1000, 3.0, 20)},
    "only_er": {"Embed": (250, 1.0, 1), "Linear": (3000, 3.0, 8), "Softmax": (800, 4.0, 40), "Gen": (1000, 1.0, 5)},
    "only_mm": {"Embed": (1000, 4.0, 4), "Linear": (2250, 2.0, 8), "Gen": (1000, 3.0, 20)},
    "merge": {"Embed": (250, 1.0, 1), "Linear": (2250, 2.0, 8), "Gen": (700, 1.0, 5)},
}


def tables12_runs(gpt=TABLES12, encdec=TABLES12):
    rows, job = [], 0
    for arch, spec in (("gpt", gpt), ("encdec", encdec)):
        for v, groups in spec.items():
            rows += run_rows(job, v, groups, arch=arch)
            job += 1
    return frame(rows)


#: closed form beside the paper (``closed_form_vs_paper``): ER+MM's fraction, Embed and Linear GiB
SIDE = {"crypten": (1.0, 71.4, 159.4), "mpcformer_sf2relu": (0.99, 71.4, 159.4), "mpcformer_sf2quad": (0.99, 71.4, 159.4),
        "thex": (0.99, 71.4, 159.4), "merge": (0.40, 1.2, 119.0), "only_er": (0.52, 1.2, 159.4),
        "only_mm": (0.87, 71.4, 119.0)}


def side_table(variants=VARIANTS, **change):
    rows = {v: change.get(v, SIDE[v]) for v in variants}
    return pd.DataFrame(rows.values(), index=list(rows),
                        columns=["fraction (closed form)", "Embed GiB (closed form)", "Linear GiB (closed form)"])


def group_times(er_embed=1.0, merge_embed=0.9, merge_linear=54.0, variants=VARIANTS):
    """Modelled communication seconds per group ({variant: {group: s}}), like the paper's Table 1
    column at GPT-2: CrypTen Embed 52.33 s, Linear 74.21 s; ER+MM's Linear 54 s is a 27 % cut."""
    out = {v: {"Embed": 52.0, "Linear": 74.0, "Softmax": 10.0, "Total": 200.0} for v in variants}
    out["only_er"]["Embed"] = er_embed
    out["merge"].update(Embed=merge_embed, Linear=merge_linear, Softmax=0.0)
    return out


#: a link calibration like the paper's (``calibration.paper_link().summary()``), and one that missed a held-out cell
LINK = {"bandwidth_GBps": 2.58, "rtt_ms": 0.70, "residuals_s": {"a": -1.0, "b": 0.5, "c": 0.2},
        "held_out_errors": {"h1": 0.003, "h2": -0.015}, "max_held_out_error": 0.015, "tolerance": 0.1,
        "calibrated": True, "status": "calibrated: every held-out cell predicted within 10%"}


UNCALIBRATED = {**LINK, "held_out_errors": {"h1": 0.25, "h2": -0.015}, "max_held_out_error": 0.25,
                "calibrated": False, "status": "not calibrated: held-out cell h1 predicted +25.0% off"}


def tables12(runs=None, variants=VARIANTS, **kw):
    cf = {v: sum(b for b, _, _ in TABLES12[v].values()) for v in variants}  # closed form = measured
    # speed-ups like the paper's (7.75x at GPT-2, 10.89x at T5): the time claims hold on these
    net_gpt2 = {v: 1.1 for v in variants} | {"crypten": 1.0, "only_er": 1.6, "only_mm": 1.3, "merge": 7.5}
    net_t5 = {**net_gpt2, "merge": 10.5}
    args = dict(closed_form=cf, closed_form_encdec=cf, gpt2_vs_paper=side_table(variants),
                t5_vs_paper=side_table(variants, merge=(0.27, 1.7, 95.0)), network_gpt2=net_gpt2, network_t5=net_t5,
                group_times_gpt2=group_times(), group_times_t5=group_times(merge_linear=45.0), link=LINK)
    args.update(kw)
    return readouts.tables12_cost(tables12_runs() if runs is None else runs, list(variants), 4, 4, **args)


def test_tables12_values():
    out = tables12()
    total = {v: sum(b for b, _, _ in g.values()) for v, g in TABLES12.items()}
    assert out["frac_bytes"]["merge"] == pytest.approx(total["merge"] / total["crypten"])
    assert out["merge_frac_over_closed_form"] == pytest.approx(1.0)
    assert out["embed_cut"] == {"only_er": 0.75, "merge": 0.75}
    assert out["mm_softmax_total"] == 0  # MM variants never entered Softmax
    assert out["baselines_same_embed_linear"] is True
    assert out["merge_fastest"] and out["merge_fewest_bytes"] and out["encdec_merge_fastest"]
    assert out["speedup_time"]["merge"] == pytest.approx(14.0 / 4.0)
    assert out["baselines_max_speedup"] == pytest.approx(14.0 / 11.0)  # thex: 4 + 3 + 1 + 3 s
    assert out["rounds_per_token"]["crypten"] == pytest.approx(72 / 4)
    assert out["embed_cut_closed_form_gpt2"] == pytest.approx(1 - 1.2 / 71.4)
    assert out["linear_cut_closed_form_gpt2"] == pytest.approx(1 - 119.0 / 159.4)
    assert out["network_baselines_max_speedup_t5"] == pytest.approx(1.1)
    for cid in ("t1_merge_fastest", "t2_merge_fewest_bytes", "t1_mm_no_softmax", "t2_baselines_only_cut_softmax",
                "t1_baselines_small_speedup", "t2_fraction_matches_closed_form", "t2_merge_fraction_closed_form_gpt2",
                "t2_embed_linear_cuts_closed_form", "t2_baselines_cut_little",
                "t2_t5_merge_fraction_closed_form", "t1_t5_merge_fastest",
                "t2_encdec_fraction_matches_closed_form"):
        assert verdict(cid, out)[0] == HELD, cid


def test_tables12_closed_form_claims_against_the_papers_sizes():
    # ER+MM at 45 % of CrypTen is more than 5 points from the paper's 37.75 %; a linear cut of 10 %
    # is not the paper's 25 %; a baseline cutting 3 % is not "less than 2 %"
    out = tables12(gpt2_vs_paper=side_table(merge=(0.45, 1.2, 143.5), thex=(0.97, 71.4, 159.4)))
    for cid in ("t2_merge_fraction_closed_form_gpt2", "t2_embed_linear_cuts_closed_form", "t2_baselines_cut_little"):
        assert verdict(cid, out)[0] == CONTRADICTED, cid
    # ER's Embed cut (0.75 here: 250 of 1000 bytes) is below the check's 0.85
    assert verdict("t2_er_removes_embedding", tables12())[0] == CONTRADICTED
    er = {v: {**g, "Embed": (100, 1.0, 1)} if v in ("only_er", "merge") else g for v, g in TABLES12.items()}
    assert verdict("t2_er_removes_embedding", tables12(tables12_runs(gpt=er)))[0] == HELD
    # ER+MM saving more on the encoder-decoder, in the closed form and measured, holds the T5-vs-GPT
    # claim; equal measured fractions or a T5 closed form above GPT-2's do not
    lean = {**TABLES12, "merge": {**TABLES12["merge"], "Linear": (1000, 2.0, 8)}}
    assert verdict("t2_t5_saves_more_than_gpt", tables12(tables12_runs(encdec=lean)))[0] == HELD
    assert verdict("t2_t5_saves_more_than_gpt", tables12())[0] == CONTRADICTED
    out = tables12(tables12_runs(encdec=lean), t5_vs_paper=side_table(merge=(0.41, 1.7, 95.0)))
    assert verdict("t2_t5_saves_more_than_gpt", out)[0] == CONTRADICTED
    with pytest.raises(readouts.MissingResult, match="Linear GiB"):
        tables12(gpt2_vs_paper=side_table().drop(columns="Linear GiB (closed form)"))


def test_tables12_time_claims_follow_the_network_model_not_loopback():
    # loopback says only-ER is fastest; the claims read the closed-form network model, where ER+MM is
    slow = {**TABLES12, "only_er": {g: (b, s / 10, r) for g, (b, s, r) in TABLES12["only_er"].items()}}
    out = tables12(tables12_runs(gpt=slow, encdec=slow))
    assert not out["merge_fastest"] and not out["encdec_merge_fastest"]
    assert verdict("t1_merge_fastest", out)[0] == HELD and verdict("t1_t5_merge_fastest", out)[0] == HELD
    # and the network model decides: only-ER ahead there fails both claims
    fast_er = {v: 1.1 for v in VARIANTS} | {"crypten": 1.0, "only_er": 9.0, "merge": 7.5}
    out = tables12(network_gpt2=fast_er, network_t5=fast_er)
    assert not out["network_merge_fastest_gpt2"] and not out["network_merge_fastest_t5"]
    assert verdict("t1_merge_fastest", out)[0] == CONTRADICTED
    assert verdict("t1_t5_merge_fastest", out)[0] == CONTRADICTED
    # fastest, but far below the paper's 7.75x / 10.89x (what a communication-only LAN model gives):
    # not the paper's size; a T5 speed-up equal to GPT-2's is not "higher"
    small = {v: 1.1 for v in VARIANTS} | {"crypten": 1.0, "only_er": 1.6, "merge": 2.8}
    out = tables12(network_gpt2=small, network_t5={**small, "merge": 4.1})
    assert out["network_merge_fastest_gpt2"] and verdict("t1_merge_fastest", out)[0] == CONTRADICTED
    assert verdict("t1_t5_merge_fastest", out)[0] == HELD
    out = tables12(network_gpt2={**small, "merge": 3.9}, network_t5={**small, "merge": 5.4})
    assert verdict("t1_merge_fastest", out)[0] == CONTRADICTED  # T5 below half of 10.89x
    assert verdict("t1_t5_merge_fastest", tables12(network_t5={**small, "merge": 7.5}))[0] == CONTRADICTED
    # a baseline at 2x or more, at either shape, fails the baselines' claim
    big = {v: 1.1 for v in VARIANTS} | {"crypten": 1.0, "thex": 2.0, "merge": 7.5}
    assert verdict("t1_baselines_small_speedup", tables12(network_gpt2=big))[0] == CONTRADICTED
    assert verdict("t1_baselines_small_speedup", tables12(network_t5={**big, "merge": 10.5}))[0] == CONTRADICTED
    with pytest.raises(readouts.MissingResult, match="network speed-ups at T5"):
        tables12(network_t5={"crypten": 1.0})


def test_table1_embed_time_and_communication_column_claims():
    out = tables12(group_times_t5=group_times(merge_embed=1.2, merge_linear=34.0))
    assert out["embed_time_speedup_only_er_gpt2"] == pytest.approx(52.0)
    assert out["embed_time_cut_only_er_gpt2"] == pytest.approx(1 - 1 / 52.0)
    assert out["merge_embed_comm_factor"]["gpt2"] == pytest.approx(52.0 / 0.9)
    assert out["merge_linear_comm_cut"]["t5"] == pytest.approx(1 - 34.0 / 74.0)
    assert verdict("t1_er_embed_time_cut", out)[0] == HELD
    assert verdict("t1_comm_time_column", out)[0] == HELD
    # an Embed time only 20x below CrypTen's is not the paper's 59x (nor its 98.3 % saving)
    slow = tables12(group_times_gpt2=group_times(er_embed=2.6))
    assert verdict("t1_er_embed_time_cut", slow)[0] == CONTRADICTED
    # a Linear cut of 36 % at T5 is not the paper's 54 %; an Embed factor of 10 at GPT-2 is not its 60
    assert verdict("t1_comm_time_column", tables12(group_times_t5=group_times(merge_embed=1.2, merge_linear=47.0)))[0] \
        == CONTRADICTED
    assert verdict("t1_comm_time_column", tables12(group_times_gpt2=group_times(merge_embed=5.2),
                                                   group_times_t5=group_times(merge_embed=1.2, merge_linear=34.0)))[0] \
        == CONTRADICTED
    # an ER whose Embed cost nothing has no factor (undefined, not infinite): not judged, never held
    free = tables12(group_times_gpt2=group_times(er_embed=0.0))
    assert free["embed_time_speedup_only_er_gpt2"] is None
    assert verdict("t1_er_embed_time_cut", free)[0] == NOT_JUDGED
    with pytest.raises(readouts.MissingResult, match="only_er"):
        tables12(group_times_t5={v: g for v, g in group_times().items() if v != "only_er"})
    with pytest.raises(readouts.MissingResult, match="Linear"):
        tables12(group_times_gpt2={v: {"Embed": 1.0, "Softmax": 0.0} for v in VARIANTS})


def test_table1_single_changes_must_speed_up_less_than_both():
    assert verdict("t1_single_changes_speed_up_less", tables12())[0] == HELD
    # only ER at 0.9x (a slow-down) fails; only MM as fast as ER+MM fails
    base = {v: 1.1 for v in VARIANTS} | {"crypten": 1.0, "only_er": 1.6, "only_mm": 1.3, "merge": 7.5}
    assert verdict("t1_single_changes_speed_up_less", tables12(network_gpt2={**base, "only_er": 0.9}))[0] == CONTRADICTED
    assert verdict("t1_single_changes_speed_up_less",
                   tables12(network_t5={**base, "merge": 10.5, "only_mm": 10.5}))[0] == CONTRADICTED


def test_tables12_merge_not_fewest_bytes_and_baseline_linear_change_fail():
    cheap = {**TABLES12, "thex": {**TABLES12["thex"], "Linear": (100, 3.0, 8)}}
    out = tables12(tables12_runs(gpt=cheap))
    assert not out["merge_fewest_bytes"] and not out["baselines_same_embed_linear"]
    assert verdict("t2_merge_fewest_bytes", out)[0] == CONTRADICTED
    assert verdict("t2_baselines_only_cut_softmax", out)[0] == CONTRADICTED


def test_tables12_mm_softmax_cost_fails_the_claim():
    soft = {**TABLES12, "merge": {**TABLES12["merge"], "Softmax": (10, 0.1, 1)}}
    out = tables12(tables12_runs(gpt=soft))
    assert out["mm_softmax_total"] > 0 and verdict("t1_mm_no_softmax", out)[0] == CONTRADICTED


def test_tables12_missing_data_raises():
    # a variant that did not run
    runs = tables12_runs()
    with pytest.raises(readouts.MissingResult, match="only_mm"):
        tables12(runs[~((runs.variant == "only_mm") & (runs.arch == "encdec"))])
    # a profile without a variant a claim compares
    with pytest.raises(readouts.MissingResult, match="thex"):
        tables12(variants=[v for v in VARIANTS if v != "thex"])
    # no Softmax metered anywhere: "MM has no softmax" must not pass by default
    no_soft = {v: {g: x for g, x in groups.items() if g != "Softmax"} for v, groups in TABLES12.items()}
    with pytest.raises(readouts.MissingResult, match="Softmax"):
        tables12(tables12_runs(gpt=no_soft))


def claims_of(notebook: str) -> list[str]:
    return [cid for cid, c in CLAIMS.items() if c["notebook"] == notebook]


#: the per-variant encoder-decoder dicts (None for a variant not measured) and the one comparison
ENCDEC_PER_VARIANT = ("encdec_frac_bytes", "encdec_speedup_time", "encdec_rounds_ratio")


def test_tables12_encdec_claimed_variants_only():
    # `ci` measures the encoder-decoder for CrypTen and ER+MM only: the baselines' values become None
    # (never a number from fewer rows), the values the claims read and every verdict stay as with seven
    lean = {**TABLES12, "merge": {**TABLES12["merge"], "Linear": (1000, 2.0, 8)}}
    for encdec in (TABLES12, lean):
        runs = tables12_runs(encdec=encdec)
        full = tables12(runs)
        cut = tables12(runs[(runs.arch == "gpt") | runs.variant.isin(readouts.ENCDEC_CLAIMED)],
                       encdec_variants=list(readouts.ENCDEC_CLAIMED))
        assert cut["encdec_merge_fastest"] is None and full["encdec_merge_fastest"] is True
        for key in ENCDEC_PER_VARIANT:
            assert set(cut[key]) == set(full[key]) == set(readouts.TABLES12_VARIANTS), key
            for v in readouts.TABLES12_VARIANTS:
                if v in readouts.ENCDEC_CLAIMED:
                    assert cut[key][v] == pytest.approx(full[key][v]), (key, v)
                else:
                    assert cut[key][v] is None, (key, v)
        assert cut["encdec_merge_frac_over_closed_form"] == pytest.approx(full["encdec_merge_frac_over_closed_form"])
        assert {k: v for k, v in cut.items() if not k.startswith("encdec_")} == \
            {k: v for k, v in full.items() if not k.startswith("encdec_")}
        for cid in claims_of("tables12_cost"):
            assert verdict(cid, cut) == verdict(cid, full), cid
        # decided on the two rows, not left empty: closed form = measured only for TABLES12's bytes
        assert verdict("t2_encdec_fraction_matches_closed_form", cut)[0] == (HELD if encdec is TABLES12 else CONTRADICTED)
        assert verdict("t2_t5_saves_more_than_gpt", cut)[0] == (HELD if encdec is lean else CONTRADICTED)
    # a profile that does not measure ER+MM (or CrypTen) on the encoder-decoder cannot record the claims' rows
    with pytest.raises(readouts.MissingResult, match="merge"):
        tables12(encdec_variants=["crypten", "thex"])
    # a variant listed but not run is missing, as on the GPT
    runs = tables12_runs()
    with pytest.raises(readouts.MissingResult, match="merge"):
        tables12(runs[(runs.arch == "gpt") | (runs.variant == "crypten")], encdec_variants=list(readouts.ENCDEC_CLAIMED))


def _claim_text(c: dict) -> str:
    """Every field of a claim (value, predicate, interval, precondition, reading_value, ...)."""
    return str(c)


def test_profiles_measure_every_encdec_variant_a_claim_reads():
    from privtrans.book import profiles

    # every measured encoder-decoder row a claim reads, e.g. tables12_cost.encdec_frac_bytes.merge
    read = set()
    for c in CLAIMS.values():
        text = _claim_text(c)
        read |= set(re.findall(r"tables12_cost\.(?:%s)\.(\w+)" % "|".join(ENCDEC_PER_VARIANT), text))
        # a comparison over all seven measured rows is None where a profile measures fewer
        assert "encdec_merge_fastest" not in text, c["id"]
    assert read and read <= set(readouts.ENCDEC_CLAIMED)
    for profile in ("smoke", "ci", "paper"):
        cfg = profiles.settings("merge", "tables12_cost", profile)
        assert set(readouts.ENCDEC_CLAIMED) <= set(cfg["encdec"]["variants"]) <= set(cfg["variants"]), profile
    assert profiles.settings("merge", "tables12_cost", "ci")["encdec"]["variants"] == list(readouts.ENCDEC_CLAIMED)
    assert profiles.settings("merge", "tables12_cost", "paper")["encdec"]["variants"] == list(readouts.TABLES12_VARIANTS)


def fig1_runs(enc_softmax_s=6.0, rounds=None):
    """Figure 1's runs (``cost_experiments.fig1_jobs``): per timing round one encoder pass and one
    generation; ``rounds``: {round: (encoder Softmax seconds, generation Gen seconds[, generation
    Embed seconds])} (default one round, Softmax ``enc_softmax_s``, Gen 5 s, Embed 2 s)."""
    rows = []
    for r, (enc_soft, gen_s, *embed_s) in (rounds or {0: (enc_softmax_s, 5.0)}).items():
        enc = {"Embed": (100, 0.5, 1), "Linear": (400, 2.0, 4), "Softmax": (300, enc_soft, 20),
               "Norm": (100, 1.0, 40), "Act": (100, 0.5, 4)}
        gen = {"Embed": (500, (embed_s or [2.0])[0], 4), "Linear": (400, 2.0, 4), "Softmax": (100, 1.0, 8),
               "Gen": (500, gen_s, 20)}
        rows += [dict(x, timing_round=r) for x in run_rows(2 * r, "crypten", enc, kind="encode")
                 + run_rows(2 * r + 1, "crypten", gen)]
    return frame(rows)


#: five timing rounds: the encoder's Softmax and generation's Gen seconds vary a little
ROUNDS5 = {0: (6.0, 5.0), 1: (6.3, 5.2), 2: (5.8, 4.9), 3: (6.1, 5.1), 4: (5.9, 4.8)}


def fig1(rounds=ROUNDS5):
    runs = fig1_runs(rounds=rounds)
    return {**readouts.fig1_time_breakdown(cost_experiments.fig1_shares(runs)), **readouts.fig1_time_rounds(cost_experiments.fig1_round_shares(runs))}


def test_fig1_shares_and_claim():
    out = readouts.fig1_time_breakdown(cost_experiments.fig1_shares(fig1_runs()))
    assert out["enc_time_share_softmax_act_norm"] == pytest.approx(7.5 / 10)
    assert out["gen_byte_share_embed_gen"] == pytest.approx(1000 / 1500)
    assert out["enc_byte_share_embed_gen"] == pytest.approx(100 / 1000)  # the encoder has no Gen group
    assert sum(out["gen_time_shares"].values()) == pytest.approx(1.0)
    # the encoder's largest group is Softmax (6 of 10 s), generation's is Gen (5 of 10 s)
    assert out["enc_time_share_largest"] == pytest.approx(0.6) and out["enc_time_largest_group"] == "Softmax"
    assert out["gen_time_share_largest"] == pytest.approx(0.5) and out["gen_time_largest_group"] == "Gen"
    assert verdict("fig1_generator_embed_gen_bytes", out)[0] == HELD


def test_fig1_time_claims_are_judged_across_timing_rounds():
    out = fig1()
    assert out["timing_rounds"] == 5
    assert out["enc_time_share_softmax_act_norm_by_round"][1] == pytest.approx(7.8 / 10.3)
    cell = out["enc_nonlinear_time_share"]
    assert cell["n"] == 5 and cell["planned"] == 5
    assert cell["mean"] == pytest.approx(np.mean(out["enc_time_share_softmax_act_norm_by_round"]))
    gap = out["gen_time_balanced"]["largest share: encoder − generation"]
    assert gap["mean"] == pytest.approx(np.mean([e - g for e, g in zip(out["enc_time_share_largest_by_round"],
                                                                       out["gen_time_share_largest_by_round"])]))
    assert out["gen_time_balanced"]["Embed + Gen share − 0.25"]["mean"] == pytest.approx(
        np.mean(out["gen_time_share_embed_gen_by_round"]) - 0.25)
    assert interval_verdict("fig1_encoder_nonlinear_dominates", out) == HELD
    assert interval_verdict("fig1_generator_time_balanced", out) == HELD
    # an encoder dominated by its linear layers fails the encoder claim, and generation (largest
    # share ~0.5) is then no more balanced than the encoder (largest share ~2 / 4.1, Linear)
    low = fig1({r: (0.1 + i / 100, g) for i, (r, (_, g)) in enumerate(ROUNDS5.items())})
    assert interval_verdict("fig1_encoder_nonlinear_dominates", low) == CONTRADICTED
    assert interval_verdict("fig1_generator_time_balanced", low) == CONTRADICTED
    # Embed + Gen under a quarter of generation's time at every round: contradicted, whatever the balance
    thin = fig1({r: (e, 0.2 + i / 50, 0.1) for i, (r, (e, _)) in enumerate(ROUNDS5.items())})
    assert max(thin["gen_time_share_embed_gen_by_round"]) < 0.25
    assert interval_verdict("fig1_generator_time_balanced", thin) == CONTRADICTED
    # one timing round decides nothing
    with pytest.raises(readouts.MissingResult, match="two timing rounds"):
        fig1({0: (6.0, 5.0)})


def test_fig1_null_time_shares_at_the_thresholds_are_not_held():
    """The null: the encoder's nonlinear share at one half, give or take; generation's largest share
    as large as the encoder's and Embed + Gen at a quarter, give or take: judged, never held."""
    noise = (0.0, 0.01, -0.012, 0.008, -0.006)
    # encoder: Softmax s.t. (Softmax + 1.5) / (Softmax + 4) = 0.5 + e
    at_half = {r: ((0.5 + e) * 4 - 1.5) / (0.5 - e) for r, e in enumerate(noise)}
    out = fig1({r: (x, 5.0) for r, x in at_half.items()})
    assert out["enc_nonlinear_time_share"]["mean"] == pytest.approx(0.5, abs=0.01)
    assert interval_verdict("fig1_encoder_nonlinear_dominates", out) in NOT_HELD
    # generation: the shares set directly, the encoder's largest (Softmax) as large as generation's
    # and Embed + Gen at a quarter, each give or take the round's noise
    by_round = {}
    for r, e in enumerate(noise):
        enc = pd.Series({"Embed": 0.05, "Linear": 0.25, "Softmax": 0.4 + e, "Norm": 0.2 - e, "Act": 0.1})
        gen = pd.Series({"Embed": 0.05, "Gen": 0.2 + e, "Linear": 0.15, "Softmax": 0.4 - e / 2, "Norm": 0.2 - e / 2})
        by_round[r] = pd.DataFrame({cost_experiments.ENCODER: enc, cost_experiments.GENERATOR: gen}).T.fillna(0.0)
    out = readouts.fig1_time_rounds(by_round)
    assert out["gen_time_balanced"]["Embed + Gen share − 0.25"]["mean"] == pytest.approx(0.0, abs=0.01)
    assert abs(out["gen_time_balanced"]["largest share: encoder − generation"]["mean"]) < 0.01
    assert interval_verdict("fig1_generator_time_balanced", out) in NOT_HELD


def test_fig1_missing_run_raises():
    shares = cost_experiments.fig1_shares(fig1_runs())
    with pytest.raises(readouts.MissingResult, match="encoder"):
        readouts.fig1_time_breakdown({k: t.drop(index=cost_experiments.ENCODER) for k, t in shares.items()})
    by_round = cost_experiments.fig1_round_shares(fig1_runs(rounds=ROUNDS5))
    with pytest.raises(readouts.MissingResult, match="round 3"):
        readouts.fig1_time_rounds({**by_round, 3: by_round[3].drop(index=cost_experiments.GENERATOR)})
    # runs made without timing rounds cannot be split into them
    with pytest.raises(ValueError, match="timing round"):
        cost_experiments.fig1_round_shares(fig1_runs().drop(columns="timing_round"))


ENC = {"mpcformer_sf2relu": 2.7, "mpcformer_sf2quad": 3.8, "thex": 1.8, "merge": 5.4}


GEN = {"mpcformer_sf2relu": 1.1, "mpcformer_sf2quad": 1.1, "thex": 1.2, "merge": 2.8}


def test_fig1a_substitutes_help_the_encoder_not_generation():
    out = readouts.fig1a_speedups(ENC, GEN, LINK)
    assert out["mpcformer_min_speedup_encoder"] == 2.7 and out["mpcformer_max_speedup_generation"] == 1.1
    assert verdict("fig1a_substitutes_help_encoder_not_generation", out)[0] == HELD
    # one substitute below half the figure's 4x on the encoder fails; so does 2x or more on generation
    assert verdict("fig1a_substitutes_help_encoder_not_generation",
                   readouts.fig1a_speedups({**ENC, "mpcformer_sf2relu": 1.9}, GEN, LINK))[0] == CONTRADICTED
    assert verdict("fig1a_substitutes_help_encoder_not_generation",
                   readouts.fig1a_speedups(ENC, {**GEN, "mpcformer_sf2quad": 2.0}, LINK))[0] == CONTRADICTED
    # the same speed-up on both (what a substitute that changes nothing would give) fails
    assert verdict("fig1a_substitutes_help_encoder_not_generation", readouts.fig1a_speedups(GEN, GEN, LINK))[0] == CONTRADICTED
    with pytest.raises(readouts.MissingResult, match="sf2quad"):
        readouts.fig1a_speedups({"mpcformer_sf2relu": 2.7}, GEN, LINK)


N_NEWS, LAYERS = [2, 8], [1, 2]


def fig4_runs(er_embed_grows=False, drop=None):
    rows, job = [], 0
    for n in N_NEWS:
        for v in ("crypten", "only_er", "merge"):
            er = v != "crypten"
            per_token = not er or er_embed_grows  # ER embeds the prefix once, not every token
            groups = {"Embed": (100 * (n if per_token else 1), 0.1 * n, n if per_token else 1),
                      "Linear": (400 * n, (0.2 if er else 0.5) * n * n, (2 if er else 10) * n)}
            if (v, n) != drop:
                rows += run_rows(job, v, groups, n_new=n, sweep="length")
            job += 1
    for L in LAYERS:
        for v in ("crypten", "merge"):
            rows += run_rows(job, v, {"Linear": (1000 * L * (1 if v == "crypten" else 0.5), 2.0 * L, 4 * L)},
                             n_new=2, sweep="layers", layers=L)
            job += 1
    return frame(rows)


#: the size sweep (``size_sweep_network``): per size, speed-ups over CrypTen and GiB; ER+MM ~10x
#: over the fastest existing method (THE-X) at every size, its byte gap growing with size
SIZES = {"params (M)": [81.0, 180.0, 393.0], "crypten speed-up": [1.0] * 3,
         "mpcformer_sf2relu speed-up": [1.1] * 3, "mpcformer_sf2quad speed-up": [1.1] * 3,
         "thex speed-up": [1.2] * 3, "merge speed-up": [12.0, 12.6, 13.2],
         "crypten GiB": [230.0, 420.0, 830.0], "mpcformer_sf2relu GiB": [228.0, 416.0, 820.0],
         "mpcformer_sf2quad GiB": [228.0, 416.0, 820.0], "thex GiB": [229.0, 418.0, 825.0],
         "merge GiB": [70.0, 200.0, 500.0]}


def size_sweep(**change):
    return pd.DataFrame({**SIZES, **change}).iloc[::-1]  # any order: the readout sorts by size


def fig4(runs=None, variants=("crypten", "only_er", "merge"), net=None, cf_fractions=(0.5, 0.4, 0.3),
         thex=None, size=None, link=LINK, readings=None):
    net = {64: 4.0, 128: 7.75, 256: 14.0, 512: 26.0} if net is None else net
    thex = {n: 2.0 for n in net} if thex is None else thex
    cfl = pd.DataFrame({"ER+MM fraction": list(cf_fractions)}, index=pd.Index([512, 64, 128], name="x"))
    saved = pd.DataFrame({"count": [cost_experiments.WITH_ARGMAX, cost_experiments.WITHOUT_ARGMAX], "bytes saved by ER+MM": [0.7, 0.9]})
    return readouts.fig4_scaling(fig4_runs() if runs is None else runs, list(variants), N_NEWS, cfl, saved, net,
                          thex, size_sweep() if size is None else size, link=link, readings=readings)


def test_fig4_values_and_claims():
    out = fig4()
    # rounds: CrypTen 11 per token, ER+MM 1 + 2 per token: the ratio grows with the length
    assert out["rounds_ratio_long"] > out["rounds_ratio_short"]
    assert out["speedup_long"] > out["speedup_short"]
    assert out["er_embed_flat"] is True
    assert out["closed_form_fraction_longest"] == 0.5  # the longest length, not the last row
    assert out["len64_saved_with_argmax"] == 0.7 and out["len64_saved_without_argmax"] == 0.9
    assert out["depth_gap_bytes_grows"] is True
    for cid in ("fig4_speedup_grows_with_length", "fig4_er_embed_flat", "len64_bytes_saved"):
        assert verdict(cid, out)[0] == HELD, cid
    assert out["network_speedup_growth_128_512"] == pytest.approx(26.0 / 7.75)
    assert verdict("fig4_bytes_cut_at_512", out)[0] == CONTRADICTED  # 0.5, not about 0.2
    assert verdict("fig4_bytes_cut_at_512", fig4(cf_fractions=(0.22, 0.4, 0.3)))[0] == HELD
    assert out["network_speedup_short"] == 4.0 and out["network_speedup_long"] == 26.0
    # any growth is not the paper's growth: 2.77x -> 2.83x (a KV-cached, bandwidth-bound model) fails
    slow = fig4(net={64: 2.70, 128: 2.77, 256: 2.80, 512: 2.83})
    assert slow["speedup_long"] > slow["speedup_short"] and slow["network_speedup_long"] > slow["network_speedup_short"]
    assert verdict("fig4_speedup_grows_with_length", slow)[0] == CONTRADICTED
    # a growth just under half the paper's (3.42 / 2 = 1.71) fails, just over holds
    assert verdict("fig4_speedup_grows_with_length", fig4(net={128: 10.0, 512: 17.0}))[0] == CONTRADICTED
    assert verdict("fig4_speedup_grows_with_length", fig4(net={128: 10.0, 512: 17.2}))[0] == HELD
    # without the paper's two lengths the growth is not computed: not judged, never held
    out = fig4(net={64: 2.9, 256: 2.8})
    assert out["network_speedup_growth_128_512"] is None
    assert verdict("fig4_speedup_grows_with_length", out)[0] == NOT_JUDGED
    with pytest.raises(readouts.MissingResult, match="two lengths"):
        fig4(net={128: 2.8})


def test_time_claims_are_judged_only_through_a_calibrated_link():
    """A link that misses a held-out cell of the paper's own Table 1 judges no time claim: each is
    not judged, with the calibration's reason; a byte claim does not read the link."""
    time_claims = [cid for cid, c in CLAIMS.items() if "link_calibration" in (c.get("precondition") or "")]
    assert {"t1_merge_fastest", "t1_t5_merge_fastest", "t1_comm_time_column", "fig4_speedup_grows_with_length",
            "fig4_merge_over_thex_at_512", "fig4_size_speedup_about_10x", "fig4_size_speedup_does_not_grow",
            "fig1a_substitutes_help_encoder_not_generation"} <= set(time_claims)
    outs = {"tables12_cost": tables12(link=UNCALIBRATED), "fig4_scaling": fig4(link=UNCALIBRATED),
            "fig1_time_breakdown": readouts.fig1a_speedups(ENC, GEN, UNCALIBRATED)}
    for cid in time_claims:
        c = CLAIMS[cid]
        (row,) = claims.evaluate("merge", {"claims": [c]}, {c["notebook"]: {"profile": "ci", "values": _jsonable(
            outs[c["notebook"]])}}, "ci")
        assert row["verdict"] == NOT_JUDGED and "link_calibration.calibrated" in row["reason"], cid
    assert verdict("fig4_bytes_cut_at_512", fig4(link=UNCALIBRATED, cf_fractions=(0.22, 0.4, 0.3)))[0] == HELD
    with pytest.raises(readouts.MissingResult, match="link calibration"):
        tables12(link={"calibrated": True})


def test_fig4_merge_over_thex_at_512():
    out = fig4()
    assert out["network_merge_over_thex_512"] == pytest.approx(13.0)
    assert verdict("fig4_merge_over_thex_at_512", out)[0] == HELD
    # 2.4x over THE-X (what a bandwidth-bound model with a KV cache gives) is not the paper's 11.8x
    out = fig4(net={128: 2.77, 512: 2.83}, thex={128: 1.16, 512: 1.18})
    assert verdict("fig4_merge_over_thex_at_512", out)[0] == CONTRADICTED
    # THE-X not modelled at 512: no factor, not judged
    out = fig4(thex={128: 1.16})
    assert out["network_merge_over_thex_512"] is None
    assert verdict("fig4_merge_over_thex_at_512", out)[0] == NOT_JUDGED


def test_fig4_lower_row_size_claims():
    out = fig4()
    assert out["size_min_merge_over_existing"] == pytest.approx(12.0 / 1.2)
    assert out["size_speedup_growth"] == pytest.approx(1.1)
    assert out["size_bytes_gap_grows"] is True
    assert out["size_bytes_gap_gib"]["81M"]["thex"] == pytest.approx(159.0)
    for cid in ("fig4_size_speedup_about_10x", "fig4_size_speedup_does_not_grow", "fig4_size_gap_grows"):
        assert verdict(cid, out)[0] == HELD, cid
    # ~2x over the fastest existing method is not ~10x; a speed-up doubling with size is a significant improvement
    out = fig4(size=size_sweep(**{"merge speed-up": [3.9, 2.4, 2.0]}))
    assert verdict("fig4_size_speedup_about_10x", out)[0] == CONTRADICTED
    # a speed-up that halves over the sizes does not stay "about the same" either (two-sided)
    assert out["size_speedup_growth"] == pytest.approx(2.0 / 3.9)
    assert verdict("fig4_size_speedup_does_not_grow", out)[0] == CONTRADICTED
    out = fig4(size=size_sweep(**{"merge speed-up": [12.0, 11.0, 9.0]}))  # 0.75: within a factor 1.5
    assert verdict("fig4_size_speedup_does_not_grow", out)[0] == HELD
    out = fig4(size=size_sweep(**{"merge speed-up": [6.0, 9.0, 12.0]}))
    assert verdict("fig4_size_speedup_does_not_grow", out)[0] == CONTRADICTED
    # a gap that shrinks at one step (to any one baseline) does not grow
    out = fig4(size=size_sweep(**{"thex GiB": [229.0, 418.0, 690.0]}))
    assert verdict("fig4_size_gap_grows", out)[0] == CONTRADICTED
    with pytest.raises(readouts.MissingResult, match="thex"):
        fig4(size=size_sweep().drop(columns="thex GiB"))
    with pytest.raises(readouts.MissingResult, match="two sizes"):
        fig4(size=size_sweep().iloc[:1])


def test_fig4_claims_read_no_measured_depth_row():
    # `ci` measures 1 and 2 layers only: no claim reads the measured depth sweep, so a depth sweep that
    # says the opposite (ER+MM's bytes above CrypTen's, the gap shrinking) changes no verdict
    runs = fig4_runs()
    flipped = runs.copy()
    layers = (flipped.sweep == "layers") & (flipped.variant == "merge")
    flipped.loc[layers, "bytes"] = 1500 * flipped.loc[layers, "layers"]
    flipped.loc[layers, "seconds"] *= 5
    out, other = fig4(runs), fig4(flipped)
    assert out["depth_gap_bytes_grows"] is True and other["depth_gap_bytes_grows"] is False
    assert out["depth_speedup"] != other["depth_speedup"]
    for cid in claims_of("fig4_scaling"):
        assert "depth_" not in _claim_text(CLAIMS[cid]), cid
        assert verdict(cid, out) == verdict(cid, other), cid
    # and the profiles: `ci` keeps a measured growth (two depths), `paper` every depth it had
    from privtrans.book import profiles

    layers_of = {p: profiles.settings("merge", "fig4_scaling", p)["layers"] for p in ("smoke", "ci", "paper")}
    assert layers_of["ci"] == [1, 2] and layers_of["paper"] == [6, 20, 32, 50]


def test_fig4_growing_embed_fails_and_missing_runs_raise():
    out = fig4(fig4_runs(er_embed_grows=True))
    assert out["er_embed_flat"] is False and verdict("fig4_er_embed_flat", out)[0] == CONTRADICTED
    # an ER run that did not happen is not "flat"
    with pytest.raises(readouts.MissingResult, match="only_er"):
        fig4(fig4_runs(drop=("only_er", 8)))
    with pytest.raises(readouts.MissingResult, match="merge"):
        fig4(fig4_runs(drop=("merge", 2)))
    # no ER variant in the profile: nothing to judge, and the claim does not hold by default
    out = fig4(variants=("crypten",))
    assert out["er_embed_flat"] is None and verdict("fig4_er_embed_flat", out)[0] == NOT_JUDGED


def trained(variant, val_total, val_ce=None, diverged=False):
    steps = list(range(0, 10 * len(val_total), 10))
    hist = {"step": list(range(1, 31)), "train": {"total": list(np.linspace(2, 1, 30))},
            "val_step": steps, "val": {"total": list(val_total), "ce": list(val_ce or val_total)}}
    return Trained(model=None, variant=variant, decoding="er", history=hist, diverged=diverged)


def test_fig6_values_and_claims():
    teacher = trained("teacher", [5.0, 2.0, 1.0])
    runs = {"merge": trained("merge", [3.0, 3.3, 2.0, 1.2], val_ce=[2.0, 2.2, 1.5, 1.0]),
            "only_er": trained("only_er", [2.0, 1.5, 1.0])}
    out = readouts.fig6_retraining(runs, teacher, "acts")
    m = out["runs"]["merge"]
    assert m["converged"] and m["stable"] and m["val_rises_initially"]
    assert out["merge_val_ratio"] == pytest.approx(0.4)
    assert out["swap_ce_jump"]["merge"] == pytest.approx(2.0)
    assert verdict("fig6_retraining_converges", out)[0] == HELD
    assert verdict("fig6_swap_raises_val_loss", out)[0] == HELD
    # a swap that costs nothing (step-0 CE at the teacher's) does not raise the loss
    flat = readouts.fig6_retraining({"merge": trained("merge", [3.0, 1.2], val_ce=[1.0, 0.9])}, teacher, "acts")
    assert verdict("fig6_swap_raises_val_loss", flat)[0] == CONTRADICTED


def test_fig6_unstable_or_diverged_fails():
    teacher = trained("teacher", [5.0, 2.0, 1.0])
    # a jump above STABLE_JUMP x the running minimum after the start
    jump = 1.01 * quality_experiments.STABLE_JUMP * 1.0
    out = readouts.fig6_retraining({"merge": trained("merge", [3.0, 1.0, jump, 0.9])}, teacher, "acts")
    assert out["merge_stable"] is False and verdict("fig6_retraining_converges", out)[0] == CONTRADICTED
    out = readouts.fig6_retraining({"merge": trained("merge", [3.0, 1.0, 0.9], diverged=True)}, teacher, "acts")
    assert out["merge_converged"] is False and verdict("fig6_retraining_converges", out)[0] == CONTRADICTED
    with pytest.raises(readouts.MissingResult, match="merge"):
        readouts.fig6_retraining({"only_er": trained("only_er", [2.0, 1.0, 0.5])}, teacher, "acts")


def test_fig6_claims_ask_every_student_seed():
    teacher = trained("teacher", [5.0, 2.0, 1.0])
    good = trained("merge", [3.0, 3.3, 2.0, 1.2], val_ce=[2.0, 2.2, 1.5, 1.0])
    runs = {"merge": good}
    by_seed = {0: good, 1: trained("merge", [3.0, 2.0, 1.0], val_ce=[3.0, 2.0, 1.0]),
               2: trained("merge", [4.0, 2.0, 1.6], val_ce=[1.5, 1.2, 1.0])}
    out = readouts.fig6_retraining(runs, teacher, "acts", by_seed)
    assert out["n_merge_seeds"] == 3 and out["n_merge_converged_stably"] == 3 and out["seeds"] == [0, 1, 2]
    assert out["max_merge_val_ratio"] == pytest.approx(0.4)
    assert out["min_merge_swap_ce_jump"] == pytest.approx(1.5)
    assert out["merge_by_seed"]["1"]["swap_ce_jump"] == pytest.approx(3.0)
    assert verdict("fig6_retraining_converges", out)[0] == HELD
    assert verdict("fig6_swap_raises_val_loss", out)[0] == HELD
    # one seed of three ends at 0.6 of its start (not below half) and one has no jump: both contradicted
    # although the figure's seed alone would hold both
    slow = {**by_seed, 1: trained("merge", [3.0, 2.5, 1.8], val_ce=[3.0, 2.5, 1.8]),
            2: trained("merge", [4.0, 2.0, 1.6], val_ce=[0.9, 0.8, 0.7])}
    out = readouts.fig6_retraining(runs, teacher, "acts", slow)
    assert out["n_merge_converged_stably"] == 2 and out["merge_by_seed"]["1"]["converged_stably"] is False
    assert verdict("fig6_retraining_converges", out)[0] == CONTRADICTED
    assert verdict("fig6_swap_raises_val_loss", out)[0] == CONTRADICTED
    assert verdict("fig6_retraining_converges", readouts.fig6_retraining(runs, teacher, "acts"))[0] == HELD


#: per row: (BERTScore-proxy, chrF++); None = the model diverged (NaN metrics)
TABLE3 = {"GPT (teacher)": (0.90, 40.0), "+ER (no train)": (0.50, 4.0), "+MPCformer (sf2relu)": (0.92, 38.0),
          "+MPCformer (sf2quad)": (0.91, 37.0), "+THE-X": (0.90, 36.0), "+MERGE (ours)": (0.89, 30.0),
          "+MERGE only ER": (0.90, 39.0), "+MERGE only MM": (0.90, 35.0)}


def table3_frame(per_task: dict) -> pd.DataFrame:
    rows = []
    for task, spec in per_task.items():
        for label, _, _ in quality_experiments.TABLE3_ROWS:
            if label not in spec:
                continue
            bert, chrf = spec[label] if spec[label] is not None else (np.nan, np.nan)
            rows.append({"task": task, "model": label, "status": "diverged" if spec[label] is None else "trained",
                         **{m: 0.5 for m in quality_experiments.METRIC_ORDER}, "BERTScore-proxy": bert, "chrF++": chrf})
    return pd.DataFrame(rows)


def test_table3_values_and_claims():
    out = readouts.table3_quality(table3_frame({"acts": TABLE3, "chat": TABLE3}), ["acts", "chat"])
    assert out["per_task"]["acts"]["er_no_train_chrf_ratio"] == pytest.approx(0.1)
    assert out["max_merge_gap_bertproxy"] == pytest.approx(0.03)
    assert out["merge_beats_er_no_train_all"] is True
    assert out["n_single_closer"] == 4 and out["n_single_pairs"] == 4
    assert out["sf2quad_or_thex_failed"] is False
    assert out["n_sf2quad_thex_failed"] == 0 and out["n_sf2quad_thex"] == 4
    assert out["merge_gap_bertproxy_by_task"] == pytest.approx({"acts": 0.03, "chat": 0.03})
    assert verdict("table3_sf2quad_thex_fail_to_train", out)[0] == CONTRADICTED


def interval_verdict(claim_id: str, values: dict, profile: str = "ci") -> str:
    c = CLAIMS[claim_id]
    (row,) = claims.evaluate("merge", {"claims": [c]},
                             {c["notebook"]: {"profile": profile, "values": _jsonable(values)}}, profile)
    return row["verdict"]


SEEDS3 = [0, 1, 2]


def seeds_frame(dist: dict, tasks=("acts", "concepts", "chat"), teacher=40.0, noise=(0.0, 0.7, -0.5), er=4.0,
                bert=None, proxy_span=None):
    """across_student_seeds' rows: per task the teacher, the teacher with ER and no re-training
    (chrF++ ``er``), and MERGE / only-ER / only-MM at SEEDS3 at the given distance below the
    teacher's chrF++ (dist: {variant: distance}, plus seed noise); None = diverged. MPCformer
    (sf2relu) trained at every seed; ``bert``: {variant: BERTScore-proxy per seed} (default: 0.9). The
    teacher's proxy is 0.95 and ER (no train)'s ``proxy_span`` below it (default: the paper's
    BERTScore span, so the proxy's scale to BERTScore is 1)."""
    rows = []
    bert = bert or {}
    spans = quality_experiments.paper_bertscore_span()
    for task in tasks:
        span = spans[task] if proxy_span is None else proxy_span
        rows.append({"task": task, "model": "teacher", "seed": 0, "status": "teacher", "chrF++": teacher,
                     "BERTScore-proxy": 0.95})
        rows.append({"task": task, "model": "er_no_train", "seed": 0, "status": "no re-training", "chrF++": er,
                     "BERTScore-proxy": 0.95 - span})
        for v, d in {"mpcformer_sf2relu": 1.0, **dist}.items():
            for i, (s, e) in enumerate(zip(SEEDS3, noise)):
                b = bert.get(v, [0.9] * len(SEEDS3))[i]
                rows.append({"task": task, "model": v, "seed": s, "status": "trained",
                             "chrF++": np.nan if d is None else teacher - d + e * (v != "merge"),
                             "BERTScore-proxy": np.nan if d is None or b is None else b})
    return pd.DataFrame(rows)


def test_table3_seeds_judges_each_pair_across_seeds():
    out = readouts.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0}), ["acts", "concepts", "chat"])
    cell = out["single_closer"]["acts / only-ER"]
    assert cell["n"] == 3 and cell["mean"] == pytest.approx(5.0 - np.mean([0.0, -0.7, 0.5]))
    assert out["n_seeds"] == 3 and out["chrf_by_seed"]["chat"]["teacher"] == 40.0 and out["seeds"] == SEEDS3
    assert out["chrf_by_seed"]["acts"]["seeds"] == SEEDS3
    assert out["distance_by_seed"]["acts"]["merge"] == pytest.approx([8.0] * 3)
    assert out["distance_by_seed"]["acts"]["only_er"] == pytest.approx([3.0, 2.3, 3.5])
    assert interval_verdict("table3_single_changes_closer", out) == "held"
    # the null: each change alone as far from the teacher as both, plus seed noise: never held
    out = readouts.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 8.0, "only_mm": 8.0}), ["acts", "concepts", "chat"])
    assert interval_verdict("table3_single_changes_closer", out) in NOT_HELD
    # singles farther from the teacher than MERGE everywhere: 0 of 6 can clear, contradicted
    out = readouts.table3_seeds(seeds_frame({"merge": 2.0, "only_er": 9.0, "only_mm": 8.0}), ["acts", "concepts", "chat"])
    assert interval_verdict("table3_single_changes_closer", out) == "contradicted"
    # a diverged single change has no pairs: its cells are not judged, and 3 of 6 cannot make 4
    out = readouts.table3_seeds(seeds_frame({"merge": 8.0, "only_er": None, "only_mm": 2.0}), ["acts", "concepts", "chat"])
    assert out["single_closer"]["acts / only-ER"]["n"] == 0
    assert interval_verdict("table3_single_changes_closer", out) == "not judged"
    with pytest.raises(readouts.MissingResult, match="only_mm"):
        readouts.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0}), ["acts"])


def test_table3_seeds_judge_merge_against_er_without_training_across_seeds():
    noisy = (0.0, 0.7, -0.5)  # MERGE's own spread across seeds
    frame = seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0}, er=4.0)
    frame.loc[frame.model == "merge", "chrF++"] += np.tile(noisy, 3)
    out = readouts.table3_seeds(frame, ["acts", "concepts", "chat"])
    cell = out["merge_recovers"]["chat"]
    assert cell["n"] == 3 and cell["mean"] == pytest.approx(40.0 - 8.0 - 4.0 + np.mean(noisy))
    assert out["chrf_by_seed"]["acts"]["er_no_train"] == 4.0
    assert interval_verdict("table3_merge_recovers_from_er", out) == "held"
    # the null: MERGE no better than ER without re-training, plus seed noise: never held
    out = readouts.table3_seeds(frame.assign(**{"chrF++": frame["chrF++"].where(frame.model != "er_no_train", 32.0)}),
                         ["acts", "concepts", "chat"])
    assert out["merge_recovers"]["acts"]["mean"] == pytest.approx(np.mean(noisy))
    assert interval_verdict("table3_merge_recovers_from_er", out) in NOT_HELD
    # MERGE below ER without re-training on one task: contradicted
    worse = frame.copy()
    worse.loc[(worse.model == "er_no_train") & (worse.task == "concepts"), "chrF++"] = 39.0
    assert interval_verdict("table3_merge_recovers_from_er", readouts.table3_seeds(worse, ["acts", "concepts", "chat"])) \
        == "contradicted"
    # a diverged MERGE has no pair; without ER's row the readout refuses
    out = readouts.table3_seeds(seeds_frame({"merge": None, "only_er": 3.0, "only_mm": 2.0}), ["acts"])
    assert out["merge_recovers"]["acts"]["n"] == 0
    with pytest.raises(readouts.MissingResult, match="er_no_train"):
        readouts.table3_seeds(frame[frame.model != "er_no_train"], ["acts"])


def test_table3_seeds_judge_merge_close_to_mpcformer_across_seeds():
    mpc = [0.90, 0.92, 0.88]

    def out(merge, tasks=("acts", "concepts", "chat")):
        bert = {"mpcformer_sf2relu": mpc, "merge": merge}
        return readouts.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0}, tasks, bert=bert), list(tasks))

    # MERGE 0.01 below MPCformer at every seed, give or take: the interval clears -0.031
    close = out([0.892, 0.908, 0.871])
    cell = close["merge_minus_mpcformer"]["acts"]
    assert cell["n"] == 3 and cell["mean"] == pytest.approx(np.mean([-0.008, -0.012, -0.009]))
    assert close["close_by_seed"]["chat"] == {"seeds": SEEDS3, "merge": pytest.approx([0.892, 0.908, 0.871]),
                                              "mpcformer_sf2relu": pytest.approx(mpc)}
    assert interval_verdict("table3_merge_close_to_mpcformer", close) == "held"
    # the null at the margin: MERGE exactly 0.031 below, plus seed noise: never held
    at_margin = out([m - 0.031 + e for m, e in zip(mpc, (0.004, -0.006, 0.002))])
    assert at_margin["merge_minus_mpcformer"]["acts"]["mean"] == pytest.approx(-0.031)
    assert interval_verdict("table3_merge_close_to_mpcformer", at_margin) in NOT_HELD
    # 0.1 below at every seed: the interval excludes "close", contradicted
    far = out([m - 0.1 + e for m, e in zip(mpc, (0.004, -0.006, 0.002))])
    assert interval_verdict("table3_merge_close_to_mpcformer", far) == "contradicted"
    # the proxy in BERTScore units: our span half the paper's doubles every gap (0.01 -> 0.02 below)
    scaled = readouts.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0},
                                               bert={"mpcformer_sf2relu": mpc, "merge": [0.892, 0.908, 0.871]},
                                               proxy_span=quality_experiments.paper_bertscore_span()["acts"] / 2),
                                   ["acts"])
    assert scaled["proxy_scale"]["acts"]["scale"] == pytest.approx(2.0)
    assert scaled["merge_minus_mpcformer_bertscore_units"]["acts"]["mean"] == pytest.approx(
        2 * np.mean([-0.008, -0.012, -0.009]))
    # ER (no train) not below the teacher on the proxy: no scale, the claim is not judged
    flat_frame = seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0},
                             bert={"mpcformer_sf2relu": mpc, "merge": [0.892, 0.908, 0.871]}, proxy_span=0.0)
    flat = readouts.table3_seeds(flat_frame, ["acts", "concepts", "chat"])
    assert flat["proxy_scaled"] is False and flat["merge_minus_mpcformer_bertscore_units"]["acts"] is None
    assert interval_verdict("table3_merge_close_to_mpcformer", flat) == "not judged"
    # a diverged MPCformer seed has no pair, never a gap of 0; with one seed left, not judged
    diverged = readouts.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0},
                                          bert={"mpcformer_sf2relu": [0.9, None, None]}), ["acts", "concepts", "chat"])
    assert diverged["merge_minus_mpcformer"]["acts"]["n"] == 1
    assert interval_verdict("table3_merge_close_to_mpcformer", diverged) == "not judged"
    with pytest.raises(readouts.MissingResult, match="mpcformer_sf2relu"):
        readouts.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0}).query("model != 'mpcformer_sf2relu'"),
                       ["acts"])


#: Table 3's first two rows across teacher seeds: per seed (teacher chrF++, ER chrF++)
TEACHER_SEEDS = [0, 1, 2, 3, 4]


def teachers_frame(chrf=None, other=None, bart=None, tasks=("acts", "chat")):
    """across_teacher_seeds' rows: per task and teacher seed the teacher and its ER decoding.
    ``chrf``/``other``/``bart``: {task: [(teacher, ER) per seed]} for chrF++, every n-gram column and
    the BARTScore-proxy (defaults: ER keeps 10 % of chrF++ and 30 % of each n-gram column, and its
    proxy is 2 below the teacher's, each with seed noise)."""
    noise = [0.0, 0.7, -0.5, 0.3, -0.4]
    rows = []
    for task in tasks:
        c = (chrf or {}).get(task) or [(40.0 + e, 4.0 + e / 4) for e in noise]
        o = (other or {}).get(task) or [(0.5 + e / 10, 0.15 + e / 30) for e in noise]
        b = (bart or {}).get(task) or [(-1.0 + e / 5, -3.0 + e / 3) for e in noise]
        for s, (tc, ec), (to, eo), (tb, eb) in zip(TEACHER_SEEDS, c, o, b):
            for model, cv, ov, bv in (("teacher", tc, to, tb), ("er_no_train", ec, eo, eb)):
                rows.append({"task": task, "model": model, "seed": s, **{m: ov for m in quality_experiments.METRIC_ORDER},
                             "chrF++": cv, "BARTScore-proxy": bv})
    return pd.DataFrame(rows)


def test_table3_teachers_collapse_judged_across_teacher_seeds():
    out = readouts.table3_teachers(teachers_frame(), ["acts", "chat"])
    assert out["seeds"] == TEACHER_SEEDS and out["n_seeds"] == 5
    assert out["chrf_lost"]["acts"]["mean"] == pytest.approx(0.9, abs=0.01)
    assert out["ngram_lost"]["chat"]["NIST"]["mean"] == pytest.approx(0.7, abs=0.01)
    assert out["ngram_lost_by_task"]["chat"]["NIST"] == out["ngram_lost"]["chat"]["NIST"]["mean"]
    assert out["bartproxy_fall_by_task"]["acts"] == pytest.approx(2.0, abs=0.1)
    assert out["chrf_by_seed"]["acts"]["seeds"] == TEACHER_SEEDS and out["chrf_by_seed"]["acts"]["teacher"][0] == 40.0
    assert out["chrf_lost_by_seed"]["acts"]["chrF++"][0] == pytest.approx(0.9)
    for cid in ("table3_er_without_training_collapses", "table3_er_no_train_collapses_ngram",
                "table3_er_no_train_bartscore_falls"):
        assert interval_verdict(cid, out) == HELD, cid
    # ER that keeps 80 % of the teacher's chrF++ on one task (loses 20 %): the collapse is excluded
    kept = {"chat": [(40.0 + e, 32.0 + e) for e in (0.0, 0.7, -0.5, 0.3, -0.4)]}
    assert interval_verdict("table3_er_without_training_collapses",
                            readouts.table3_teachers(teachers_frame(chrf=kept), ["acts", "chat"])) == CONTRADICTED
    # the n-gram columns: one metric on one task at 70 % of the teacher's (30 % lost) fails the collapse
    t = teachers_frame()
    er_chat = (t.model == "er_no_train") & (t.task == "chat")
    t.loc[er_chat, "NIST"] = t.loc[(t.model == "teacher") & (t.task == "chat"), "NIST"].to_numpy() * 0.7
    assert interval_verdict("table3_er_no_train_collapses_ngram", readouts.table3_teachers(t, ["acts", "chat"])) == CONTRADICTED
    # ER's BARTScore-proxy above the teacher's on one task: the fall is excluded
    up = {"acts": [(-3.0 + e, -1.0 + e) for e in (0.0, 0.2, -0.1, 0.1, -0.2)]}
    assert interval_verdict("table3_er_no_train_bartscore_falls",
                            readouts.table3_teachers(teachers_frame(bart=up), ["acts", "chat"])) == CONTRADICTED
    with pytest.raises(readouts.MissingResult, match="concepts"):
        readouts.table3_teachers(teachers_frame(), ["acts", "concepts"])


def test_table3_teachers_null_is_never_held():
    # the null at the margin: ER loses exactly 40 % of every teacher's score, plus seed noise
    noise = (0.0, 0.7, -0.5, 0.3, -0.4)
    at = {t: [(40.0, 24.0 + e) for e in noise] for t in ("acts", "chat")}
    at_other = {t: [(0.5, 0.3 + e / 50) for e in noise] for t in ("acts", "chat")}
    # and ER's BARTScore-proxy equal to the teacher's, plus seed noise
    same = {t: [(-2.0, -2.0 + e / 5) for e in noise] for t in ("acts", "chat")}
    out = readouts.table3_teachers(teachers_frame(chrf=at, other=at_other, bart=same), ["acts", "chat"])
    for cid in ("table3_er_without_training_collapses", "table3_er_no_train_collapses_ngram",
                "table3_er_no_train_bartscore_falls"):
        assert interval_verdict(cid, out) in NOT_HELD, cid


def test_table3_teachers_at_zero_are_lost_seeds():
    # a teacher that scores chrF++ 0 has nothing to lose: its seed's share is undefined, not 0 or 1,
    # and the seed stays in the count (planned), so the claim is not held on the seeds left
    floor = {"acts": [(0.0, 0.0), (40.0, 4.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)]}
    out = readouts.table3_teachers(teachers_frame(chrf=floor), ["acts", "chat"])
    assert out["chrf_lost"]["acts"]["n"] == 1 and out["chrf_lost"]["acts"]["planned"] == 5
    assert out["n_seeds"] == 5 and out["n_paired_min"] == 1
    assert out["chrf_lost_by_seed"]["acts"]["chrF++"] == [None, pytest.approx(0.9), None, None, None]
    assert interval_verdict("table3_er_without_training_collapses", out) == NOT_JUDGED
    assert out["chrf_by_seed"]["acts"]["teacher"][0] == 0.0
    # one teacher of five at 0, four that clearly collapse: a lost seed, so not held on the four left
    one = {"acts": [(0.0, 0.0), (40.0, 4.0), (41.0, 4.2), (39.0, 3.8), (40.5, 4.1)]}
    out = readouts.table3_teachers(teachers_frame(chrf=one), ["acts", "chat"])
    assert out["chrf_lost"]["acts"]["n"] == 4 and out["chrf_lost"]["acts"]["planned"] == 5
    assert out["chrf_lost"]["acts"]["lo"] > 0.4
    assert interval_verdict("table3_er_without_training_collapses", out) == "inconclusive"
    # a teacher seed with no rows at all is as lost as one that scored 0, when the notebook names its seeds
    t = teachers_frame()
    gone = t[~((t.task == "acts") & (t.seed == 4))]
    out = readouts.table3_teachers(gone, ["acts", "chat"], seeds=TEACHER_SEEDS)
    assert out["chrf_lost"]["acts"]["n"] == 4 and out["chrf_lost"]["acts"]["planned"] == 5
    assert out["chrf_lost_by_seed"]["acts"]["chrF++"][4] is None
    assert interval_verdict("table3_er_without_training_collapses", out) == "inconclusive"
    with pytest.raises(readouts.MissingResult, match="not planned"):
        readouts.table3_teachers(teachers_frame(), ["acts"], seeds=TEACHER_SEEDS[:3])


def test_table3_seeds_keep_every_planned_seed():
    """A student seed that diverged, or has no row, is a None in the per-seed lists and a lost seed in
    every interval (planned = the seeds run): three comparisons that clear their margins on the
    seeds that survived are not held on them."""
    tasks = ["acts", "concepts", "chat"]
    frame = seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0})
    noisy = frame.copy()
    noisy.loc[noisy.model == "merge", "chrF++"] += np.tile((0.0, 0.7, -0.5), 3)
    full = readouts.table3_seeds(noisy, tasks)
    for cid in ("table3_merge_recovers_from_er", "table3_merge_close_to_mpcformer", "table3_single_changes_closer"):
        assert interval_verdict(cid, full) == HELD, cid
    # MERGE at seed 2 diverged (NaN): every interval with MERGE keeps 3 planned, 2 paired
    diverged = noisy.copy()
    diverged.loc[(diverged.model == "merge") & (diverged.seed == 2), ["chrF++", "BERTScore-proxy"]] = np.nan
    out = readouts.table3_seeds(diverged, tasks)
    assert out["chrf_by_seed"]["acts"]["merge"][2] is None and out["n_seeds"] == 3 and out["n_paired_min"] == 2
    for cells in (out["single_closer"].values(), out["merge_recovers"].values(), out["merge_minus_mpcformer"].values()):
        assert all(c["n"] == 2 and c["planned"] == 3 for c in cells)
    for cid in ("table3_merge_recovers_from_er", "table3_merge_close_to_mpcformer", "table3_single_changes_closer"):
        assert interval_verdict(cid, out) in NOT_HELD, cid
    # MPCformer's seed-1 row missing altogether: with the planned seeds named, a lost seed, never a shorter pairing
    gone = noisy[~((noisy.model == "mpcformer_sf2relu") & (noisy.seed == 1))]
    out = readouts.table3_seeds(gone, tasks, seeds=SEEDS3)
    assert out["close_by_seed"]["acts"]["mpcformer_sf2relu"] == [0.9, None, 0.9]
    assert out["merge_minus_mpcformer"]["acts"]["planned"] == 3 and out["merge_minus_mpcformer"]["acts"]["n"] == 2
    assert interval_verdict("table3_merge_close_to_mpcformer", out) in NOT_HELD
    with pytest.raises(readouts.MissingResult, match="not planned"):
        readouts.table3_seeds(noisy, tasks, seeds=[0, 1])


def test_table3_sf2quad_and_thex_must_both_fail_on_every_task():
    # the paper: both OOT on all three tasks; one of them failing somewhere is not that
    both = {**TABLE3, "+MPCformer (sf2quad)": None, "+THE-X": None}
    out = readouts.table3_quality(table3_frame({"acts": both, "chat": both}), ["acts", "chat"])
    assert out["n_sf2quad_thex_failed"] == 4 and verdict("table3_sf2quad_thex_fail_to_train", out)[0] == HELD
    one = {**TABLE3, "+THE-X": None}
    out = readouts.table3_quality(table3_frame({"acts": one, "chat": both}), ["acts", "chat"])
    assert out["sf2quad_or_thex_failed"] is True and out["n_sf2quad_thex_failed"] == 3
    assert verdict("table3_sf2quad_thex_fail_to_train", out)[0] == CONTRADICTED


def test_table3_records_this_seeds_gap_to_mpcformer():
    # notebook 05 shows one seed's gap (the claim is judged across seeds in notebook 08)
    far = {**TABLE3, "+MERGE (ours)": (0.80, 30.0)}
    out = readouts.table3_quality(table3_frame({"acts": TABLE3, "chat": far}), ["acts", "chat"])
    assert out["max_merge_gap_bertproxy"] == pytest.approx(0.12)
    assert out["merge_gap_bertproxy_by_task"] == pytest.approx({"acts": 0.03, "chat": 0.12})


def test_table3_diverged_mpcformer_is_never_a_gap_of_zero():
    # the bug this readout fixes: a diverged (or absent) MPCformer row was read as a gap of 0, so the
    # claim held without testing anything; now the gap is unknown and the claim is not held
    diverged = {**TABLE3, "+MPCformer (sf2relu)": None, "+THE-X": None}
    out = readouts.table3_quality(table3_frame({"acts": TABLE3, "chat": diverged}), ["acts", "chat"])
    assert out["per_task"]["chat"]["merge_minus_sf2relu_bertproxy"] is None
    assert out["max_merge_gap_bertproxy"] is None
    assert out["min_merge_over_sf2relu_chrf"] is None
    assert out["sf2quad_or_thex_failed"] is True
    # a row missing from the table altogether is an error, not a pass
    absent = {k: v for k, v in TABLE3.items() if k != "+MPCformer (sf2relu)"}
    with pytest.raises(readouts.MissingResult, match="sf2relu"):
        readouts.table3_quality(table3_frame({"acts": absent}), ["acts"])
    with pytest.raises(readouts.MissingResult, match="chat"):
        readouts.table3_quality(table3_frame({"acts": TABLE3}), ["acts", "chat"])


def test_table3_teacher_at_zero_leaves_the_share_undefined():
    # a teacher that generates nothing useful (chrF++ 0) cannot show a collapse: ratio None, not 0
    floor = {**TABLE3, "GPT (teacher)": (0.0, 0.0), "+ER (no train)": (0.0, 0.0)}
    out = readouts.table3_quality(table3_frame({"acts": floor}), ["acts"])
    assert out["per_task"]["acts"]["er_no_train_chrf_ratio"] is None
    # a diverged MERGE: not counted as beating anything, and not closer-or-farther either
    out = readouts.table3_quality(table3_frame({"acts": {**TABLE3, "+MERGE (ours)": None}}), ["acts"])
    assert out["merge_beats_er_no_train_all"] is False and out["n_single_closer"] == 0


LEVELS = [0.0, 0.5, 1.0, 1.5]  # rel_mse = level^2 / 3: 0, 0.083, 0.33, 0.75


def fig5_sweep(curves: dict, ends: dict | None = None) -> pd.DataFrame:
    """curves: {(task, variant): chrF++ per level} at seed 0 (the figure); ends: {(task, variant):
    [(clean, noisiest) chrF++ at seed 1, at seed 2, ...]} (the other student seeds); ROUGE-L = chrF++ / 100."""
    rows = []
    for (task, v), ys in curves.items():
        for lvl, y in zip(LEVELS, ys):
            rows.append({"task": task, "variant": v, "seed": 0, "noise": lvl, "rel_mse": lvl**2 / 3,
                         "chrF++": y, "ROUGE-L": y / 100})
    for (task, v), pairs in (ends or {}).items():
        for s, ys in enumerate(pairs, start=1):
            for lvl, y in zip((LEVELS[0], LEVELS[-1]), ys):
                rows.append({"task": task, "variant": v, "seed": s, "noise": lvl, "rel_mse": lvl**2 / 3,
                             "chrF++": y, "ROUGE-L": y / 100})
    return pd.DataFrame(rows)


FIG5 = {("chat", "teacher"): [40, 30, 10, 4], ("chat", "merge"): [30, 28, 25, 20], ("chat", "only_er"): [38, 36, 30, 25]}


def test_fig5_values_and_claim():
    # teacher drops 90 %, 80 %, 85 % at seeds 0-2; MERGE about a third, only-ER about a third
    ends = {("chat", "teacher"): [(40, 8), (40, 6)], ("chat", "merge"): [(30, 21), (32, 22)],
            ("chat", "only_er"): [(36, 25), (40, 28)]}
    out = readouts.fig5_embedding_noise(fig5_sweep(FIG5, ends), ["chat"], ["teacher", "only_er", "merge"])
    t = out["readout"]["chat"]["teacher"]["chrF++"]
    assert t["rel_drop"] == pytest.approx(0.9) and t["drop"] == 36  # the figure's seed only
    assert t["mid_mean"] == pytest.approx(20.0)  # levels 0.5 and 1.0 lie in MID_MSE
    assert out["n_er_trained_more_robust"] == 2 and out["n_er_trained"] == 2
    assert out["only_er_mid_ge_teacher"] == {"chat": True}
    assert out["chrf_clean_and_noisiest"]["chat"] == {"teacher": [40, 4], "merge": [30, 20], "only_er": [38, 25]}
    assert out["rel_drop_by_seed"]["chat"]["seeds"] == [0, 1, 2]
    assert out["rel_drop_by_seed"]["chat"]["teacher"] == pytest.approx([0.9, 0.8, 0.85])
    cell = out["more_robust"]["chat / MERGE (ER+MM)"]
    assert cell["n"] == 3 and cell["mean"] == pytest.approx(np.mean([0.9 - 1 / 3, 0.8 - 0.3, 0.85 - 10 / 32]))
    assert out["n_seeds"] == 3 and out["seeds"] == [0, 1, 2]
    assert interval_verdict("fig5_er_training_resists_noise", out) == "held"


def test_fig5_null_less_robust_or_zero_clean_is_never_held():
    teacher = [(40, 8), (40, 6)]
    # the null: each re-trained model loses the teacher's share, give or take: never held
    same = {("chat", "teacher"): teacher, ("chat", "merge"): [(30, 5), (20, 4)], ("chat", "only_er"): [(50, 12), (10, 1)]}
    null = {**FIG5, ("chat", "merge"): [40, 30, 10, 5], ("chat", "only_er"): [40, 30, 10, 3]}
    out = readouts.fig5_embedding_noise(fig5_sweep(null, same), ["chat"], ["teacher", "only_er", "merge"])
    assert abs(out["more_robust"]["chat / MERGE (ER+MM)"]["mean"]) < 0.05
    assert interval_verdict("fig5_er_training_resists_noise", out) in NOT_HELD
    # MERGE loses more at every seed: contradicted; only-ER at 0 has no relative drop, no pair, never robust
    worse = {**FIG5, ("chat", "teacher"): [40, 30, 20, 20], ("chat", "merge"): [30, 10, 5, 3],
             ("chat", "only_er"): [0, 0, 0, 0]}
    ends = {("chat", "teacher"): [(40, 22), (40, 18)], ("chat", "merge"): [(30, 2), (32, 4)],
            ("chat", "only_er"): [(0, 0), (0, 0)]}
    out = readouts.fig5_embedding_noise(fig5_sweep(worse, ends), ["chat"], ["teacher", "only_er", "merge"])
    assert out["readout"]["chat"]["only_er"]["chrF++"]["rel_drop"] is None
    assert out["n_er_trained_more_robust"] == 0 and out["more_robust"]["chat / MERGE (only ER)"]["n"] == 0
    assert interval_verdict("fig5_er_training_resists_noise", out) == "contradicted"
    # the figure's seed alone: no interval, not judged
    out = readouts.fig5_embedding_noise(fig5_sweep(FIG5), ["chat"], ["teacher", "only_er", "merge"])
    assert interval_verdict("fig5_er_training_resists_noise", out) == "not judged"


def test_fig5_missing_runs_raise():
    curves = {("chat", "teacher"): [40, 30, 20, 20], ("chat", "merge"): [30, 10, 5, 3]}
    with pytest.raises(readouts.MissingResult, match="only_er"):
        readouts.fig5_embedding_noise(fig5_sweep(curves), ["chat"], ["teacher", "only_er", "merge"])
    with pytest.raises(readouts.MissingResult, match="teacher"):
        readouts.fig5_embedding_noise(fig5_sweep(curves), ["chat"], ["merge"])
    noisy_only = fig5_sweep(curves)
    with pytest.raises(readouts.MissingResult, match="noise-free"):
        readouts.fig5_embedding_noise(noisy_only[noisy_only.noise > 0], ["chat"], ["teacher", "merge"])


def _agreement(faults=0, ties=0, steps=2):
    return {"steps": steps, "rel_tol": 0.01, "max_err_over_tol": 0.3, "min_gap": 0.5,
            "near_ties": [{"prompt": 0, "step": i, "gap": 1e-3, "tol": 0.05} for i in range(ties)], "n_near_ties": ties,
            "faults": [{"prompt": 0, "step": i} for i in range(faults)], "n_faults": faults}


def private_results(merge_match=1.0, merge_faults=0, merge_ties=0):
    res = {"crypten": {"match": 1.0, "ranks_agree": True, "private": [[5, 6]], "plain": [[5, 6]],
                       "agreement": _agreement()},
           "merge": {"match": merge_match, "ranks_agree": True, "private": [[7, 8]], "plain": [[7, 8]],
                     "agreement": _agreement(merge_faults, merge_ties)}}
    cost = pd.DataFrame({"model": ["crypten", "merge"], "seconds": [4.0, 1.0], "rounds": [400.0, 100.0],
                         "MiB": [8.0, 2.0]})
    return res, cost


def test_private_generation_values_and_claims():
    res, cost = private_results()
    out = readouts.private_generation(res, cost, n_new=2)
    assert out["merge_round_ratio"] == 4.0 and out["merge_byte_ratio"] == 4.0
    assert out["min_token_match"] == 1.0 and out["ranks_agree"] and out["n_prompts"] == 1
    assert verdict("private_generation_same_tokens", out)[0] == HELD
    assert verdict("private_generation_merge_fewer_rounds", out)[0] == HELD
    assert out["n_faults"] == 0 and out["steps"] == 4 and out["max_err_over_tol"] == 0.3
    # a flipped near tie (the plaintext top-2 gap within twice the tolerance) is reported, not a fault
    res, cost = private_results(merge_match=0.5, merge_ties=1)
    out = readouts.private_generation(res, cost, 2)
    assert out["n_near_ties"] == 1 and out["min_token_match"] == 0.5
    assert verdict("private_generation_same_tokens", out)[0] == HELD
    # another token where the plaintext argmax is clear, or a logit out of tolerance, is a fault
    res, cost = private_results(merge_match=0.5, merge_faults=1)
    assert verdict("private_generation_same_tokens", readouts.private_generation(res, cost, 2))[0] == CONTRADICTED
    res, cost = private_results()
    res["merge"]["ranks_agree"] = False
    assert verdict("private_generation_same_tokens", readouts.private_generation(res, cost, 2))[0] == CONTRADICTED


def test_private_generation_missing_model():
    res, cost = private_results()
    out = readouts.private_generation({"crypten": res["crypten"]}, cost[cost.model == "crypten"], 2)
    assert out["merge_round_ratio"] is None
    assert verdict("private_generation_merge_fewer_rounds", out)[0] == NOT_JUDGED
    with pytest.raises(readouts.MissingResult):
        readouts.private_generation({}, cost, 2)


def test_every_claim_reads_a_readout_key():
    """Each value a merge claim reads is a key that some readout returns."""
    keys = set()
    keys |= set(tables12()) | set(fig4()) | set(fig1())
    keys |= set(readouts.fig1a_speedups(ENC, GEN, LINK))
    keys |= set(readouts.fig6_retraining({"merge": trained("merge", [3.0, 2.0, 1.0])}, trained("teacher", [2.0, 1.0]), "acts"))
    keys |= set(readouts.table3_quality(table3_frame({"acts": TABLE3}), ["acts"]))
    keys |= set(readouts.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0}), ["acts"]))
    keys |= set(readouts.table3_teachers(teachers_frame(), ["acts"]))
    keys |= set(readouts.fig5_embedding_noise(fig5_sweep({("chat", "teacher"): [1, 1, 1, 1]}), ["chat"], ["teacher"]))
    keys |= set(readouts.private_generation(*private_results(), 2))
    for c in CLAIMS.values():
        for expr in (c["value"], c.get("predicate") or c["interval"], c.get("reading_value") or "",
                     *(c.get("paper_inputs") or {})):
            for name in re.findall(rf"{c['notebook']}\.(\w+)", expr):
                assert name in keys, f"{c['id']} reads {c['notebook']}.{name}, which no readout returns"


def test_every_reading_is_shown_beside_a_recorded_value():
    """A reading's recorded value evaluates on the readouts' output (it is shown as 'our reading')."""
    outs = {"tables12_cost": tables12(), "fig4_scaling": fig4(),
            "fig1_time_breakdown": fig1(),
            "table3_quality": readouts.table3_quality(table3_frame({"acts": TABLE3}), ["acts"]),
            "table3_seeds": readouts.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0}), ["acts"]),
            "table3_teachers": readouts.table3_teachers(teachers_frame(), ["acts", "chat"]),
            "fig5_embedding_noise": readouts.fig5_embedding_noise(
                fig5_sweep({("chat", "teacher"): [40, 30, 10, 4], ("chat", "merge"): [30, 28, 25, 20]}),
                ["chat"], ["teacher", "merge"])}
    for c in CLAIMS.values():
        if not c.get("reading"):
            continue
        (row,) = claims.evaluate("merge", {"claims": [c]},
                                 {c["notebook"]: {"profile": "ci", "values": _jsonable(outs[c["notebook"]])}}, "ci")
        assert row["reading_value"] is not None, c["id"]


def test_the_papers_table3_text_disagrees_with_its_table():
    from privtrans.merge import quality_experiments

    got = readouts.paper_table3_text_vs_table(quality_experiments.paper_table3_bertscore()).set_index("task")
    assert got["table: MPCformer − MERGE"].to_dict() == pytest.approx(
        {"MultiWOZ": 0.0303, "CommonGen": 0.0122, "DailyDialog": -0.0052})
    assert got["text: lower by"].to_dict() == {"MultiWOZ": 0.01, "CommonGen": 0.017, "DailyDialog": 0.001}
    assert not got["agree"].any()
    # a text that matches its table (to the rounding) agrees
    same = quality_experiments.paper_table3_bertscore().assign(text_says_lower_by=lambda d: d.text_says_lower_by.where(
        d.model != "+MERGE (ours)", None))
    same.loc[same.model == "+MERGE (ours)", "text_says_lower_by"] = [0.0303, 0.0122, -0.0052]
    assert readouts.paper_table3_text_vs_table(same)["agree"].all()
    with pytest.raises(readouts.MissingResult, match="DailyDialog"):
        readouts.paper_table3_text_vs_table(same[~((same.task == "DailyDialog") & (same.model == "+MERGE (ours)"))])


def test_the_papers_numbers_are_every_value_a_predicate_reads():
    """Each predicate reproduction with the paper's inputs runs on them alone: every value its
    predicate reads is one of them (none left to this build), and the paper's numbers pass it, or
    the claim states the erratum (the paper's own numbers do not support its sentence)."""
    from privtrans.book import trials

    with_inputs = [c for c in CLAIMS.values() if c["kind"] == "reproduction" and "predicate" in c and c.get("paper_inputs")]
    assert len(with_inputs) >= 15
    for c in with_inputs:
        env = claims.paper_env("merge", c)
        assert set(trials.read_paths(c["predicate"], env)) <= set(c["paper_inputs"]), c["id"]
        assert claims.truth(c["predicate"], env) != bool(c.get("erratum")), c["id"]
    # the six time claims (data/merge/claims.yaml) read the paper's counts through the calibrated link, not its wall times
    for cid in ("t1_merge_fastest", "fig4_speedup_grows_with_length", "fig4_merge_over_thex_at_512",
                "fig4_size_speedup_about_10x", "t1_comm_time_column", "fig4_size_speedup_does_not_grow"):
        assert all("seconds_calibrated" in e for e in CLAIMS[cid]["paper_inputs"].values()), cid
    assert {c["id"] for c in with_inputs if c.get("erratum")} == {
        "fig4_speedup_grows_with_length", "fig4_size_speedup_about_10x", "fig4_size_speedup_does_not_grow"}
    # t2_t5_saves_more_than_gpt reads the measured fractions as well as the closed form: the paper's
    # measured numbers feed that condition too, and a measured T5 fraction above GPT-2's turns it
    c = CLAIMS["t2_t5_saves_more_than_gpt"]
    env = claims.paper_env("merge", c)
    assert not claims.truth(c["predicate"], trials._set(env, "tables12_cost.encdec_frac_bytes.merge", 0.5))


def test_every_predicate_reproduction_says_why_it_is_exact():
    for c in CLAIMS.values():
        if c["kind"] == "reproduction" and "predicate" in c:
            assert c.get("exact"), c["id"]
        if "interval" in c and c["notebook"] == "fig1_time_breakdown":
            assert c.get("lost_seeds") == "drop", c["id"]  # timing rounds, not training runs


def test_len64_bytes_saved_fails_at_ci_and_is_shown_failing():
    """The check's target (60 % fewer bytes at length 64) is ours; at ci's model the closed form (equal
    to the measured bytes) saves 54.3 % counting the argmax: the check is contradicted, not tuned."""
    from privtrans.book import profiles

    cfg = profiles.settings("merge", "fig4_scaling", "ci")
    saved = cost_experiments.bytes_saved_at_length(cfg["sizes"], cfg["prefix"], total=64).set_index("count")["bytes saved by ER+MM"]
    assert saved[cost_experiments.WITH_ARGMAX] == pytest.approx(0.543, abs=0.001)
    assert saved[cost_experiments.WITHOUT_ARGMAX] > saved[cost_experiments.WITH_ARGMAX]
    out = fig4()
    out["len64_saved_with_argmax"] = float(saved[cost_experiments.WITH_ARGMAX])
    assert verdict("len64_bytes_saved", out)[0] == CONTRADICTED
