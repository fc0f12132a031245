"""shared.mpc.network: the network time model."""

import pytest

from privtrans.shared.mpc.network import LAN, LINKS, WAN, modelled_time


def test_modelled_time_is_rounds_times_rtt_plus_bytes_over_bandwidth():
    assert modelled_time(1.25e9, 10) == pytest.approx(1.0 + 10 * 2e-4)
    assert modelled_time(0, 3, **WAN) == pytest.approx(0.12)
    assert set(LINKS) == {"LAN", "WAN"} and LINKS["LAN"] is LAN
    with pytest.raises(ValueError, match="bandwidth"):
        modelled_time(1, 1, bandwidth=0.0)


def test_calibrate_recovers_a_known_link_and_validates_on_held_out_cells():
    from privtrans.shared.mpc.network import Cell, calibrate

    true = dict(bandwidth=2.0e9, rtt=1e-3)
    cells = [Cell(f"c{i}", b, r, modelled_time(b, r, **true)) for i, (b, r) in
             enumerate([(8e10, 3e4), (1.7e11, 1e4), (2e9, 1.6e5)])]
    held = [Cell("h", 1e11, 5e3, modelled_time(1e11, 5e3, **true))]
    cal = calibrate(cells, held)
    assert cal.link.bandwidth == pytest.approx(2.0e9, rel=1e-6) and cal.link.rtt == pytest.approx(1e-3, rel=1e-6)
    assert max(abs(r) for r in cal.residuals().values()) < 1e-6 and cal.calibrated
    assert cal.verdict().startswith("calibrated")
    # a held-out cell the link misses by 20 % leaves it uncalibrated, and says which and by how much
    off = calibrate(cells, [Cell("far", 1e11, 5e3, modelled_time(1e11, 5e3, **true) / 1.2)])
    assert not off.calibrated and "far predicted +20.0% off" in off.verdict()
    assert not calibrate(cells, []).calibrated  # nothing held out: never calibrated
    with pytest.raises(ValueError, match="cannot be told apart"):
        calibrate([Cell("a", 1e9, 10, 1.0), Cell("b", 2e9, 20, 2.0)], held)
    with pytest.raises(ValueError, match="at least two"):
        calibrate(cells[:1], held)


def test_calibrate_keeps_both_parameters_non_negative():
    from privtrans.shared.mpc.network import Cell, calibrate

    # seconds that fall with rounds would need a negative latency: the bound holds it at 0
    cal = calibrate([Cell("a", 1e9, 1e5, 1.0), Cell("b", 2e9, 0, 2.5), Cell("c", 3e9, 2e5, 2.9)], [])
    assert cal.link.rtt == pytest.approx(0.0, abs=1e-12) and cal.link.bandwidth > 0
