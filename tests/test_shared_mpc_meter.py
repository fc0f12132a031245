"""shared.mpc.meter: exclusive per-group accounting of wall time, rounds and bytes.

A fake communicator and clock advance by known amounts inside nested groups, so every group's
totals can be written down by hand; one real 2-party run checks that the meter reads CrypTen's own
counters (a Beaver matmul: one round, 16 (nk + km) bytes per party)."""

import types

import pytest

from privtrans.shared.mpc import compat, closed_form_cost, meter, parties, runner


class FakeWorld:
    """A communicator whose counters (and a clock) move only when the test says so."""

    def __init__(self):
        self.t = self.rounds = self.bytes = self.comm_time = 0.0

    def get_communication_stats(self):
        return {"rounds": self.rounds, "bytes": self.bytes, "time": self.comm_time}

    def perf_counter(self):
        return self.t

    def spend(self, k):
        """Charge k seconds, k rounds, 10 k bytes and k / 100 s of communication time."""
        self.t += k
        self.rounds += k
        self.bytes += 10 * k
        self.comm_time += k / 100


@pytest.fixture
def world(monkeypatch):
    cfg = compat.module().cfg.communicator
    old = cfg.verbose
    cfg.verbose = True
    w = FakeWorld()
    monkeypatch.setattr(compat, "comm", lambda: w)
    monkeypatch.setattr(meter, "time", types.SimpleNamespace(perf_counter=w.perf_counter))
    yield w
    cfg.verbose = old


def _expect(k, calls):
    return dict(seconds=float(k), rounds=float(k), bytes=10 * k, comm_seconds=pytest.approx(k / 100), calls=calls)


def test_nested_groups_are_exclusive_and_add_up_to_the_total(world):
    m = meter.Meter()
    with m.total():
        world.spend(1)                      # outside any group -> Other
        with m("Gen"):
            world.spend(2)
            with m("Linear"):               # inner group pauses Gen
                world.spend(4)
                with m("Softmax"):
                    world.spend(8)
                world.spend(16)
            world.spend(32)
        with m("Linear"):
            world.spend(64)
        world.spend(128)                    # -> Other again
    s = m.summary()
    assert s["Other"] == _expect(1 + 128, 0)
    assert s["Gen"] == _expect(2 + 32, 1)
    assert s["Linear"] == _expect(4 + 16 + 64, 2)
    assert s["Softmax"] == _expect(8, 1)
    assert s["Total"] == _expect(255, 4)    # everything the world spent, each unit once
    assert world.spend(1000) is None and m.summary() == s  # nothing is charged after total() ends


def test_same_group_nested_and_custom_default(world):
    m = meter.Meter(default="Rest")
    with m.total():
        with m("Act"):
            world.spend(3)
            with m("Act"):
                world.spend(5)
        world.spend(7)
    s = m.summary()
    assert s["Act"] == _expect(8, 2) and s["Rest"] == _expect(7, 0)
    assert set(s) == {"Act", "Rest", "Total"}


def test_groups_without_total_start_counting_at_the_first_group(world):
    """A group opened with no ``total()`` charges only what happens inside it."""
    m = meter.Meter()
    world.spend(100)                        # before the meter saw anything: charged to no one
    with m("Embed"):
        world.spend(6)
    s = m.summary()
    assert s["Embed"] == _expect(6, 1) and "Other" not in s
    assert s["Total"] == _expect(6, 1)
    world.spend(50)                         # between runs: not charged when total() starts afresh
    with m.total():
        world.spend(1)
    assert m.summary()["Other"] == _expect(1, 0) and m.summary()["Embed"] == _expect(6, 1)


def test_disabled_groups_fold_into_the_default(world):
    """``enabled = False`` turns the per-group split off: no group is opened or counted, and what
    happens inside one stays with the run's total (``total()`` still meters)."""
    m = meter.Meter()
    m.enabled = False
    with m.total():
        world.spend(1)
        with m("Linear") as inner:
            world.spend(9)
    assert inner is m
    assert m.summary() == {"Other": _expect(10, 0), "Total": _expect(10, 0)}


def test_meter_refuses_to_run_without_byte_counting():
    cfg = compat.module().cfg.communicator
    old = cfg.verbose
    cfg.verbose = False
    try:
        with pytest.raises(RuntimeError, match="verbose = True"):
            meter.Meter()
    finally:
        cfg.verbose = old


def test_null_meter_and_groups():
    n = meter.NullMeter()
    with n.total():
        with n("Linear") as inner:
            pass
    assert inner is n and n.summary() == {}
    assert meter.GROUPS == ("Embed", "Linear", "Softmax", "Norm", "Act", "Gen", "Other")


def test_two_parties_meter_counts_crypten_bytes_and_rounds():
    """Both parties meter one Beaver matmul (client 2 x 3 @ server 3 x 4): 1 round, 16 (6 + 12) B."""
    res = runner.run(parties.matmul_cost, 2, 3, 4, timeout=120)
    for r in res:
        assert (r["bytes"], r["rounds"], r["calls"]) == (closed_form_cost.matmul_bytes(2, 3, 4), 1, 1) == (288, 1, 1)
        assert r["seconds"] >= r["comm_seconds"] > 0
