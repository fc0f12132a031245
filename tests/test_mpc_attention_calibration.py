"""The chapter's links are fitted to the paper's prior-art rows and judged on its held-out rows."""

import pytest

from privtrans.mpc_attention import calibration, normaliser_cost
from privtrans.mpc_attention.readouts import schemes, table1
from privtrans.shared.mpc.network import Link

PAPER_T1 = {"softmax": 0.236, "2relu": 0.159, "2quad": 0.157, "scaling": 0.060, "softmax_freediv": 0.153,
            "2quad_freediv": 0.064}


def _closed_counts(heads=4, n=128):
    df = normaliser_cost.closed_form([n], heads)
    return {r.variant: (r.bytes, r.rounds) for r in df.itertuples()}


def test_table1_link_fits_prior_art_and_holds_out_the_papers_rows():
    cal = calibration.table1_link(_closed_counts(), "closed form")
    assert [c.name for c in cal.fitted] == list(calibration.T1_FIT)
    assert [c.name for c in cal.held_out] == ["2quad"]
    for c in cal.fitted + cal.held_out:
        assert c.seconds == PAPER_T1[c.name]


def test_paper_table1_is_not_reproduced_by_a_communication_only_link():
    # Scaling costs no communication in 2PC but 0.060 s in the paper: its times include computation,
    # and 2Quad-freeDiv (one round) is predicted far below its 0.064 s
    rec = calibration.record(calibration.table1_link(_closed_counts(), "closed form"))
    assert rec["calibrated"] is False
    assert rec["max_held_out_error"] > calibration.TOLERANCE
    assert rec["status"].startswith("not calibrated: held-out cell")


def test_a_link_that_made_the_papers_numbers_is_recovered_and_calibrated(monkeypatch):
    counts = _closed_counts()
    true = Link(bandwidth=2e9, rtt=1e-3)
    made = {v: float(true.seconds(b, r)) for v, (b, r) in counts.items() if v != "scaling"}
    made["scaling"] = 0.0
    # the paper's column replaced by the times this link gives our counts
    monkeypatch.setattr(calibration, "_P", lambda root=None: lambda f, col, **k: made[k["attention"]])
    cal = calibration.table1_link(counts, "made")
    assert cal.calibrated
    assert cal.link.bandwidth == pytest.approx(2e9, rel=1e-4)
    assert cal.link.rtt == pytest.approx(1e-3, rel=1e-4)


def test_table2_link_holds_out_the_freediv_rows_and_reads_relative_times():
    counts = {"softmax+gelu": (9e6, 300), "softmax+quad": (7e6, 250), "2quad+quad": (4e6, 120),
              "scaling+quad": (3e6, 90), "2quad_freediv+quad": (3.2e6, 95), "softmax_freediv+gelu": (8.5e6, 270)}
    cal = calibration.table2_link(counts, "toy")
    assert [c.name for c in cal.held_out] == ["2quad+quad"]
    assert {c.name for c in cal.fitted} == {"softmax+gelu", "softmax+quad", "scaling+quad"}
    base = next(c for c in cal.fitted if c.name == "softmax+gelu")
    assert base.seconds == 1.0                          # Softmax + GeLU is the unit
    quad = cal.held_out[0]
    assert quad.seconds == pytest.approx(1 / 1.84)      # Table 2: 2Quad + Quad 1.84x


def test_a_fit_without_a_link_is_recorded_not_calibrated_and_judges_nothing():
    # proportional counts: bandwidth and latency cannot be told apart
    counts = {"softmax+gelu": (1e6, 100), "softmax+quad": (2e6, 200), "2quad+quad": (3e6, 250),
              "2quad_freediv+quad": (1e6, 50)}
    out = schemes._calibrated_table2(counts, "2quad_freediv+quad", "toy")
    assert out["link_table2"]["calibrated"] is False
    assert "cannot be told apart" in out["link_table2"]["status"]
    assert out["best_speedup_cal"] is None


def test_table1_readout_records_the_link_and_the_ratios_on_it():

    closed = normaliser_cost.closed_form([64, 128], 4)
    df = closed.assign(parties=2)
    out = table1._calibrated_table1("2pc", "toy", [64, 128], list(closed.variant.unique()),
                                      lambda n, v, col: float(df[(df.n == n) & (df.variant == v)][col].iloc[0]))
    assert out["link_2pc"]["calibrated"] is False
    cal = calibration.table1_link(_closed_counts(4, 128), "same")
    t = lambda v: cal.link.seconds(*_closed_counts(4, 128)[v])  # noqa: E731
    assert out["softmax_freediv_over_2quad_cal_2pc"] == pytest.approx(t("softmax_freediv") / t("2quad"))


def test_shown_has_a_row_per_link_with_its_status():
    rec = calibration.record(calibration.table1_link(_closed_counts(), "closed form"))
    bad = calibration.record(ValueError("no link"))
    t = calibration.shown({"a": rec, "b": bad})
    assert list(t.link) == ["a", "b"]
    assert t.calibrated.tolist() == [False, False]
    assert t.status.iloc[1] == "not calibrated: no link"
    assert "2quad" in t["held-out error"].iloc[0]
