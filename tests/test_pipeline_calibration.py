"""The reference workload the summary records beside the notebooks' seconds: a positive time, one
torch thread while it runs (the number of threads is restored), and shown on the status page."""

import json

import torch

from privtrans.book.pipeline import calibration, report


def test_reference_seconds_is_a_positive_time_on_one_thread(monkeypatch):
    seen = []
    real = calibration._workload

    def spy():
        seen.append(torch.get_num_threads())
        real()

    monkeypatch.setattr(calibration, "_workload", spy)
    old = torch.get_num_threads()
    t = calibration.reference_seconds(repeats=2)
    assert t > 0 and isinstance(t, float)
    assert seen == [1, 1, 1]  # warm-up and two timed repeats, each on one thread
    assert torch.get_num_threads() == old


NOTEBOOKS = [{"chapter": "dp_icl", "notebook": "01_fig1_low_dim", "profile": "smoke", "seed": 0, "seconds": 1.0,
              "status": "ok", "error": None}]
CLAIMS = [{"chapter": "dp_icl", "id": "c", "kind": "check", "verdict": "held", "held": True, "reason": "held"}]


def test_summary_and_status_page_carry_it(tmp_path):
    path = report.write_summary(tmp_path, "smoke", 0, NOTEBOOKS, CLAIMS, reference_s=0.1234)
    assert json.loads(path.read_text())["machine"]["reference_s"] == 0.1234
    status = (tmp_path / "book" / "_generated" / "status.md").read_text()
    assert "reference workload in 0.123 s" in status
    without = report.write_summary(tmp_path, "smoke", 0, NOTEBOOKS, CLAIMS)
    assert json.loads(without.read_text())["machine"]["reference_s"] is None
    assert "reference workload" not in (tmp_path / "book" / "_generated" / "status.md").read_text()


def test_a_build_that_ran_nothing_keeps_the_last_measurement(tmp_path, monkeypatch):
    measured = []
    monkeypatch.setattr(calibration, "reference_seconds", lambda: measured.append(1) or 0.5)
    assert calibration.for_build(tmp_path, executed=0) == 0.5 and len(measured) == 1  # no summary yet: measured
    report.write_summary(tmp_path, "smoke", 0, NOTEBOOKS, CLAIMS, reference_s=0.1234)
    assert calibration.for_build(tmp_path, executed=0) == 0.1234 and len(measured) == 1  # all cached: the last one
    assert calibration.for_build(tmp_path, executed=3) == 0.5 and len(measured) == 2  # notebooks ran: measured now
    report.write_summary(tmp_path, "smoke", 0, NOTEBOOKS, CLAIMS)  # a summary without one
    assert calibration.for_build(tmp_path, executed=0) == 0.5 and len(measured) == 3
