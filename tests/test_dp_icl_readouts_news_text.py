"""privtrans.dp_icl.readouts.news_text on small hand-made inputs (no Monte Carlo): the recorded values and
the verdicts data/dp_icl/claims.yaml gives on them"""

from __future__ import annotations

import math

import pytest

from privtrans.dp_icl.readouts import news_text

from dp_icl_readout_inputs import TS, U, fig6, t_runs, verdict, verdicts


def test_fig6_values_and_failing_gd():
    out = fig6()
    cells = out.pop("noisyhead_u_shape")
    assert {k: out[k] for k in ("t_argmin_noisyhead", "interior_minimum", "rise_after_min", "drop_before_min",
                                "gd_frac_decreasing", "gd_last_over_first", "articles", "t_star_noisyhead")} == pytest.approx({
        "t_argmin_noisyhead": 50, "interior_minimum": True, "rise_after_min": 4.0, "drop_before_min": 8.0,
        "gd_frac_decreasing": 1.0, "gd_last_over_first": 1 / 200, "articles": 800, "t_star_noisyhead": 50})
    assert out["t_star_noisyhead_fixed"] == 50 and out["noisyhead_u_shape_fixed"] is not None
    assert set(out["gd_stable"]) == {"chosen setting", "Figure 3's setting"}
    assert out["gd_stable"]["chosen setting"]["mean"] == pytest.approx(math.log(200 / 50))
    rows = verdicts({"fig6_news_text": {**out, "noisyhead_u_shape": cells}})
    for cid in ("fig6_early_stopping_text", "fig6_early_stopping_text_fixed", "fig6_gd_stabilises"):
        assert rows[cid]["verdict"] == "held", (cid, rows[cid]["reason"])
    gd_up = fig6(gd=lambda t: float(t))
    assert gd_up["gd_last_over_first"] == 200.0
    assert verdict({"fig6_news_text": gd_up}, "fig6_gd_stabilises") == "contradicted"
    flat_gd = fig6(gd=lambda t: 1.0, noise=0.01)                  # stays put: "stabilises" holds
    assert verdict({"fig6_news_text": flat_gd}, "fig6_gd_stabilises") == "held"
    # the two settings are judged apart: a fixed setting whose NoisyHead only falls
    split = verdicts({"fig6_news_text": fig6(nh_fixed=lambda t: 1 / t)})
    assert split["fig6_early_stopping_text"]["verdict"] == "held"
    assert split["fig6_early_stopping_text_fixed"]["verdict"] == "contradicted"
    with pytest.raises(ValueError, match="no articles"):
        news_text.fig6_news_text(t_runs({"gd": U.get, "noisyhead": U.get}), t_runs({"gd": U.get, "noisyhead": U.get}),
                                TS, n_articles=0)
