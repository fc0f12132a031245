"""privtrans.merge.readouts.cost (Tables 1-2, Figure 4, the private generation) on small hand-made tables
(no training, no MPC): the values the claims read, the cases that must make a claim fail, and missing
data that must never pass as a number. Where a case decides a claim, the claim's own predicate from
data/merge/claims*.yaml runs on what the readout returns and its verdict is asserted."""

from __future__ import annotations

import re

import pytest

from privtrans.merge import cost_experiments
from privtrans.merge.readouts import cost, missing
from privtrans.shared.models.plain_gpt import VARIANTS

from merge_readout_inputs import (
    CLAIMS,
    CONTRADICTED,
    ENCDEC_PER_VARIANT,
    HELD,
    NOT_JUDGED,
    TABLES12,
    _claim_text,
    claims_of,
    fig4,
    fig4_runs,
    group_times,
    private_results,
    side_table,
    size_sweep,
    tables12,
    tables12_runs,
    verdict,
)


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
    with pytest.raises(missing.MissingResult, match="Linear GiB"):
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
    with pytest.raises(missing.MissingResult, match="network speed-ups at T5"):
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
    with pytest.raises(missing.MissingResult, match="only_er"):
        tables12(group_times_t5={v: g for v, g in group_times().items() if v != "only_er"})
    with pytest.raises(missing.MissingResult, match="Linear"):
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
    with pytest.raises(missing.MissingResult, match="only_mm"):
        tables12(runs[~((runs.variant == "only_mm") & (runs.arch == "encdec"))])
    # a profile without a variant a claim compares
    with pytest.raises(missing.MissingResult, match="thex"):
        tables12(variants=[v for v in VARIANTS if v != "thex"])
    # no Softmax metered anywhere: "MM has no softmax" must not pass by default
    no_soft = {v: {g: x for g, x in groups.items() if g != "Softmax"} for v, groups in TABLES12.items()}
    with pytest.raises(missing.MissingResult, match="Softmax"):
        tables12(tables12_runs(gpt=no_soft))


def test_tables12_encdec_claimed_variants_only():
    # `ci` measures the encoder-decoder for CrypTen and ER+MM only: the baselines' values become None
    # (never a number from fewer rows), the values the claims read and every verdict stay as with seven
    lean = {**TABLES12, "merge": {**TABLES12["merge"], "Linear": (1000, 2.0, 8)}}
    for encdec in (TABLES12, lean):
        runs = tables12_runs(encdec=encdec)
        full = tables12(runs)
        cut = tables12(runs[(runs.arch == "gpt") | runs.variant.isin(cost.ENCDEC_CLAIMED)],
                       encdec_variants=list(cost.ENCDEC_CLAIMED))
        assert cut["encdec_merge_fastest"] is None and full["encdec_merge_fastest"] is True
        for key in ENCDEC_PER_VARIANT:
            assert set(cut[key]) == set(full[key]) == set(cost.TABLES12_VARIANTS), key
            for v in cost.TABLES12_VARIANTS:
                if v in cost.ENCDEC_CLAIMED:
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
    with pytest.raises(missing.MissingResult, match="merge"):
        tables12(encdec_variants=["crypten", "thex"])
    # a variant listed but not run is missing, as on the GPT
    runs = tables12_runs()
    with pytest.raises(missing.MissingResult, match="merge"):
        tables12(runs[(runs.arch == "gpt") | (runs.variant == "crypten")], encdec_variants=list(cost.ENCDEC_CLAIMED))


def test_profiles_measure_every_encdec_variant_a_claim_reads():
    from privtrans.book import profiles

    # every measured encoder-decoder row a claim reads, e.g. tables12_cost.encdec_frac_bytes.merge
    read = set()
    for c in CLAIMS.values():
        text = _claim_text(c)
        read |= set(re.findall(r"tables12_cost\.(?:%s)\.(\w+)" % "|".join(ENCDEC_PER_VARIANT), text))
        # a comparison over all seven measured rows is None where a profile measures fewer
        assert "encdec_merge_fastest" not in text, c["id"]
    assert read and read <= set(cost.ENCDEC_CLAIMED)
    for profile in ("smoke", "ci", "paper"):
        cfg = profiles.settings("merge", "tables12_cost", profile)
        assert set(cost.ENCDEC_CLAIMED) <= set(cfg["encdec"]["variants"]) <= set(cfg["variants"]), profile
    assert profiles.settings("merge", "tables12_cost", "ci")["encdec"]["variants"] == list(cost.ENCDEC_CLAIMED)
    assert profiles.settings("merge", "tables12_cost", "paper")["encdec"]["variants"] == list(cost.TABLES12_VARIANTS)


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
    with pytest.raises(missing.MissingResult, match="two lengths"):
        fig4(net={128: 2.8})


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
    with pytest.raises(missing.MissingResult, match="thex"):
        fig4(size=size_sweep().drop(columns="thex GiB"))
    with pytest.raises(missing.MissingResult, match="two sizes"):
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
    with pytest.raises(missing.MissingResult, match="only_er"):
        fig4(fig4_runs(drop=("only_er", 8)))
    with pytest.raises(missing.MissingResult, match="merge"):
        fig4(fig4_runs(drop=("merge", 2)))
    # no ER variant in the profile: nothing to judge, and the claim does not hold by default
    out = fig4(variants=("crypten",))
    assert out["er_embed_flat"] is None and verdict("fig4_er_embed_flat", out)[0] == NOT_JUDGED


def test_private_generation_values_and_claims():
    res, cost_rows = private_results()
    out = cost.private_generation(res, cost_rows, n_new=2)
    assert out["merge_round_ratio"] == 4.0 and out["merge_byte_ratio"] == 4.0
    assert out["min_token_match"] == 1.0 and out["ranks_agree"] and out["n_prompts"] == 1
    assert verdict("private_generation_same_tokens", out)[0] == HELD
    assert verdict("private_generation_merge_fewer_rounds", out)[0] == HELD
    assert out["n_faults"] == 0 and out["steps"] == 4 and out["max_err_over_tol"] == 0.3
    # a flipped near tie (the plaintext top-2 gap within twice the tolerance) is reported, not a fault
    res, cost_rows = private_results(merge_match=0.5, merge_ties=1)
    out = cost.private_generation(res, cost_rows, 2)
    assert out["n_near_ties"] == 1 and out["min_token_match"] == 0.5
    assert verdict("private_generation_same_tokens", out)[0] == HELD
    # another token where the plaintext argmax is clear, or a logit out of tolerance, is a fault
    res, cost_rows = private_results(merge_match=0.5, merge_faults=1)
    assert verdict("private_generation_same_tokens", cost.private_generation(res, cost_rows, 2))[0] == CONTRADICTED
    res, cost_rows = private_results()
    res["merge"]["ranks_agree"] = False
    assert verdict("private_generation_same_tokens", cost.private_generation(res, cost_rows, 2))[0] == CONTRADICTED


def test_private_generation_missing_model():
    res, cost_rows = private_results()
    out = cost.private_generation({"crypten": res["crypten"]}, cost_rows[cost_rows.model == "crypten"], 2)
    assert out["merge_round_ratio"] is None
    assert verdict("private_generation_merge_fewer_rounds", out)[0] == NOT_JUDGED
    with pytest.raises(missing.MissingResult):
        cost.private_generation({}, cost_rows, 2)


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
