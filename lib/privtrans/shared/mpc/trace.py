"""Rounds and bytes of a protocol, defined once: from every party's trace of its messages.

CrypTen's own counters are per party: ``rounds`` counts communication *calls* and ``bytes`` both
directions of them (``crypten.communicator.communicator._logging``). Neither is what a network
charges. In 3-party replicated sharing a multiplication's ``replicate_shares`` logs an ``isend``
and an ``irecv``, two "rounds" at every party, for what is one round on the wire (every party sends
to the next at once); a 2-party reveal logs ``2 n`` elements at each party for ``n`` each way.

Here every party records what it sends and receives (:func:`recording`, a wrapper around
CrypTen's communicator in the party process), and :func:`counts` reads the parties' traces as a
graph of messages:

* **rounds**: the longest chain of dependent messages. A message depends on every message its
  sender had received before sending it (program order: the conservative reading, since data
  dependence is not visible in a trace). A replicated multiplication is one round, a 2-party
  Beaver reveal is one round, two reveals one after the other are two;
* **bytes**: per link per direction, 8 B a ring element: the bytes a party sends, averaged over the
  parties (``bytes``: a link's load one way where each party sends on one link, as in the ring of
  replicated sharing and the pair of 2PC; the term a link model charges against its bandwidth, and
  the same definition SPU's counts use, whose parties trade roles from run to run while their sum
  stays fixed), the busiest directed link (``bytes_busiest_link``) and all links together
  (``bytes_total``).

A collective is traced as the exchange it stands for: ``all_reduce`` (a reveal) as every party
sending its share to every other and receiving theirs (one round; the algorithm-independent count
for two parties, and the direct exchange for three), ``broadcast`` as the source sending to every
other party, ``reduce``/``gather`` as every other party sending to the destination. ``irecv`` data
counts as received when the exchange that posted it completes (``replicate_shares`` returns).
"""

from __future__ import annotations

from collections import defaultdict, deque
from contextlib import contextmanager

ELEM_BYTES = 8  # one 64-bit ring element


def _numel(x) -> int:
    if isinstance(x, (list, tuple)):
        return sum(_numel(t) for t in x)
    return int(x.nelement())


@contextmanager
def recording(events: list):
    """Append this party's messages to ``events`` while the block runs: ("send", peer, elements),
    ("recv", peer, elements), ("irecv", peer, elements) and ("sync",) when a non-blocking exchange
    completes. Wraps CrypTen's communicator methods (and ``replicate_shares``) and restores them."""
    from crypten.communicator import distributed_communicator
    from crypten.mpc.primitives import replicated

    cls = distributed_communicator.DistributedCommunicator
    saved = {name: getattr(cls, name) for name in ("send", "recv", "isend", "irecv", "all_reduce", "broadcast",
                                                    "reduce", "gather", "all_gather", "barrier", "scatter",
                                                    "send_obj", "recv_obj", "broadcast_obj")}
    saved_rep = replicated.replicate_shares

    def me(self):
        return self.get_rank(), self.get_world_size()

    def wrap(name, record):
        orig = saved[name]

        def method(self, *args, **kwargs):
            record(self, *args, **kwargs)
            return orig(self, *args, **kwargs)

        method.__name__ = orig.__name__
        return method

    def p2p(kind):
        def rec(self, tensor, *a, **k):
            peer = a[0] if a else k.get("dst", k.get("src"))
            if peer is None:
                raise ValueError(f"a {kind} without a peer cannot be traced")
            events.append((kind, peer, _numel(tensor)))
        return rec

    def exchange(self, tensor, *a, **k):
        r, w = me(self)
        n = _numel(tensor)
        events.extend(("send", q, n) for q in range(w) if q != r)
        events.extend(("recv", q, n) for q in range(w) if q != r)

    def one_to_all(self, tensor, src, *a, **k):
        r, w = me(self)
        n = _numel(tensor)
        events.extend([("send", q, n) for q in range(w) if q != r] if r == src else [("recv", src, n)])

    def all_to_one(self, tensor, dst, *a, **k):
        r, w = me(self)
        n = _numel(tensor)
        events.extend([("recv", q, n) for q in range(w) if q != r] if r == dst else [("send", dst, n)])

    def untraced(name):
        def rec(self, *a, **k):
            raise NotImplementedError(f"CrypTen's {name} is not traced: its messages would be missed")
        return rec

    def barrier(self, *a, **k):
        r, w = me(self)
        events.extend([("send", q, 0) for q in range(w) if q != r] + [("recv", q, 0) for q in range(w) if q != r])

    recorders = {"send": p2p("send"), "recv": p2p("recv"), "isend": p2p("send"), "irecv": p2p("irecv"),
                 "all_reduce": exchange, "all_gather": exchange, "broadcast": one_to_all,
                 "reduce": all_to_one, "gather": all_to_one, "barrier": barrier,
                 **{n: untraced(n) for n in ("scatter", "send_obj", "recv_obj", "broadcast_obj")}}

    def replicate_shares(share_list):
        out = saved_rep(share_list)
        events.append(("sync",))
        return out

    for name, rec in recorders.items():
        setattr(cls, name, wrap(name, rec))
    replicated.replicate_shares = replicate_shares
    try:
        yield events
    finally:
        for name, orig in saved.items():
            setattr(cls, name, orig)
        replicated.replicate_shares = saved_rep


class TraceMismatch(RuntimeError):
    """The parties' traces do not pair up (a receive with no matching send)."""


def counts(traces: list[list[tuple]]) -> dict:
    """{"rounds", "bytes", "bytes_busiest_link", "bytes_total", "messages", "links": {(src, dst):
    bytes}} of one protocol run from every party's trace (``traces[rank]``, as :func:`recording`
    writes it)."""
    queue: dict[tuple[int, int], deque] = defaultdict(deque)  # (src, dst) -> depths of messages in flight
    pos = [0] * len(traces)
    known = [0] * len(traces)  # the deepest message each party has received
    pending: list[list[int]] = [[] for _ in traces]  # irecv'd depths, known at the next sync
    links: dict[tuple[int, int], int] = defaultdict(int)
    rounds = messages = 0
    progress = True
    while progress:
        progress = False
        for p, trace in enumerate(traces):
            while pos[p] < len(trace):
                ev = trace[pos[p]]
                kind = ev[0]
                if kind == "send":
                    depth = known[p] + 1
                    queue[(p, ev[1])].append(depth)
                    links[(p, ev[1])] += ev[2] * ELEM_BYTES
                    rounds, messages = max(rounds, depth), messages + 1
                elif kind in ("recv", "irecv"):
                    q = queue[(ev[1], p)]
                    if not q:
                        break  # the message is not sent yet: let the other parties run
                    depth = q.popleft()
                    if kind == "recv":
                        known[p] = max(known[p], depth)
                    else:
                        pending[p].append(depth)
                elif kind == "sync":
                    known[p] = max([known[p], *pending[p]])
                    pending[p] = []
                else:
                    raise ValueError(f"unknown trace event {ev!r}")
                pos[p] += 1
                progress = True
    stuck = [p for p, t in enumerate(traces) if pos[p] < len(t)]
    if stuck:
        raise TraceMismatch(f"party {stuck[0]} waits at event {pos[stuck[0]]} "
                            f"{traces[stuck[0]][pos[stuck[0]]]!r} for a message no party sends")
    left = {k: len(v) for k, v in queue.items() if v}
    if left:
        raise TraceMismatch(f"messages sent and never received: {left}")
    total = sum(links.values())
    return {"rounds": rounds, "bytes": total / len(traces) if traces else 0,
            "bytes_busiest_link": max(links.values(), default=0), "bytes_total": total,
            "messages": messages, "links": dict(links)}
