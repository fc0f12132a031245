"""Hand-made inputs for the tests of privtrans.mpc_attention.readouts (no training), shared by its
test files."""

from __future__ import annotations

import numpy as np
import pytest

from privtrans.book import claims
from privtrans.book.session import _jsonable


CLAIMS = {c["id"]: c for c in claims.load("mpc_attention")["claims"]}


def verdict(claim_id, values, profile="ci"):
    """The claim's verdict (held / contradicted / inconclusive / not judged) on the readout's output."""
    c = CLAIMS[claim_id]
    (row,) = claims.evaluate("mpc_attention", {"claims": [c]},
                             {c["notebook"]: {"profile": profile, "values": _jsonable(values)}}, profile)
    assert (row["held"] is True) == (row["verdict"] == "held")
    return row["verdict"]


@pytest.fixture
def paper_on_lan(monkeypatch):
    """``made(t1=..., t2=...)``: the paper's Table 1 seconds and Table 2 speed-ups replaced by what the
    stated LAN gives these counts ({attention: (bytes, rounds)}, {"att+act": (bytes, rounds)}), so the
    calibrated link is that LAN and the time claims are judged on it."""
    from privtrans.mpc_attention import calibration
    from privtrans.shared.mpc.network import STATED_LAN as lan

    def made(t1=None, t2=None):
        def P(file, col="value", **k):
            if k["table"] == "Table 1":
                return float(lan.seconds(*t1[k["attention"]]))
            return float(lan.seconds(*t2["softmax+gelu"]) / lan.seconds(*t2[f"{k['attention']}+{k['activation']}"]))
        monkeypatch.setattr(calibration, "_P", lambda root=None: P)
    return made


def _cost(rounds, nbytes, norm=10):
    return {"Total": dict(rounds=rounds, bytes=nbytes, seconds=rounds / 100),
            "Softmax": dict(rounds=rounds - norm - 1, bytes=0), "Norm": dict(rounds=norm, bytes=0),
            "Act": dict(rounds=1, bytes=0), "Linear": dict(rounds=0, bytes=nbytes)}  # the groups add up to Total


def _students(after, before=(0.50, 0.52, 0.51)):
    return {k: [{"before": b, "after_stage2": a} for a, b in zip(v, before)] for k, v in after.items()}


COSTS = {"softmax+gelu": _cost(400, 1e7), "2quad+quad": _cost(200, 5e6), "scaling+quad": _cost(120, 4e6),
         "2quad_freediv+quad": _cost(125, 4e6, norm=100)}


TEACHERS = [0.71, 0.72, 0.70]


def _runs(pairs, seconds=10, work=100):
    return [dict(before=b, after_stage2=a, seconds=seconds, examples_x_epochs=work) for b, a in pairs]


QUAD = ("softmax+quad", "softmax_freediv+quad", "2quad+quad", "2quad_freediv+quad")


def _table4(pairs_by_student, seconds=10, work=100):
    """Table 4's students on one task: the four Quad students (and Softmax freeDiv + GeLU)."""
    out = {k: _runs(p, seconds, work) for k, p in pairs_by_student.items()}
    out["softmax_freediv+gelu"] = _runs([(0.7, 0.71)] * len(next(iter(pairs_by_student.values()))), seconds, work)
    return out


# --- null tests: A = B plus noise (no effect) over 5 seeds must never be "held" ---------------------

#: what a null may come out as: judged, and not held ("not judged" would pass without testing anything)
NOT_HELD = ("inconclusive", "contradicted")


SEEDS5 = [0, 1, 2, 3, 4]


def _noise(i, sd=0.02):
    return np.random.default_rng(100 + i).normal(0.0, sd, len(SEEDS5))
