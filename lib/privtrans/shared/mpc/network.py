"""Communication time on a link: bytes / bandwidth + rounds × per-round latency.

CrypTen has no network simulator and loopback wall time on a shared machine follows its round
count and CPU load, not a network; rounds and bytes are exact, so the time a protocol would take on
a link is modelled from them (the latency model of the MPC literature, e.g. ABY3's LAN/WAN tables).

A link that judges a paper's time claim must first reproduce that paper's own baseline:
:func:`calibrate` fits the two parameters (bandwidth, per-round latency) to a paper's measured
communication times with ``scipy.optimize.least_squares``, and validates the fitted link on cells it
was not fitted to. Only a link whose held-out error is within :data:`TOLERANCE` may judge a time
claim (:attr:`Calibration.calibrated`); a stated link (:data:`LAN`) is kept as a second, labelled
reading.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: a 10 GbE LAN like MERGE's and ABY3's benchmarks: 1.25 GB/s, 0.2 ms round trip (stated, not fitted)
LAN = dict(bandwidth=1.25e9, rtt=2e-4)
#: a WAN: 100 Mbit/s, 40 ms round trip (the order of ABY3's and CrypTen's WAN settings)
WAN = dict(bandwidth=12.5e6, rtt=4e-2)
LINKS = {"LAN": LAN, "WAN": WAN}
#: the largest relative error on a held-out cell for which a fitted link counts as calibrated
TOLERANCE = 0.10


def modelled_time(nbytes, rounds, bandwidth: float = LAN["bandwidth"], rtt: float = LAN["rtt"]):
    """Seconds of communication on the link: bytes / bandwidth + rounds × RTT (scalars or arrays)."""
    if bandwidth <= 0 or rtt < 0:
        raise ValueError(f"bandwidth must be > 0 and rtt >= 0, got {bandwidth}, {rtt}")
    return nbytes / bandwidth + rounds * rtt


@dataclass(frozen=True)
class Cell:
    """One measured communication time and the counts it goes with."""
    name: str
    nbytes: float
    rounds: float
    seconds: float


@dataclass(frozen=True)
class Link:
    """A link: ``bandwidth`` in bytes/s (of the bytes as counted, e.g. CrypTen's both directions),
    ``rtt`` in seconds per round, and what it is (``label``)."""
    bandwidth: float
    rtt: float
    label: str = ""

    def seconds(self, nbytes, rounds):
        return modelled_time(nbytes, rounds, self.bandwidth, self.rtt)

    @property
    def params(self) -> dict:
        return {"bandwidth": self.bandwidth, "rtt": self.rtt}


#: the stated LAN as a Link (the second, labelled reading beside a calibrated one)
STATED_LAN = Link(LAN["bandwidth"], LAN["rtt"], "stated 10 Gbit/s LAN (1.25 GB/s, 0.2 ms a round), not fitted")


@dataclass
class Calibration:
    """A link fitted to measured cells, with its residuals and its error on held-out cells."""
    link: Link
    fitted: list[Cell]
    held_out: list[Cell]
    tolerance: float = TOLERANCE
    cost: float = 0.0  # least_squares' 0.5 · Σ residual²
    notes: list[str] = field(default_factory=list)

    def predicted(self, cell: Cell) -> float:
        return float(self.link.seconds(cell.nbytes, cell.rounds))

    def residuals(self) -> dict[str, float]:
        """{fitted cell: predicted − measured seconds}."""
        return {c.name: self.predicted(c) - c.seconds for c in self.fitted}

    def held_out_errors(self) -> dict[str, float]:
        """{held-out cell: (predicted − measured) / measured}."""
        return {c.name: (self.predicted(c) - c.seconds) / c.seconds for c in self.held_out}

    @property
    def max_held_out_error(self) -> float | None:
        errs = self.held_out_errors()
        return max(abs(e) for e in errs.values()) if errs else None

    @property
    def calibrated(self) -> bool:
        """Held-out cells exist and each is predicted within the tolerance."""
        e = self.max_held_out_error
        return e is not None and e <= self.tolerance

    def verdict(self) -> str:
        """Why the link may or may not judge a time claim, from the numbers."""
        e = self.max_held_out_error
        if e is None:
            return "not calibrated: no held-out cell to validate the fitted link on"
        worst = max(self.held_out_errors().items(), key=lambda kv: abs(kv[1]))
        if e <= self.tolerance:
            return (f"calibrated: every held-out cell predicted within {self.tolerance:.0%} "
                    f"(largest error {worst[1]:+.1%}, {worst[0]})")
        return (f"not calibrated: held-out cell {worst[0]} predicted {worst[1]:+.1%} off, beyond the "
                f"{self.tolerance:.0%} tolerance")

    def rows(self) -> list[dict]:
        """One row per cell (fitted, then held out): counts, measured and predicted seconds, error."""
        out = []
        for role, cells in (("fitted", self.fitted), ("held out", self.held_out)):
            for c in cells:
                p = self.predicted(c)
                out.append({"cell": c.name, "role": role, "GiB": c.nbytes / 2 ** 30, "rounds": c.rounds,
                            "measured s": c.seconds, "predicted s": p, "residual s": p - c.seconds,
                            "relative error": (p - c.seconds) / c.seconds})
        return out

    def summary(self) -> dict:
        """What a notebook records: the parameters, residuals, held-out errors and the status."""
        return {"bandwidth_GBps": self.link.bandwidth / 1e9, "rtt_ms": self.link.rtt * 1e3,
                "residuals_s": self.residuals(), "held_out_errors": self.held_out_errors(),
                "max_held_out_error": self.max_held_out_error, "tolerance": self.tolerance,
                "calibrated": self.calibrated, "status": self.verdict()}


def calibrate(fit: list[Cell], held_out: list[Cell], tolerance: float = TOLERANCE,
              label: str = "fitted link") -> Calibration:
    """Fit (bandwidth, per-round latency) to ``fit`` by least squares on the seconds, with both
    parameters non-negative (``scipy.optimize.least_squares``, trust-region reflective), and
    validate the fitted link on ``held_out``.

    The model is linear in (seconds per byte, seconds per round); the fit runs on those scaled to
    seconds per GB and milliseconds per round so both are of order one. Two parameters need at
    least two fitted cells whose byte-to-round ratios differ."""
    from scipy.optimize import least_squares

    if len(fit) < 2:
        raise ValueError(f"a two-parameter link needs at least two fitted cells, got {len(fit)}")
    b = np.array([c.nbytes for c in fit], float) / 1e9
    r = np.array([c.rounds for c in fit], float) / 1e3
    s = np.array([c.seconds for c in fit], float)
    if np.linalg.matrix_rank(np.column_stack([b, r])) < 2:
        raise ValueError("the fitted cells' bytes and rounds are proportional: bandwidth and latency "
                         "cannot be told apart")
    res = least_squares(lambda p: p[0] * b + p[1] * r - s, x0=np.array([1.0, 1.0]), bounds=(0.0, np.inf),
                        method="trf", x_scale="jac", ftol=1e-14, xtol=1e-14, gtol=1e-14)
    if not res.success:
        raise RuntimeError(f"the link fit did not converge: {res.message}")
    per_gb, per_kround = res.x
    if per_gb <= 0:
        raise ValueError("the fit gives no cost per byte (infinite bandwidth): the cells cannot calibrate a link")
    link = Link(bandwidth=float(1e9 / per_gb), rtt=float(per_kround / 1e3), label=label)
    return Calibration(link, list(fit), list(held_out), tolerance, float(res.cost))
