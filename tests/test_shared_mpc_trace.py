"""shared.mpc.trace: rounds as the longest chain of dependent messages, bytes per link per direction."""

from __future__ import annotations

import pytest

from privtrans.shared.mpc import trace


def exchange(me, peers, n):
    """A reveal as every party's trace holds it: send to every peer, then receive from every peer."""
    return [("send", q, n) for q in peers] + [("recv", q, n) for q in peers]


def test_a_2pc_reveal_is_one_round_and_n_elements_each_way():
    t = [exchange(0, [1], 5), exchange(1, [0], 5)]
    c = trace.counts(t)
    assert c["rounds"] == 1 and c["bytes"] == 5 * 8 and c["bytes_total"] == 2 * 5 * 8
    # two reveals in a row: the second is sent after the first is received, a chain of two
    c = trace.counts([exchange(0, [1], 5) * 2, exchange(1, [0], 5) * 2])
    assert c["rounds"] == 2 and c["bytes"] == 2 * 5 * 8


def replicate(rank, n, w=3):
    """``replicate_shares``: isend to the next party, irecv from the previous, then both complete."""
    return [("send", (rank + 1) % w, n), ("irecv", (rank - 1) % w, n), ("sync",)]


def test_a_replicated_multiplication_is_one_round_not_two():
    t = [replicate(r, 4) for r in range(3)]
    c = trace.counts(t)
    assert c["rounds"] == 1 and c["bytes"] == c["bytes_busiest_link"] == 4 * 8 and c["bytes_total"] == 3 * 4 * 8
    assert set(c["links"]) == {(0, 1), (1, 2), (2, 0)}
    # two multiplications in a row: two rounds (CrypTen's own counter logs four calls at each party)
    assert trace.counts([replicate(r, 4) * 2 for r in range(3)])["rounds"] == 2


def test_two_irecvs_posted_together_do_not_chain():
    """replicate_shares posts isend, irecv for each share before waiting: the second share's send
    does not wait for the first share's receive."""
    t = [[("send", (r + 1) % 3, 2), ("irecv", (r - 1) % 3, 2), ("send", (r + 1) % 3, 2),
          ("irecv", (r - 1) % 3, 2), ("sync",)] for r in range(3)]
    assert trace.counts(t)["rounds"] == 1


def test_3pc_truncation_after_a_multiplication_is_a_second_round_on_one_link():
    """ABY3-style truncation (CrypTen's replicated.truncate): party 2 sends its share to party 1."""
    t = [replicate(0, 4), replicate(1, 4) + [("recv", 2, 4)], replicate(2, 4) + [("send", 1, 4)]]
    c = trace.counts(t)
    assert c["rounds"] == 2 and c["links"][(2, 1)] == 4 * 8 and c["bytes_busiest_link"] == 4 * 8
    assert c["bytes"] == 4 * 4 * 8 / 3  # four links' messages, averaged over the three parties


def test_a_receive_nobody_sends_is_refused():
    with pytest.raises(trace.TraceMismatch, match="waits"):
        trace.counts([[("recv", 1, 3)], []])
    with pytest.raises(trace.TraceMismatch, match="never received"):
        trace.counts([[("send", 1, 3)], []])


@pytest.mark.parametrize("depth", [1, 2])
def test_crypten_2pc_multiplications_against_the_closed_form(depth):
    """2PC Beaver: each multiplication reveals x - a and y - b (2 n elements each way) in one round;
    truncation is local. CrypTen's own counter logs both directions: 2 x (2 n) x 8 B per party."""
    from privtrans.shared.mpc import parties, runner

    n = 6
    res = runner.run(parties.mul_chain_trace, n, depth, "beaver", world_size=2, timeout=120)
    assert max(r["max_abs_error"] for r in res) < 1e-2
    c = trace.counts([r["events"] for r in res])
    assert c["rounds"] == depth and c["bytes"] == depth * 2 * n * 8 and c["bytes_total"] == 2 * c["bytes"]
    assert res[0]["crypten"] == {"rounds": depth, "bytes": depth * 2 * 2 * n * 8}


@pytest.mark.parametrize("depth", [1, 2])
def test_crypten_3pc_replicated_multiplications_against_the_closed_form(depth):
    """3PC replicated: a multiplication replicates both operands' shares (2 n elements to the next
    party, one round), and its truncation sends n elements from party 2 to party 1 (a second round):
    2 rounds a multiplication, where CrypTen's counter logs 5 calls at party 1 (an isend and an irecv
    per operand, a recv)."""
    from privtrans.shared.mpc import parties, runner

    n = 6
    res = runner.run(parties.mul_chain_trace, n, depth, "replicated", world_size=3, timeout=180)
    assert max(r["max_abs_error"] for r in res) < 1e-2
    c = trace.counts([r["events"] for r in res])
    assert c["rounds"] == 2 * depth
    ring = depth * 2 * n * 8
    assert c["links"] == {(0, 1): ring, (1, 2): ring, (2, 0): ring, (2, 1): depth * n * 8}
    assert c["bytes_busiest_link"] == ring and c["bytes_total"] == 3 * ring + depth * n * 8
    assert c["bytes"] == c["bytes_total"] / 3
    assert max(r["crypten"]["rounds"] for r in res) == 5 * depth
