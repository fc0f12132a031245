"""Communication time on a network the reader chooses: bytes / bandwidth + rounds × RTT.

CrypTen has no network simulator and loopback wall time on a shared machine follows its round
count and CPU load, not a network; rounds and bytes are exact, so the time a protocol would take on
a link is modelled from them (the latency model of the MPC literature, e.g. ABY3's LAN/WAN tables).
"""

from __future__ import annotations

#: a 10 GbE LAN like MERGE's and ABY3's benchmarks: 1.25 GB/s, 0.2 ms round trip
LAN = dict(bandwidth=1.25e9, rtt=2e-4)
#: a WAN: 100 Mbit/s, 40 ms round trip (the order of ABY3's and CrypTen's WAN settings)
WAN = dict(bandwidth=12.5e6, rtt=4e-2)
LINKS = {"LAN": LAN, "WAN": WAN}


def modelled_time(nbytes, rounds, bandwidth: float = LAN["bandwidth"], rtt: float = LAN["rtt"]):
    """Seconds of communication on the link: bytes / bandwidth + rounds × RTT (scalars or arrays)."""
    if bandwidth <= 0 or rtt < 0:
        raise ValueError(f"bandwidth must be > 0 and rtt >= 0, got {bandwidth}, {rtt}")
    return nbytes / bandwidth + rounds * rtt
