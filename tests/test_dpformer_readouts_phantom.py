"""privtrans.dpformer.readouts.phantom (Claim 3.1, Figure 3) on hand-made measurements, and its claims'
verdicts, including the cases that must fail or not be judged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privtrans.dpformer.readouts import phantom

from dpformer_readout_inputs import (
    claim31_inputs,
    fig3_ghost,
    fig3_measured,
    fig3_memory_rows,
    fig3_modelled,
    fig3_speed,
    not_held,
    verdicts,
)


def test_claim31_by_hand_and_claims():
    out = phantom.claim31_phantom_exact(*claim31_inputs())
    assert out["phantom_max_rel_err"] == 1e-12 and out["no_cross_max_rel_err"] == 0.1
    assert out["opacus_functional_tie_max_underestimate"] == pytest.approx(0.2)
    assert out["opacus_ghost_refuses_tie"] and out["phantom_refuses_functional_tie"]
    assert out["clipped_grad_max_rel_err"] == 2e-14 and out["n_samples_checked"] == 12
    v = verdicts({"claim31_phantom_exact": out})
    assert v["claim31_phantom_norms_exact"]["held"] is True and v["claim31_ghost_cannot_tie"]["held"] is True


def test_claim31_inexact_norm_or_accepted_tie_fails():
    v = verdicts({"claim31_phantom_exact": phantom.claim31_phantom_exact(*claim31_inputs(phantom_err=1e-3))})
    assert v["claim31_phantom_norms_exact"]["held"] is False
    out = phantom.claim31_phantom_exact(*claim31_inputs(message=""))
    assert out["opacus_ghost_refuses_tie"] is False
    assert verdicts({"claim31_phantom_exact": out})["claim31_ghost_cannot_tie"]["held"] is False


def test_claim31_missing_variant_raises():
    errors, *rest = claim31_inputs()
    with pytest.raises(ValueError, match="opacus_hooks"):
        phantom.claim31_phantom_exact(errors.drop(columns="opacus_hooks"), *rest)


def test_fig3_by_hand_and_claims():
    out = phantom.fig3_memory_speed(fig3_measured(), fig3_modelled(), isolated=True)
    out.update(phantom.fig3_memory_vs_nonprivate(fig3_memory_rows()))
    speed = phantom.fig3_speed_vs_nonprivate(fig3_speed())
    ghost = fig3_ghost()
    assert speed["time_ratio_phantom_nonprivate_interleaved"]["gm"] == pytest.approx(1.2, rel=0.01)
    assert out["Ms"] == [500, 1000, 2000]
    assert out["time_ratio_ghost_phantom"] == pytest.approx([2 / 1.2, 6 / 1.2, 20 / 1.2])
    assert out["time_ratio_ghost_phantom_increasing"] is True
    assert out["time_ratio_phantom_nonprivate"] == pytest.approx([1.2] * 3)
    assert out["memory_ratio_phantom_nonprivate_max"] == pytest.approx(1.2)
    assert out["ghost_memory_loglog_slope"] == pytest.approx(2.0) and out["phantom_memory_loglog_slope"] == pytest.approx(1.0)
    assert out["ghost_unchunked_points"] == 3 and out["modelled_max_batch_ratio"] == [10.0, 400.0]
    assert out["modelled_max_batch_by_M"] == [
        {"M": 3416, "phantom_over_ghost": 10.0, "phantom_over_nonprivate": 0.9, "phantom_batch": 2400,
         "opacus_ghost_batch": 3000, "phantom_over_opacus_ghost": 0.8},
        {"M": 23715, "phantom_over_ghost": 400.0, "phantom_over_nonprivate": 0.9, "phantom_batch": 480,
         "opacus_ghost_batch": 600, "phantom_over_opacus_ghost": 0.8}]
    # Ghost / Phantom per process: the geometric mean over its rounds, then the interval across processes
    shown = ghost["time_ratio_ghost_phantom_interleaved"]
    assert [r["M"] for r in shown] == [500, 2000] and [r["processes"] for r in shown] == [3, 3]
    assert shown[1]["gm"] == pytest.approx(30.0 * (1.0 * 1.05 * 0.96) ** (1 / 3), rel=1e-3)
    assert shown[1]["lo"] < shown[1]["gm"] < shown[1]["hi"]
    g = ghost["ghost_log_speedup_growth"]
    assert (g["from_M"], g["to_M"], g["n"]) == (500, 2000, 3) and g["mean"] == pytest.approx(math.log(20.0))
    v = verdicts({"fig3_memory_speed": {**out, **speed, **ghost}})
    for cid in ("fig3_speedup_grows_with_vocabulary", "fig3_speedup_in_paper_range", "fig3_memory_in_paper_range",
                "fig3_memory_near_nonprivate", "fig3_ghost_memory_grows_with_vocabulary",
                "fig3_phantom_speed_near_nonprivate", "fig3_phantom_vs_opacus_ghost_batch"):
        assert v[cid]["verdict"] == "held", (cid, v[cid]["reason"])
    # Phantom fitting as much as opacus ghost (or more) is not what the memory model says: contradicted
    same = phantom.fig3_memory_speed(fig3_measured(), fig3_modelled(opacus=(2400, 400)), isolated=True)
    row = verdicts({"fig3_memory_speed": same})["fig3_phantom_vs_opacus_ghost_batch"]
    assert row["verdict"] == "contradicted", row["reason"]


def test_fig3_magnitudes_outside_the_papers_ranges_are_contradicted():
    # Phantom at 2× the non-private step time, every process: beyond the paper's 1.47× and our 1.5×
    row = verdicts({"fig3_memory_speed": phantom.fig3_speed_vs_nonprivate(fig3_speed(2.0))})
    assert row["fig3_phantom_speed_near_nonprivate"]["verdict"] == "contradicted"
    # Ghost / Phantom 1.7× at the largest M, every process: below the paper's 4-100×
    row = verdicts({"fig3_memory_speed": fig3_ghost(small=1.2, large=1.7)})["fig3_speedup_in_paper_range"]
    assert row["verdict"] == "contradicted" and "lies outside" in row["reason"], row["reason"]
    fast = verdicts({"fig3_memory_speed": fig3_ghost(large=150.0)})["fig3_speedup_in_paper_range"]
    assert fast["verdict"] == "contradicted"
    # near the band's edge, with the process-to-process spread: cannot tell
    edge = verdicts({"fig3_memory_speed": fig3_ghost(large=4.0, jitter=(0.9, 1.15, 1.0))})["fig3_speedup_in_paper_range"]
    assert edge["verdict"] == "inconclusive", edge["reason"]
    # a modelled batch ratio of 5× at ML-1M's vocabulary is below 10×
    small = phantom.fig3_memory_speed(fig3_measured(), fig3_modelled(ratios=(5.0, 400.0)), isolated=True)
    assert verdicts({"fig3_memory_speed": small})["fig3_memory_in_paper_range"]["verdict"] == "contradicted"
    # a model without the paper's vocabularies does not pass
    other = phantom.fig3_memory_speed(fig3_measured(), fig3_modelled(Ms=(1349, 3416)), isolated=True)
    assert verdicts({"fig3_memory_speed": other})["fig3_memory_in_paper_range"]["verdict"] == "contradicted"
    # peak memory measured in one process for every configuration is not judged
    shared = phantom.fig3_memory_speed(fig3_measured(), fig3_modelled(), isolated=False)
    v = verdicts({"fig3_memory_speed": shared})
    assert v["fig3_memory_near_nonprivate"]["verdict"] == v["fig3_ghost_memory_grows_with_vocabulary"]["verdict"] \
        == "not judged"


def test_fig3_memory_is_judged_per_M_across_repeated_processes():
    """Every M must clear 1.5× on its interval; one M clearly above contradicts; a ratio at the line with
    process noise is inconclusive although single processes read either side of it (the flip that one
    process per point gave: 1.11× and 1.62× in two builds)."""
    def judge(rows, isolated=True):
        rec = {**phantom.fig3_memory_speed(fig3_measured(), fig3_modelled(), isolated=isolated),
               **phantom.fig3_memory_vs_nonprivate(rows)}
        return verdicts({"fig3_memory_speed": rec})["fig3_memory_near_nonprivate"]

    rec = phantom.fig3_memory_vs_nonprivate(fig3_memory_rows(1.2))
    assert [r["M"] for r in rec["memory_ratio_phantom_nonprivate_by_M"]] == [500, 1000, 2000]
    assert all(r["gm"] == pytest.approx(1.2, rel=0.05) and r["repeats"] == 5 for r in rec["memory_ratio_phantom_nonprivate_by_M"])
    assert judge(fig3_memory_rows(1.2))["verdict"] == "held"
    high = [r if not (r["M"] == 500 and r["method"] == "phantom") else {**r, "extra_mb": r["extra_mb"] / 1.2 * 1.8}
            for r in fig3_memory_rows(1.2)]
    row = judge(high)
    assert row["verdict"] == "contradicted" and "M = 500" in row["reason"], row["reason"]
    edge_rows = fig3_memory_rows(1.5, noise=0.05, seed=3)
    edge = judge(edge_rows)
    assert edge["verdict"] == "inconclusive", edge["reason"]
    by = {(r["method"], r["M"], r["repeat"]): r["extra_mb"] for r in edge_rows}
    single = [by["phantom", M, k] / by["nonprivate", M, k] for M in (500, 1000, 2000) for k in range(5)]
    assert min(single) < 1.5 < max(single)  # one process per point would have read either verdict
    assert judge(fig3_memory_rows(1.2), isolated=False)["verdict"] == "not judged"


def test_fig3_falling_speedup_fails_and_chunked_points_leave_the_fit():
    out = phantom.fig3_memory_speed(fig3_measured(ghost_time=(2.0, 8.0, 7.0), chunked_at=(2000,)), fig3_modelled(),
                                     isolated=True)
    assert out["time_ratio_ghost_phantom_increasing"] is False and out["ghost_unchunked_points"] == 2
    v = verdicts({"fig3_memory_speed": out})
    assert v["fig3_ghost_memory_grows_with_vocabulary"]["verdict"] == "contradicted"  # two unchunked points: too few
    # the speed-up judged on its own interleaved timings: smaller at the larger M on every process
    ghost = fig3_ghost(small=8.0, large=5.8)
    v = verdicts({"fig3_memory_speed": ghost})
    assert ghost["ghost_log_speedup_growth"]["hi"] < 0
    assert v["fig3_speedup_grows_with_vocabulary"]["verdict"] == "contradicted"
    assert v["fig3_speedup_in_paper_range"]["verdict"] == "held"   # 5.8× at the largest M


def test_fig3_speedup_is_judged_on_interleaved_processes_not_one_reading():
    """The sweep's one reading per (method, M) decides neither speed-up check: a single process that
    reads 30× beside two that read 2× at the largest M leaves the band check open, though that one
    reading alone lies inside 4-100×; and a process lost on one M is kept in the count."""
    mixed = fig3_ghost(large=2.0, jitter=(15.0, 1.0, 1.02))
    row = verdicts({"fig3_memory_speed": mixed})["fig3_speedup_in_paper_range"]
    assert row["verdict"] == "inconclusive", row["reason"]
    from privtrans.dpformer import efficiency as eff

    def run(ratio):
        return {"times": {"paper_ghost": [ratio * 0.1, ratio * 0.1], "phantom": [0.1, 0.1]}, "M": 1}
    out = eff.ghost_speedup({500: [run(1.5), run(1.6), run(1.4)], 2000: [run(30.0), run(31.0)]})
    g = out["ghost_log_speedup_growth"]
    assert (g["n"], g["planned"]) == (2, 3)
    with pytest.raises(ValueError, match="positive per-round times"):
        eff.ghost_speedup({500: [{"times": {"phantom": [0.1, 0.1]}}] * 2})


def test_fig3_one_vocabulary_size_cannot_show_growth():
    out = phantom.fig3_memory_speed(fig3_measured(Ms=(500,), ghost_time=(2.0,)), fig3_modelled(), isolated=True)
    assert out["time_ratio_ghost_phantom_increasing"] is None and out["ghost_memory_loglog_slope"] is None
    from privtrans.dpformer import efficiency as eff

    one = eff.ghost_speedup({500: [{"times": {"paper_ghost": [0.2, 0.2], "phantom": [0.1, 0.1]}}] * 3})
    assert one["ghost_log_speedup_growth"]["n"] == 0
    # never a pass: no interval of a growth from one M
    assert verdicts({"fig3_memory_speed": one})["fig3_speedup_grows_with_vocabulary"]["held"] is not True


def test_fig3_missing_method_raises():
    m = fig3_measured()
    with pytest.raises(ValueError, match="nonprivate"):
        phantom.fig3_memory_speed(m[m.method != "nonprivate"], fig3_modelled(), isolated=True)


def test_null_figure_3():
    """The paper-style Ghost as fast as Phantom at both M, each process ± 5 %: neither speed-up check
    holds (the growth is a null, and 1× lies outside 4-100×); nor does a growth-free 10× at both M."""
    rng = np.random.default_rng(13)

    def runs(ratio):
        return [{"times": {"paper_ghost": [ratio * math.exp(rng.normal(0, 0.05)) * 0.1] * 2, "phantom": [0.1, 0.1]},
                 "M": 1} for _ in range(5)]
    same = phantom.fig3_ghost_speed({500: runs(1.0), 4000: runs(1.0)})
    not_held(verdicts({"fig3_memory_speed": same}), ("fig3_speedup_grows_with_vocabulary", "fig3_speedup_in_paper_range"))
    flat = phantom.fig3_ghost_speed({500: runs(10.0), 4000: runs(10.0)})
    not_held(verdicts({"fig3_memory_speed": flat}), ("fig3_speedup_grows_with_vocabulary",))
    # at the band's lower edge (4×): not held either
    edge = phantom.fig3_ghost_speed({500: runs(1.0), 4000: runs(4.0)})
    not_held(verdicts({"fig3_memory_speed": edge}), ("fig3_speedup_in_paper_range",))
