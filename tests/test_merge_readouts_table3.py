"""privtrans.merge.readouts.table3 (Table 3) on hand-made quality tables: the values and verdicts, across
seeds and teachers, lost seeds, nulls that are never held, and the paper's own text against its table."""

from __future__ import annotations

import numpy as np
import pytest

from privtrans.book import claims
from privtrans.book.session import _jsonable
from privtrans.merge import quality_experiments
from privtrans.merge.readouts import embedding_noise, missing, table3

from merge_readout_inputs import (
    CLAIMS,
    CONTRADICTED,
    HELD,
    NOT_HELD,
    NOT_JUDGED,
    SEEDS3,
    TABLE3,
    TEACHER_SEEDS,
    fig1,
    fig4,
    fig5_sweep,
    frame,
    interval_verdict,
    seeds_frame,
    table3_frame,
    tables12,
    teachers_frame,
    verdict,
)


def test_table3_values_and_claims():
    out = table3.table3_quality(table3_frame({"acts": TABLE3, "chat": TABLE3}), ["acts", "chat"])
    assert out["per_task"]["acts"]["er_no_train_chrf_ratio"] == pytest.approx(0.1)
    assert out["max_merge_gap_bertproxy"] == pytest.approx(0.03)
    assert out["merge_beats_er_no_train_all"] is True
    assert out["n_single_closer"] == 4 and out["n_single_pairs"] == 4
    assert out["sf2quad_or_thex_failed"] is False
    assert out["n_sf2quad_thex_failed"] == 0 and out["n_sf2quad_thex"] == 4
    assert out["merge_gap_bertproxy_by_task"] == pytest.approx({"acts": 0.03, "chat": 0.03})
    assert verdict("table3_sf2quad_thex_fail_to_train", out)[0] == CONTRADICTED


def test_table3_seeds_judges_each_pair_across_seeds():
    out = table3.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0}), ["acts", "concepts", "chat"])
    cell = out["single_closer"]["acts / only-ER"]
    assert cell["n"] == 3 and cell["mean"] == pytest.approx(5.0 - np.mean([0.0, -0.7, 0.5]))
    assert out["n_seeds"] == 3 and out["chrf_by_seed"]["chat"]["teacher"] == 40.0 and out["seeds"] == SEEDS3
    assert out["chrf_by_seed"]["acts"]["seeds"] == SEEDS3
    assert out["distance_by_seed"]["acts"]["merge"] == pytest.approx([8.0] * 3)
    assert out["distance_by_seed"]["acts"]["only_er"] == pytest.approx([3.0, 2.3, 3.5])
    assert interval_verdict("table3_single_changes_closer", out) == "held"
    # the null: each change alone as far from the teacher as both, plus seed noise: never held
    out = table3.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 8.0, "only_mm": 8.0}), ["acts", "concepts", "chat"])
    assert interval_verdict("table3_single_changes_closer", out) in NOT_HELD
    # singles farther from the teacher than MERGE everywhere: 0 of 6 can clear, contradicted
    out = table3.table3_seeds(seeds_frame({"merge": 2.0, "only_er": 9.0, "only_mm": 8.0}), ["acts", "concepts", "chat"])
    assert interval_verdict("table3_single_changes_closer", out) == "contradicted"
    # a diverged single change has no pairs: its cells are not judged, and 3 of 6 cannot make 4
    out = table3.table3_seeds(seeds_frame({"merge": 8.0, "only_er": None, "only_mm": 2.0}), ["acts", "concepts", "chat"])
    assert out["single_closer"]["acts / only-ER"]["n"] == 0
    assert interval_verdict("table3_single_changes_closer", out) == "not judged"
    with pytest.raises(missing.MissingResult, match="only_mm"):
        table3.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0}), ["acts"])


def test_table3_seeds_judge_merge_against_er_without_training_across_seeds():
    noisy = (0.0, 0.7, -0.5)  # MERGE's own spread across seeds
    frame = seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0}, er=4.0)
    frame.loc[frame.model == "merge", "chrF++"] += np.tile(noisy, 3)
    out = table3.table3_seeds(frame, ["acts", "concepts", "chat"])
    cell = out["merge_recovers"]["chat"]
    assert cell["n"] == 3 and cell["mean"] == pytest.approx(40.0 - 8.0 - 4.0 + np.mean(noisy))
    assert out["chrf_by_seed"]["acts"]["er_no_train"] == 4.0
    assert interval_verdict("table3_merge_recovers_from_er", out) == "held"
    # the null: MERGE no better than ER without re-training, plus seed noise: never held
    out = table3.table3_seeds(frame.assign(**{"chrF++": frame["chrF++"].where(frame.model != "er_no_train", 32.0)}),
                         ["acts", "concepts", "chat"])
    assert out["merge_recovers"]["acts"]["mean"] == pytest.approx(np.mean(noisy))
    assert interval_verdict("table3_merge_recovers_from_er", out) in NOT_HELD
    # MERGE below ER without re-training on one task: contradicted
    worse = frame.copy()
    worse.loc[(worse.model == "er_no_train") & (worse.task == "concepts"), "chrF++"] = 39.0
    assert interval_verdict("table3_merge_recovers_from_er", table3.table3_seeds(worse, ["acts", "concepts", "chat"])) \
        == "contradicted"
    # a diverged MERGE has no pair; without ER's row the readout refuses
    out = table3.table3_seeds(seeds_frame({"merge": None, "only_er": 3.0, "only_mm": 2.0}), ["acts"])
    assert out["merge_recovers"]["acts"]["n"] == 0
    with pytest.raises(missing.MissingResult, match="er_no_train"):
        table3.table3_seeds(frame[frame.model != "er_no_train"], ["acts"])


def test_table3_seeds_judge_merge_close_to_mpcformer_across_seeds():
    mpc = [0.90, 0.92, 0.88]

    def out(merge, tasks=("acts", "concepts", "chat")):
        bert = {"mpcformer_sf2relu": mpc, "merge": merge}
        return table3.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0}, tasks, bert=bert), list(tasks))

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
    scaled = table3.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0},
                                               bert={"mpcformer_sf2relu": mpc, "merge": [0.892, 0.908, 0.871]},
                                               proxy_span=quality_experiments.paper_bertscore_span()["acts"] / 2),
                                   ["acts"])
    assert scaled["proxy_scale"]["acts"]["scale"] == pytest.approx(2.0)
    assert scaled["merge_minus_mpcformer_bertscore_units"]["acts"]["mean"] == pytest.approx(
        2 * np.mean([-0.008, -0.012, -0.009]))
    # ER (no train) not below the teacher on the proxy: no scale, the claim is not judged
    flat_frame = seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0},
                             bert={"mpcformer_sf2relu": mpc, "merge": [0.892, 0.908, 0.871]}, proxy_span=0.0)
    flat = table3.table3_seeds(flat_frame, ["acts", "concepts", "chat"])
    assert flat["proxy_scaled"] is False and flat["merge_minus_mpcformer_bertscore_units"]["acts"] is None
    assert interval_verdict("table3_merge_close_to_mpcformer", flat) == "not judged"
    # a diverged MPCformer seed has no pair, never a gap of 0; with one seed left, not judged
    diverged = table3.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0},
                                          bert={"mpcformer_sf2relu": [0.9, None, None]}), ["acts", "concepts", "chat"])
    assert diverged["merge_minus_mpcformer"]["acts"]["n"] == 1
    assert interval_verdict("table3_merge_close_to_mpcformer", diverged) == "not judged"
    with pytest.raises(missing.MissingResult, match="mpcformer_sf2relu"):
        table3.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0}).query("model != 'mpcformer_sf2relu'"),
                       ["acts"])


def test_table3_teachers_collapse_judged_across_teacher_seeds():
    out = table3.table3_teachers(teachers_frame(), ["acts", "chat"])
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
                            table3.table3_teachers(teachers_frame(chrf=kept), ["acts", "chat"])) == CONTRADICTED
    # the n-gram columns: one metric on one task at 70 % of the teacher's (30 % lost) fails the collapse
    t = teachers_frame()
    er_chat = (t.model == "er_no_train") & (t.task == "chat")
    t.loc[er_chat, "NIST"] = t.loc[(t.model == "teacher") & (t.task == "chat"), "NIST"].to_numpy() * 0.7
    assert interval_verdict("table3_er_no_train_collapses_ngram", table3.table3_teachers(t, ["acts", "chat"])) == CONTRADICTED
    # ER's BARTScore-proxy above the teacher's on one task: the fall is excluded
    up = {"acts": [(-3.0 + e, -1.0 + e) for e in (0.0, 0.2, -0.1, 0.1, -0.2)]}
    assert interval_verdict("table3_er_no_train_bartscore_falls",
                            table3.table3_teachers(teachers_frame(bart=up), ["acts", "chat"])) == CONTRADICTED
    with pytest.raises(missing.MissingResult, match="concepts"):
        table3.table3_teachers(teachers_frame(), ["acts", "concepts"])


def test_table3_teachers_null_is_never_held():
    # the null at the margin: ER loses exactly 40 % of every teacher's score, plus seed noise
    noise = (0.0, 0.7, -0.5, 0.3, -0.4)
    at = {t: [(40.0, 24.0 + e) for e in noise] for t in ("acts", "chat")}
    at_other = {t: [(0.5, 0.3 + e / 50) for e in noise] for t in ("acts", "chat")}
    # and ER's BARTScore-proxy equal to the teacher's, plus seed noise
    same = {t: [(-2.0, -2.0 + e / 5) for e in noise] for t in ("acts", "chat")}
    out = table3.table3_teachers(teachers_frame(chrf=at, other=at_other, bart=same), ["acts", "chat"])
    for cid in ("table3_er_without_training_collapses", "table3_er_no_train_collapses_ngram",
                "table3_er_no_train_bartscore_falls"):
        assert interval_verdict(cid, out) in NOT_HELD, cid


def test_table3_teachers_at_zero_are_lost_seeds():
    # a teacher that scores chrF++ 0 has nothing to lose: its seed's share is undefined, not 0 or 1,
    # and the seed stays in the count (planned), so the claim is not held on the seeds left
    floor = {"acts": [(0.0, 0.0), (40.0, 4.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)]}
    out = table3.table3_teachers(teachers_frame(chrf=floor), ["acts", "chat"])
    assert out["chrf_lost"]["acts"]["n"] == 1 and out["chrf_lost"]["acts"]["planned"] == 5
    assert out["n_seeds"] == 5 and out["n_paired_min"] == 1
    assert out["chrf_lost_by_seed"]["acts"]["chrF++"] == [None, pytest.approx(0.9), None, None, None]
    assert interval_verdict("table3_er_without_training_collapses", out) == NOT_JUDGED
    assert out["chrf_by_seed"]["acts"]["teacher"][0] == 0.0
    # one teacher of five at 0, four that clearly collapse: a lost seed, so not held on the four left
    one = {"acts": [(0.0, 0.0), (40.0, 4.0), (41.0, 4.2), (39.0, 3.8), (40.5, 4.1)]}
    out = table3.table3_teachers(teachers_frame(chrf=one), ["acts", "chat"])
    assert out["chrf_lost"]["acts"]["n"] == 4 and out["chrf_lost"]["acts"]["planned"] == 5
    assert out["chrf_lost"]["acts"]["lo"] > 0.4
    assert interval_verdict("table3_er_without_training_collapses", out) == "inconclusive"
    # a teacher seed with no rows at all is as lost as one that scored 0, when the notebook names its seeds
    t = teachers_frame()
    gone = t[~((t.task == "acts") & (t.seed == 4))]
    out = table3.table3_teachers(gone, ["acts", "chat"], seeds=TEACHER_SEEDS)
    assert out["chrf_lost"]["acts"]["n"] == 4 and out["chrf_lost"]["acts"]["planned"] == 5
    assert out["chrf_lost_by_seed"]["acts"]["chrF++"][4] is None
    assert interval_verdict("table3_er_without_training_collapses", out) == "inconclusive"
    with pytest.raises(missing.MissingResult, match="not planned"):
        table3.table3_teachers(teachers_frame(), ["acts"], seeds=TEACHER_SEEDS[:3])


def test_table3_seeds_keep_every_planned_seed():
    """A student seed that diverged, or has no row, is a None in the per-seed lists and a lost seed in
    every interval (planned = the seeds run): three comparisons that clear their margins on the
    seeds that survived are not held on them."""
    tasks = ["acts", "concepts", "chat"]
    frame = seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0})
    noisy = frame.copy()
    noisy.loc[noisy.model == "merge", "chrF++"] += np.tile((0.0, 0.7, -0.5), 3)
    full = table3.table3_seeds(noisy, tasks)
    for cid in ("table3_merge_recovers_from_er", "table3_merge_close_to_mpcformer", "table3_single_changes_closer"):
        assert interval_verdict(cid, full) == HELD, cid
    # MERGE at seed 2 diverged (NaN): every interval with MERGE keeps 3 planned, 2 paired
    diverged = noisy.copy()
    diverged.loc[(diverged.model == "merge") & (diverged.seed == 2), ["chrF++", "BERTScore-proxy"]] = np.nan
    out = table3.table3_seeds(diverged, tasks)
    assert out["chrf_by_seed"]["acts"]["merge"][2] is None and out["n_seeds"] == 3 and out["n_paired_min"] == 2
    for cells in (out["single_closer"].values(), out["merge_recovers"].values(), out["merge_minus_mpcformer"].values()):
        assert all(c["n"] == 2 and c["planned"] == 3 for c in cells)
    for cid in ("table3_merge_recovers_from_er", "table3_merge_close_to_mpcformer", "table3_single_changes_closer"):
        assert interval_verdict(cid, out) in NOT_HELD, cid
    # MPCformer's seed-1 row missing altogether: with the planned seeds named, a lost seed, never a shorter pairing
    gone = noisy[~((noisy.model == "mpcformer_sf2relu") & (noisy.seed == 1))]
    out = table3.table3_seeds(gone, tasks, seeds=SEEDS3)
    assert out["close_by_seed"]["acts"]["mpcformer_sf2relu"] == [0.9, None, 0.9]
    assert out["merge_minus_mpcformer"]["acts"]["planned"] == 3 and out["merge_minus_mpcformer"]["acts"]["n"] == 2
    assert interval_verdict("table3_merge_close_to_mpcformer", out) in NOT_HELD
    with pytest.raises(missing.MissingResult, match="not planned"):
        table3.table3_seeds(noisy, tasks, seeds=[0, 1])


def test_table3_sf2quad_and_thex_must_both_fail_on_every_task():
    # the paper: both OOT on all three tasks; one of them failing somewhere is not that
    both = {**TABLE3, "+MPCformer (sf2quad)": None, "+THE-X": None}
    out = table3.table3_quality(table3_frame({"acts": both, "chat": both}), ["acts", "chat"])
    assert out["n_sf2quad_thex_failed"] == 4 and verdict("table3_sf2quad_thex_fail_to_train", out)[0] == HELD
    one = {**TABLE3, "+THE-X": None}
    out = table3.table3_quality(table3_frame({"acts": one, "chat": both}), ["acts", "chat"])
    assert out["sf2quad_or_thex_failed"] is True and out["n_sf2quad_thex_failed"] == 3
    assert verdict("table3_sf2quad_thex_fail_to_train", out)[0] == CONTRADICTED


def test_table3_records_this_seeds_gap_to_mpcformer():
    # notebook 05 shows one seed's gap (the claim is judged across seeds in notebook 08)
    far = {**TABLE3, "+MERGE (ours)": (0.80, 30.0)}
    out = table3.table3_quality(table3_frame({"acts": TABLE3, "chat": far}), ["acts", "chat"])
    assert out["max_merge_gap_bertproxy"] == pytest.approx(0.12)
    assert out["merge_gap_bertproxy_by_task"] == pytest.approx({"acts": 0.03, "chat": 0.12})


def test_table3_diverged_mpcformer_is_never_a_gap_of_zero():
    # the bug this readout fixes: a diverged (or absent) MPCformer row was read as a gap of 0, so the
    # claim held without testing anything; now the gap is unknown and the claim is not held
    diverged = {**TABLE3, "+MPCformer (sf2relu)": None, "+THE-X": None}
    out = table3.table3_quality(table3_frame({"acts": TABLE3, "chat": diverged}), ["acts", "chat"])
    assert out["per_task"]["chat"]["merge_minus_sf2relu_bertproxy"] is None
    assert out["max_merge_gap_bertproxy"] is None
    assert out["min_merge_over_sf2relu_chrf"] is None
    assert out["sf2quad_or_thex_failed"] is True
    # a row missing from the table altogether is an error, not a pass
    absent = {k: v for k, v in TABLE3.items() if k != "+MPCformer (sf2relu)"}
    with pytest.raises(missing.MissingResult, match="sf2relu"):
        table3.table3_quality(table3_frame({"acts": absent}), ["acts"])
    with pytest.raises(missing.MissingResult, match="chat"):
        table3.table3_quality(table3_frame({"acts": TABLE3}), ["acts", "chat"])


def test_table3_teacher_at_zero_leaves_the_share_undefined():
    # a teacher that generates nothing useful (chrF++ 0) cannot show a collapse: ratio None, not 0
    floor = {**TABLE3, "GPT (teacher)": (0.0, 0.0), "+ER (no train)": (0.0, 0.0)}
    out = table3.table3_quality(table3_frame({"acts": floor}), ["acts"])
    assert out["per_task"]["acts"]["er_no_train_chrf_ratio"] is None
    # a diverged MERGE: not counted as beating anything, and not closer-or-farther either
    out = table3.table3_quality(table3_frame({"acts": {**TABLE3, "+MERGE (ours)": None}}), ["acts"])
    assert out["merge_beats_er_no_train_all"] is False and out["n_single_closer"] == 0


def test_every_reading_is_shown_beside_a_recorded_value():
    """A reading's recorded value evaluates on the readouts' output (it is shown as 'our reading')."""
    outs = {"tables12_cost": tables12(), "fig4_scaling": fig4(),
            "fig1_time_breakdown": fig1(),
            "table3_quality": table3.table3_quality(table3_frame({"acts": TABLE3}), ["acts"]),
            "table3_seeds": table3.table3_seeds(seeds_frame({"merge": 8.0, "only_er": 3.0, "only_mm": 2.0}), ["acts"]),
            "table3_teachers": table3.table3_teachers(teachers_frame(), ["acts", "chat"]),
            "fig5_embedding_noise": embedding_noise.fig5_embedding_noise(
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

    got = table3.paper_table3_text_vs_table(quality_experiments.paper_table3_bertscore()).set_index("task")
    assert got["table: MPCformer − MERGE"].to_dict() == pytest.approx(
        {"MultiWOZ": 0.0303, "CommonGen": 0.0122, "DailyDialog": -0.0052})
    assert got["text: lower by"].to_dict() == {"MultiWOZ": 0.01, "CommonGen": 0.017, "DailyDialog": 0.001}
    assert not got["agree"].any()
    # a text that matches its table (to the rounding) agrees
    same = quality_experiments.paper_table3_bertscore().assign(text_says_lower_by=lambda d: d.text_says_lower_by.where(
        d.model != "+MERGE (ours)", None))
    same.loc[same.model == "+MERGE (ours)", "text_says_lower_by"] = [0.0303, 0.0122, -0.0052]
    assert table3.paper_table3_text_vs_table(same)["agree"].all()
    with pytest.raises(missing.MissingResult, match="DailyDialog"):
        table3.paper_table3_text_vs_table(same[~((same.task == "DailyDialog") & (same.model == "+MERGE (ours)"))])
