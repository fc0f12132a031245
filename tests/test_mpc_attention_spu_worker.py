"""The SPU worker's round count (privtrans.mpc_attention.spu_worker.kernel_rounds): each MPC kernel's
calls weighed by SPU's own latency table, whatever the order in which the parties' lines arrive."""

import pytest


def _profile(acts: dict, parties: int = 3) -> list[str]:
    """A profiler log's lines as the worker's simulator prints them when the parties do not overlap:
    each party's HLO section and link totals, and the first party's HAL and MPC sections."""
    def line(k, calls, a):
        return (f"[info] - {k}, executed {calls} times, duration 0.1s, send bytes 8 recv bytes 8, "
                f"send actions {a}, recv actions {a}")
    out = []
    for rank in range(parties):
        out += ["[info] HLO profiling: total time 0.1",
                "[info] - pphlo.multiply, executed 1 times, duration 0.1s, send bytes 8 recv bytes 8, "
                "send actions 9, recv actions 9"]
        if rank == 0:
            out += ["[info] HAL profiling: total time 0.1", line("f_mul", 5, 9), line("f_exp", 4, 9),
                    "[info] MPC profiling: total time 0.1"] + [line(k, c, a) for k, (c, a) in acts.items()]
        out.append("[info] Link details: total send bytes 80, recv bytes 80, send actions 40, recv actions 1")
    return out


def test_spu_rounds_weigh_each_kernel_call_by_spus_own_table():
    from privtrans.mpc_attention import spu_worker

    # ABY3 with K = 64: mul_aa 1, trunc_a 3, a2b log K + 1 + 1 = 8, add_aa free; b2a is "TODO" in SPU's
    # table and measured, not pinned: like "novel_k" (in neither), it counts the profiled party's
    # send actions in this run, and is named
    acts = {"mul_aa": (17, 17), "trunc_a": (16, 20), "a2b": (1, 8), "add_aa": (9, 0), "b2a": (2, 12), "novel_k": (1, 5)}
    rounds, unknown = spu_worker.kernel_rounds("\n".join(_profile(acts)), "ABY3")
    assert rounds == 17 * 1 + 16 * 3 + 1 * 8 + 0 + 12 + 5 and unknown == {"b2a": 12, "novel_k": 5}
    assert "b2a" not in spu_worker.KERNEL_ROUNDS_OURS["ABY3"]
    # with b2a's rounds measured (the worker's probe), each call weighs that
    rounds, unknown = spu_worker.kernel_rounds("\n".join(_profile(acts)), "ABY3", {"b2a": 6})
    assert rounds == 17 + 48 + 8 + 2 * 6 + 5 and unknown == {"novel_k": 5}
    # SEMI2K (N = 2): trunc_a 1, a2b (log K + 1) log N = 7, b2a 1: all in SPU's table
    rounds, unknown = spu_worker.kernel_rounds("\n".join(_profile(acts, 2)), "SEMI2K")
    assert rounds == 17 + 16 + 7 + 2 + 5 and unknown == {"novel_k": 5}
    # the HLO and HAL sections' lines never count as kernels; no section, or two, is refused
    assert "f_mul" not in str(spu_worker.kernel_rounds("\n".join(_profile(acts)), "ABY3"))
    for lines in ([ln for ln in _profile(acts) if "MPC profiling" not in ln], _profile(acts) * 2):
        with pytest.raises(RuntimeError, match="expected one 'MPC profiling' section"):
            spu_worker.kernel_rounds("\n".join(lines), "ABY3")


def test_spu_rounds_are_the_same_however_the_parties_lines_interleave():
    """The parties are threads that print at once: in any interleaving that keeps each party's own
    order, the count is the clean one (before, with every party printing its kernel sections, a
    party's MPC section could catch another's HAL lines: 147 and 170.7 for one program)."""
    import random

    from privtrans.mpc_attention import spu_worker

    acts = {"mul_aa": (17, 17), "trunc_a": (16, 20), "msb_a2b": (5, 40), "negate_a": (15, 0)}
    clean = spu_worker.kernel_rounds("\n".join(_profile(acts)), "ABY3")
    assert clean == (17 + 16 * 3 + 5 * 8, {})
    lines = _profile(acts)
    cuts = [i + 1 for i, ln in enumerate(lines) if "Link details" in ln]
    per_party = [lines[a:b] for a, b in zip([0] + cuts, cuts)]
    rng = random.Random(0)
    for _ in range(200):
        queues, merged = [list(p) for p in per_party], []
        while any(queues):
            merged.append(rng.choice([q for q in queues if q]).pop(0))
        assert spu_worker.kernel_rounds("\n".join(merged), "ABY3") == clean


