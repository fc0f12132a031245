"""shared.mpc.network: the network time model."""

import pytest

from privtrans.shared.mpc.network import LAN, LINKS, WAN, modelled_time


def test_modelled_time_is_rounds_times_rtt_plus_bytes_over_bandwidth():
    assert modelled_time(1.25e9, 10) == pytest.approx(1.0 + 10 * 2e-4)
    assert modelled_time(0, 3, **WAN) == pytest.approx(0.12)
    assert set(LINKS) == {"LAN", "WAN"} and LINKS["LAN"] is LAN
    with pytest.raises(ValueError, match="bandwidth"):
        modelled_time(1, 1, bandwidth=0.0)
